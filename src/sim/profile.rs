//! Performance profiles of the simulated engine: the cost of a scheduler step as a function
//! of what it computes, and the limits of the engine. `h200-gemma-4-e2b` is fitted to the
//! seed page (gemma-4-E2B-it, BF16, one H200 NVL, vLLM); `tiny` is fast, for tests.

use serde::Serialize;

/// The profile of `engine: {kind: sim}` without a `profile`: the seed page's engine.
pub const DEFAULT: &str = "h200-gemma-4-e2b";

/// What an engine costs and holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// The name used in specs and `benchspec sim --profile`.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// The model name served by default.
    pub served_name: &'static str,
    /// The version `/version` reports.
    pub version: &'static str,
    /// Longest prompt + output.
    pub max_model_len: u64,
    /// KV-cache capacity in tokens.
    pub kv_tokens: u64,
    /// Tokens per KV-cache block (vLLM `--block-size`): 16, GPU vLLM's default; its CPU
    /// build uses 128. Prefix-cache hits come in whole blocks.
    pub block_size: usize,
    /// Most requests scheduled at once (vLLM `--max-num-seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one step (vLLM `--max-num-batched-tokens`); prefills are chunked to it.
    pub max_batched_tokens: usize,
    /// Fixed cost of every step, seconds.
    pub step_s: f64,
    /// Decode cost per running request per step, seconds.
    pub per_seq_s: f64,
    /// Decode cost per KV token read per step (attention over context), seconds.
    pub per_kv_token_s: f64,
    /// Prefill cost per prompt token, seconds.
    pub prefill_token_s: f64,
    /// Prefill attention cost: a token at position p costs `p × this` more, seconds.
    pub prefill_quadratic_s: f64,
    /// Cost per prompt token found in the prefix cache, seconds.
    pub cached_token_s: f64,
    /// Fixed cost of admitting a request whose prompt is found in the prefix cache, seconds.
    pub cached_request_s: f64,
    /// API-server time before a request reaches the engine (tokenizing), fixed part, seconds.
    pub api_s: f64,
    /// API-server time per prompt token, seconds (requests in parallel).
    pub api_token_s: f64,
    /// API-server time per squared prompt token, seconds (requests in parallel): long prompts
    /// cost more per token (fitted to the seed's TTFT at one stream, 71 ms at 8K to 473 ms
    /// at 123K).
    pub api_quadratic_s: f64,
    /// API-server time per prompt token on its one tokenizer, seconds: requests that arrive
    /// together queue for it (vLLM's API server is one process).
    pub api_serial_token_s: f64,
    /// API-server time a request waits for the streams it already serves, seconds per
    /// ((n + 1)^¼ − 1) for n running requests: the one process that tokenizes also streams
    /// every running request's output. Fitted to the seed page's decode TTFT, which grows
    /// about so with concurrency (71 → 310 ms at 8K from 1 to 64 streams); not a derived law.
    pub api_stream_s: f64,
    /// A prefix-cached request's first token leaves the API server this much after the
    /// engine made it, seconds: a cached prompt's wait that is not the engine's, so not a
    /// stall of the batch (the twin's `cached_request_s`; 0 in the built-in profiles, whose
    /// cached admission is engine time).
    pub cached_stream_s: f64,
    /// Whether the API server's wait (`api_stream_s`) counts every other request it holds —
    /// those still in it as well as the engine's running ones, measured once the request's
    /// own API time is done — as a twin, fitted on the requests in flight, needs; the
    /// built-in profiles count the engine's running requests at arrival.
    pub api_load_all: bool,
    /// Whether a prompt found whole in the prefix cache recomputes its last block without
    /// engine prefill time: a twin's cached costs (`cached_request_s`, fitted to such prompts'
    /// TTFT) already hold it; the built-in profiles charge it as prefill, as vLLM computes it.
    pub cached_tail_free: bool,
}

impl Profile {
    /// The same engine `factor` times slower (every engine and API-server cost scaled).
    pub fn scaled(mut self, factor: f64) -> Profile {
        for cost in [
            &mut self.step_s,
            &mut self.per_seq_s,
            &mut self.per_kv_token_s,
            &mut self.prefill_token_s,
            &mut self.prefill_quadratic_s,
            &mut self.cached_token_s,
            &mut self.cached_request_s,
            &mut self.api_s,
            &mut self.api_token_s,
            &mut self.api_quadratic_s,
            &mut self.api_serial_token_s,
            &mut self.api_stream_s,
            &mut self.cached_stream_s,
        ] {
            *cost *= factor;
        }
        self
    }

    /// Engine time of a prefill chunk covering prompt positions `start..end`.
    pub fn prefill_s(&self, start: usize, end: usize) -> f64 {
        let (s, e) = (start as f64, end as f64);
        self.prefill_token_s * (e - s) + self.prefill_quadratic_s * (e * e - s * s) / 2.0
    }

    /// Engine time of decoding one token for each of `seqs` requests holding `kv` tokens.
    pub fn decode_s(&self, seqs: usize, kv: u64) -> f64 {
        self.per_seq_s * seqs as f64 + self.per_kv_token_s * kv as f64
    }

    /// API-server time for a prompt of `tokens`, apart from the queue for the tokenizer.
    pub fn api_delay_s(&self, tokens: usize) -> f64 {
        let n = tokens as f64;
        self.api_s + self.api_token_s * n + self.api_quadratic_s * n * n
    }

    /// API-server time a request waits for the `running` requests it already streams.
    pub fn api_load_s(&self, running: usize) -> f64 {
        self.api_stream_s * ((running as f64 + 1.0).powf(0.25) - 1.0)
    }

    /// Time on the API server's one tokenizer for a prompt of `tokens`.
    pub fn tokenizer_s(&self, tokens: usize) -> f64 {
        self.api_serial_token_s * tokens as f64
    }
}

/// The built-in profiles.
pub fn profiles() -> [Profile; 3] {
    [h200_gemma(), tiny(), instant()]
}

/// `h200-gemma-4-e2b`: gemma-4-E2B-it on one H200 NVL, fitted to the seed page.
fn h200_gemma() -> Profile {
    Profile {
        name: "h200-gemma-4-e2b",
        about: "gemma-4-E2B-it BF16 on one H200 NVL under vLLM, fitted to the seed page",
        served_name: "gemma",
        version: "0.27.2rc1.dev113+g5cecfc013",
        max_model_len: 131_072,
        kv_tokens: 24_000_000,
        block_size: super::kv::BLOCK_TOKENS,
        max_num_seqs: 256,
        max_batched_tokens: 8192,
        step_s: 3.75e-3,
        per_seq_s: 0.018e-3,
        per_kv_token_s: 3.3e-9,
        prefill_token_s: 8.35e-6,
        prefill_quadratic_s: 3.97e-10,
        cached_token_s: 0.08e-6,
        cached_request_s: 3.0e-3,
        api_s: 0.0274,
        api_token_s: 1.38e-6,
        api_quadratic_s: 1.22e-12,
        api_serial_token_s: 1.7e-6,
        api_stream_s: 0.12,
        cached_stream_s: 0.0,
        api_load_all: false,
        cached_tail_free: false,
    }
}

/// `tiny`: a small fast engine for tests.
fn tiny() -> Profile {
    Profile {
        name: "tiny",
        about: "a small fast engine for tests: 8K context, 64K KV tokens, ~1,500 tok/s per stream",
        served_name: "tiny",
        version: "0.0.0+sim.tiny",
        max_model_len: 8192,
        kv_tokens: 65_536,
        block_size: super::kv::BLOCK_TOKENS,
        max_num_seqs: 32,
        max_batched_tokens: 2048,
        step_s: 0.6e-3,
        per_seq_s: 0.02e-3,
        per_kv_token_s: 2e-9,
        prefill_token_s: 2e-6,
        prefill_quadratic_s: 1e-10,
        cached_token_s: 0.2e-6,
        cached_request_s: 0.0,
        api_s: 0.001,
        api_token_s: 0.05e-6,
        api_quadratic_s: 0.0,
        api_serial_token_s: 0.0,
        api_stream_s: 0.0,
        cached_stream_s: 0.0,
        api_load_all: false,
        cached_tail_free: false,
    }
}

/// `instant`: no modelled time at all.
fn instant() -> Profile {
    Profile {
        name: "instant",
        about: "no modelled time at all: as fast as the simulator goes, for client benchmarks",
        served_name: "instant",
        version: "0.0.0+sim.instant",
        max_model_len: 131_072,
        kv_tokens: 1 << 34,
        block_size: super::kv::BLOCK_TOKENS,
        max_num_seqs: 1024,
        max_batched_tokens: 1 << 24,
        step_s: 0.0,
        per_seq_s: 0.0,
        per_kv_token_s: 0.0,
        prefill_token_s: 0.0,
        prefill_quadratic_s: 0.0,
        cached_token_s: 0.0,
        cached_request_s: 0.0,
        api_s: 0.0,
        api_token_s: 0.0,
        api_quadratic_s: 0.0,
        api_serial_token_s: 0.0,
        api_stream_s: 0.0,
        cached_stream_s: 0.0,
        api_load_all: false,
        cached_tail_free: false,
    }
}

/// The profile called `name`.
pub fn profile(name: &str) -> Option<Profile> {
    profiles().into_iter().find(|p| p.name == name)
}

/// The names of the profiles, for messages.
pub fn names() -> Vec<&'static str> {
    profiles().iter().map(|p| p.name).collect()
}

/// The costs and limits of a twin file's `[params]` (`benchspec fit`), as a profile: the
/// simulator reads only this table, named as its own fields.
pub fn from_twin(text: &str) -> Result<Profile, super::SimError> {
    #[derive(serde::Deserialize)]
    struct File {
        params: super::fitted::Params,
    }
    let f: File =
        toml::from_str(text).map_err(|e| super::SimError::TwinParams(e.message().to_string()))?;
    let p = f.params;
    let costs = [
        ("step_s", p.step_s),
        ("per_seq_s", p.per_seq_s),
        ("per_kv_token_s", p.per_kv_token_s),
        ("prefill_token_s", p.prefill_token_s),
        ("prefill_quadratic_s", p.prefill_quadratic_s),
        ("api_s", p.api_s),
        ("api_stream_s", p.api_stream_s),
        ("cached_request_s", p.cached_request_s),
        ("cached_token_s", p.cached_token_s),
        ("cached_quadratic_s", p.cached_quadratic_s),
        ("tokenizer_token_s", p.tokenizer_token_s),
    ];
    if let Some((name, c)) = costs.iter().find(|(_, c)| !c.is_finite() || *c < 0.0) {
        return Err(super::SimError::TwinCost { name, value: *c });
    }
    // A limit of 0 would be read as 1 (or 2) without a word.
    let limits = [
        ("max_num_seqs", p.max_num_seqs),
        ("max_batched_tokens", p.max_batched_tokens),
        ("kv_tokens", p.kv_tokens),
        ("max_model_len", p.max_model_len),
    ];
    if let Some((name, _)) = limits.iter().find(|(_, v)| *v == 0) {
        return Err(super::SimError::TwinLimit { name });
    }
    Ok(Profile {
        name: "twin",
        about: "a twin fitted by `benchspec fit`",
        served_name: "twin",
        version: "0.0.0+sim.twin",
        max_model_len: p.max_model_len.max(2),
        kv_tokens: p.kv_tokens.max(1),
        block_size: super::kv::BLOCK_TOKENS,
        max_num_seqs: p.max_num_seqs.clamp(1, 1 << 20) as usize,
        max_batched_tokens: p.max_batched_tokens.clamp(1, 1 << 24) as usize,
        step_s: p.step_s,
        per_seq_s: p.per_seq_s,
        per_kv_token_s: p.per_kv_token_s,
        // The time per prompt token a prefix-cached prompt still takes is the API server's
        // (tokenizing, beside the engine), not a stall of the engine's whole batch; a cold
        // prompt's engine time per token is the rest of its cost, so that its TTFT is the
        // twin's `api_s + prefill_token_s × C + …` all the same.
        // The tokenizer's share too: a cold prompt waits for its own tokenizing.
        prefill_token_s: (p.prefill_token_s - p.cached_token_s - p.tokenizer_token_s).max(0.0),
        // The API server's share of a long prompt's cost (C² × cached_quadratic_s) is taken
        // from the engine's (C²/2 × this), so a cold prompt's TTFT stays the twin's.
        prefill_quadratic_s: (p.prefill_quadratic_s - 2.0 * p.cached_quadratic_s).max(0.0),
        cached_token_s: 0.0,
        // A cached prompt's own wait, the API server's (not a stall of every stream).
        cached_request_s: 0.0,
        cached_stream_s: p.cached_request_s,
        api_load_all: true,
        cached_tail_free: true,
        api_s: p.api_s,
        api_token_s: p.cached_token_s,
        api_quadratic_s: p.cached_quadratic_s,
        api_serial_token_s: p.tokenizer_token_s,
        api_stream_s: p.api_stream_s,
    })
}
