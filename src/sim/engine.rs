//! The simulated engine's scheduler: continuous batching on a virtual clock, as vLLM's V1
//! scheduler does it. Each step decodes one token for every running request, spends the rest
//! of the token budget on (chunked) prefills, and admits waiting requests first come, first
//! served while the KV cache has room; a request that cannot grow is preempted and
//! recomputed later. The step's duration comes from the [`Profile`]. Nothing here sleeps or
//! does I/O: the server drives it in real time, the calibration in virtual time.

use super::kv::{Kv, block_hashes};
use super::profile::Profile;
use std::collections::{HashMap, VecDeque};

/// A request's id inside the engine.
pub type ReqId = u64;

/// A request as submitted.
#[derive(Debug, Clone)]
pub struct NewRequest {
    /// Prompt token ids.
    pub tokens: Vec<u32>,
    /// Tokens to generate before the request ends (max_tokens, or fewer when the model
    /// "stops" on its own).
    pub target: usize,
    /// The seed of the text the answer is streamed as, when the answer is resent as-is in a
    /// later prompt (completions): its blocks are then kept in the prefix cache, as vLLM
    /// keeps a finished request's generated blocks.
    pub output_seed: Option<u64>,
    /// The LoRA adapter it runs on, by its place in the served list (`sim::lora`).
    pub adapter: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Prefill { done: usize },
    Decode,
}

#[derive(Debug)]
struct Req {
    prompt_len: usize,
    hashes: Vec<u64>,
    target: usize,
    generated: usize,
    state: State,
    /// Leading prompt blocks referenced in the prefix cache.
    referenced: usize,
    /// Blocks owned privately.
    private: usize,
    /// Blocks found in the prefix cache at admission.
    hit: usize,
    /// The prompt's tokens past its last full block, and that block's hash: where the
    /// answer's blocks chain on.
    tail: (Vec<u32>, u64),
    output_seed: Option<u64>,
    adapter: Option<usize>,
    /// The acceptance probability of its draft tokens, when the engine speculates.
    accept: Option<f64>,
}

impl Req {
    /// Tokens to (re)compute on admission: the prompt and, after a preemption, the output.
    fn context(&self) -> usize {
        self.prompt_len + self.generated
    }
}

/// What one step did.
#[derive(Debug, Default)]
pub struct StepOut {
    /// Engine time of the step, seconds.
    pub duration: f64,
    /// Requests that got a token in this step: once per token (several with speculation).
    pub emitted: Vec<ReqId>,
    /// Requests that drafted in this step: tokens drafted and accepted.
    pub drafted: Vec<(ReqId, usize, usize)>,
    /// Requests that reached their target in this step.
    pub finished: Vec<ReqId>,
    /// Requests whose prompt was computed in this step (their first token), with the prompt
    /// tokens they found in the prefix cache.
    pub cached: Vec<(ReqId, usize)>,
    /// Requests scheduled from the waiting queue in this step (again after a preemption).
    pub admitted: Vec<ReqId>,
}

/// The simulated engine's scheduler (the `sim` stage's engine).
#[derive(Debug)]
pub struct Scheduler {
    profile: Profile,
    reqs: HashMap<ReqId, Req>,
    waiting: VecDeque<ReqId>,
    running: Vec<ReqId>,
    kv: Kv,
    next_id: ReqId,
    /// Virtual time, seconds.
    pub now: f64,
    /// Prompt and generated tokens so far (for `/metrics`).
    pub prompt_tokens: u64,
    /// Generated tokens so far.
    pub generation_tokens: u64,
    /// Preemptions so far.
    pub preemptions: u64,
    /// Run-to-run noise on step times, when asked for.
    pub noise: Option<super::noise::Noise>,
    /// LoRA adapter slots, when adapters are served.
    pub lora: Option<super::lora::Slots>,
    /// Speculative decoding, when asked for.
    pub drafter: Option<super::speculate::Drafter>,
}

impl Scheduler {
    /// An idle engine.
    pub fn new(profile: Profile) -> Scheduler {
        let kv = Kv::new(profile.kv_tokens, profile.block_size);
        Scheduler {
            profile,
            reqs: HashMap::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            kv,
            next_id: 1,
            now: 0.0,
            prompt_tokens: 0,
            generation_tokens: 0,
            preemptions: 0,
            noise: None,
            lora: None,
            drafter: None,
        }
    }

    /// Queue a request.
    pub fn add(&mut self, r: NewRequest) -> ReqId {
        let id = self.next_id;
        self.next_id += 1;
        let mut hashes = block_hashes(&r.tokens, self.kv.block());
        // An adapter's blocks are its own (vLLM keys block hashes with the LoRA).
        if let Some(a) = r.adapter {
            let salt = (a as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            hashes.iter_mut().for_each(|h| *h ^= salt);
        }
        if let (Some(a), Some(slots)) = (r.adapter, self.lora.as_mut())
            && let Some(n) = slots.requests.get_mut(a)
        {
            *n += 1;
        }
        let full = hashes.len() * self.kv.block();
        let tail = (
            r.tokens[full.min(r.tokens.len())..].to_vec(),
            hashes.last().copied().unwrap_or(super::kv::CHAIN_START),
        );
        let req = Req {
            prompt_len: r.tokens.len(),
            hashes,
            tail,
            output_seed: r.output_seed,
            adapter: r.adapter,
            accept: None,
            target: r.target.max(1),
            generated: 0,
            state: State::Waiting,
            referenced: 0,
            private: 0,
            hit: 0,
        };
        self.prompt_tokens += req.prompt_len as u64;
        self.reqs.insert(id, req);
        self.waiting.push_back(id);
        id
    }

    /// The blocks a finished request's answer adds after its prompt (to keep in the prefix
    /// cache): the full blocks of the prompt's tail and the generated tokens, as the streamed
    /// text tokenizes.
    fn answer_blocks(&self, id: ReqId) -> Vec<u64> {
        let Some(req) = self.reqs.get(&id) else {
            return Vec::new();
        };
        let Some(seed) = req.output_seed else {
            return Vec::new();
        };
        let mut tokens = req.tail.0.clone();
        tokens.extend(
            (0..req.generated)
                .map(|i| super::tokenizer::token_id(super::tokenizer::output_piece(seed, i))),
        );
        super::kv::chain(req.tail.1, &tokens, self.kv.block())
    }

    /// Draft tokens of request `id` are accepted with probability `p` (with a drafter).
    pub fn set_acceptance(&mut self, id: ReqId, p: f64) {
        if let Some(req) = self.reqs.get_mut(&id) {
            req.accept = Some(p);
        }
    }

    /// Drop a request wherever it is (a cancelled stream).
    pub fn cancel(&mut self, id: ReqId) {
        if let Some(req) = self.reqs.remove(&id) {
            self.kv.finish(&req.hashes[..req.referenced], req.private);
            self.waiting.retain(|w| *w != id);
            self.running.retain(|r| *r != id);
        }
    }

    /// Whether a step would do anything.
    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }

    /// Requests being computed.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Requests queued.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// KV-cache blocks (of [`Scheduler::block_size`] tokens).
    pub fn kv_blocks(&self) -> u64 {
        self.kv.blocks() as u64
    }

    /// Tokens per KV-cache block: the prefix cache finds prompts in whole blocks.
    pub fn block_size(&self) -> usize {
        self.kv.block()
    }

    /// KV-cache usage, 0 to 1.
    pub fn kv_usage(&self) -> f64 {
        self.kv.usage()
    }

    /// Prefix-cache queries and hits, in prompt tokens.
    pub fn prefix_cache(&self) -> (u64, u64) {
        (self.kv.queries, self.kv.hits)
    }

    /// Run one scheduler step and advance the clock by its duration.
    pub fn step(&mut self) -> StepOut {
        let mut out = StepOut::default();
        let mut budget = self.profile.max_batched_tokens;
        let mut cost = 0.0;
        let (seqs, kv_tokens) = self.decode(&mut out, &mut budget);
        if seqs > 0 {
            cost += self.profile.decode_s(seqs, kv_tokens);
        }
        let prefilling: Vec<ReqId> = self
            .running
            .iter()
            .copied()
            .filter(|id| {
                matches!(
                    self.reqs.get(id).map(|r| r.state),
                    Some(State::Prefill { .. })
                )
            })
            .collect();
        for id in prefilling {
            cost += self.prefill_chunk(id, &mut budget, &mut out);
        }
        cost += self.admit(&mut budget, &mut out);
        if cost > 0.0 || !out.emitted.is_empty() {
            cost += self.profile.step_s;
        }
        for id in &out.finished {
            let answer = self.answer_blocks(*id);
            self.cancel(*id);
            self.kv.keep(&answer);
        }
        self.generation_tokens += out.emitted.len() as u64;
        if let Some(n) = &mut self.noise {
            cost *= n.factor(self.now);
        }
        out.duration = cost;
        self.now += cost;
        out
    }

    /// One token for each decoding request; returns (requests, KV tokens read).
    fn decode(&mut self, out: &mut StepOut, budget: &mut usize) -> (usize, u64) {
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
    fn prefill_chunk(&mut self, id: ReqId, budget: &mut usize, out: &mut StepOut) -> f64 {
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
    fn admit(&mut self, budget: &mut usize, out: &mut StepOut) -> f64 {
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

mod lora;
#[cfg(test)]
mod tests;
