//! The parameters a twin file's `[params]` holds (`benchspec fit`): one type, written by the
//! twin and read by the simulator (`engine.sim.twin`), which turns it into a profile
//! ([`super::profile::from_twin`]). The twin's model of them lives in `twin/model.rs`.

use serde::{Deserialize, Serialize};

/// The fitted parameters (seconds unless said), named as the simulator's profile names them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Fixed cost of every engine step.
    pub step_s: f64,
    /// Decode cost per running request per step.
    pub per_seq_s: f64,
    /// Decode cost per KV token read per step.
    pub per_kv_token_s: f64,
    /// Prefill cost per prompt token.
    pub prefill_token_s: f64,
    /// Prefill attention: a token at position p costs p × this more.
    pub prefill_quadratic_s: f64,
    /// API-server time before a request reaches the engine.
    pub api_s: f64,
    /// API-server wait per ((running + 1)^¼ − 1).
    pub api_stream_s: f64,
    /// A decode cell's first token beyond `api_s`: fixed part (a prefix-cached prompt's
    /// admission, when decode prompts are warm).
    pub cached_request_s: f64,
    /// A decode cell's first token beyond `api_s`: per prompt token.
    pub cached_token_s: f64,
    /// A decode cell's first token beyond `api_s`: per squared prompt token (long prompts
    /// cost the API server more per token).
    #[serde(default)]
    pub cached_quadratic_s: f64,
    /// The API server's one tokenizer, per prompt token: requests sent together queue for it
    /// (0 in a twin fitted before it was a parameter).
    #[serde(default)]
    pub tokenizer_token_s: f64,
    /// Tokens per engine step (prefills are chunked to it).
    pub max_batched_tokens: u64,
    /// Requests scheduled at once.
    pub max_num_seqs: u64,
    /// KV-cache capacity, tokens.
    pub kv_tokens: u64,
    /// Longest prompt + output.
    pub max_model_len: u64,
}
