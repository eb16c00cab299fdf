//! A scheduler step's phases: decode one token for every running request (preempting the
//! newest when the KV cache cannot grow), continue chunked prefills, and admit waiting
//! requests first come, first served while the budget and the KV cache allow.

use super::*;

impl Scheduler {
    /// One token for each decoding request; returns (requests, KV tokens read).
    pub(super) fn decode(&mut self, out: &mut StepOut, budget: &mut usize) -> (usize, u64) {
        let (mut seqs, mut kv_tokens) = (0, 0u64);
        let mut i = 0;
        while i < self.running.len() {
            let id = self.running[i];
            let Some(req) = self.reqs.get(&id) else {
                i += 1;
                continue;
            };
            if req.state != State::Decode {
                i += 1;
                continue;
            }
            // Room for the token and, speculating, the draft's (one block more at most).
            let ahead = req.accept.and(self.drafter.as_ref()).map_or(0, |d| d.k());
            let needed =
                (req.context() + 1 + ahead.min(self.kv.block() - 1)).div_ceil(self.kv.block());
            if needed > req.referenced + req.private && !self.kv.grow() {
                // No block for the next token: preempt the newest request and retry.
                let victim = self.running.last().copied().unwrap_or(id);
                self.preempt(victim);
                continue;
            }
            let Some(req) = self.reqs.get_mut(&id) else {
                continue;
            };
            if needed > req.referenced + req.private {
                req.private += 1;
            }
            kv_tokens += req.context() as u64;
            seqs += 1;
            // The tokens left, within the blocks the request holds now.
            let held = (req.referenced + req.private) * self.kv.block();
            let room = (req.target.saturating_sub(req.generated)).min(held - req.context());
            let (k, accepted) = match (&mut self.drafter, req.accept) {
                (Some(d), Some(p)) => d.step(p, room),
                _ => (0, 0),
            };
            if k > 0 {
                out.drafted.push((id, k, accepted));
            }
            req.generated += 1 + accepted;
            *budget = budget.saturating_sub(1 + k);
            out.emitted.extend(std::iter::repeat_n(id, 1 + accepted));
            if req.generated >= req.target {
                out.finished.push(id);
            }
            i += 1;
        }
        (seqs, kv_tokens)
    }

    fn preempt(&mut self, id: ReqId) {
        if let Some(req) = self.reqs.get_mut(&id) {
            self.kv.finish(&req.hashes[..req.referenced], req.private);
            req.referenced = 0;
            req.private = 0;
            req.state = State::Waiting;
            self.running.retain(|r| *r != id);
            self.waiting.push_front(id);
            self.preemptions += 1;
        }
    }

    /// Compute the next chunk of a prefilling request; returns its cost.
    pub(super) fn prefill_chunk(
        &mut self,
        id: ReqId,
        budget: &mut usize,
        out: &mut StepOut,
    ) -> f64 {
        let Some(req) = self.reqs.get_mut(&id) else {
            return 0.0;
        };
        let State::Prefill { done } = req.state else {
            return 0.0;
        };
        let chunk = (req.context() - done).min(*budget);
        if chunk == 0 {
            return 0.0;
        }
        *budget -= chunk;
        let cost = self.profile.prefill_s(done, done + chunk);
        let done = done + chunk;
        if done < req.context() {
            req.state = State::Prefill { done };
            return cost;
        }
        // The prompt is computed: its full blocks join the prefix cache; the step that ends a
        // prefill also samples the first token.
        let full = req.hashes.len();
        let from = req.referenced;
        req.referenced = full;
        req.private = req.private.saturating_sub(full - from);
        req.state = State::Decode;
        req.generated += 1;
        out.cached
            .push((id, (req.hit * self.kv.block()).min(req.prompt_len)));
        let finished = req.generated >= req.target;
        let hashes = req.hashes.clone();
        self.kv.publish(&hashes, from);
        out.emitted.push(id);
        if finished {
            out.finished.push(id);
        }
        cost
    }

    /// Admit waiting requests while budget, batch slots and KV blocks allow.
    pub(super) fn admit(&mut self, budget: &mut usize, out: &mut StepOut) -> f64 {
        let mut cost = 0.0;
        let block = self.kv.block();
        let mut skipped = Vec::new();
        while *budget > 0 && self.running.len() < self.profile.max_num_seqs {
            let Some(&id) = self.waiting.front() else {
                break;
            };
            let Some(req) = self.reqs.get(&id) else {
                self.waiting.pop_front();
                continue;
            };
            let busy = self.running_adapters();
            let lora = req.adapter.zip(self.lora.as_ref());
            if lora.is_some_and(|(a, slots)| !slots.fits(a, &busy)) {
                // Every slot's adapter is running: it waits, the queue goes on (`sim::lora`).
                skipped.extend(self.waiting.pop_front());
                continue;
            }
            let mut hit = self.kv.hit_blocks(&req.hashes);
            let whole = hit * block >= req.context();
            if whole {
                hit = (req.context() - 1) / block;
            }
            let blocks = (req.context() + 1).div_ceil(block) - hit;
            let hashes = req.hashes.clone();
            if !self.kv.admit(&hashes, hit, blocks) {
                break;
            }
            self.kv
                .record_query(req.prompt_len, (hit * block).min(req.prompt_len));
            self.waiting.pop_front();
            if let Some((a, slots)) = req.adapter.zip(self.lora.as_mut()) {
                cost += slots.take(a, &busy);
            }
            self.running.push(id);
            out.admitted.push(id);
            if let Some(req) = self.reqs.get_mut(&id) {
                req.referenced = hit;
                req.private = blocks;
                req.hit = hit;
                // The recomputed tail of a whole cached prompt: its last token only, when the
                // profile's cached costs already hold the rest (a twin's).
                let tail_free = whole && self.profile.cached_tail_free;
                let done = if tail_free {
                    req.context() - 1
                } else {
                    hit * block
                };
                req.state = State::Prefill { done };
            }
            if hit > 0 {
                cost += self.profile.cached_request_s
                    + self.profile.cached_token_s * (hit * block) as f64;
            }
            cost += self.prefill_chunk(id, budget, out);
        }
        for id in skipped.into_iter().rev() {
            self.waiting.push_front(id);
        }
        cost
    }
}
