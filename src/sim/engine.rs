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
}

mod lora;
mod phases;
#[cfg(test)]
mod tests;
