//! `engine.sim`: the settings of the embedded simulated engine — its profile, KV cache,
//! dialect, faults, and the images, LoRA and speculative-decoding behaviour it models. Kept
//! apart from the engine spec (`engine.rs`), which re-exports these types.

use super::units::{Span, Tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Settings of the embedded simulated engine. It serves `model.served_name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimEngine {
    /// A built-in performance profile (`benchspec sim --list`).
    #[serde(default = "default_sim_profile")]
    pub profile: String,
    /// Chat: the first this many generated tokens stream as `reasoning_content`.
    #[serde(default)]
    pub reasoning_tokens: u32,
    /// Tokens per streamed chunk (more than 1 as speculative decoding sends them).
    #[serde(default = "one_token")]
    #[schemars(range(min = 1))]
    pub tokens_per_chunk: u32,
    /// Whose API dialect to speak: `vllm` (usage in a separate final chunk, continuous usage
    /// honoured), `llama-cpp` (usage inside the last chunk only), `sglang`, `trtllm` or
    /// `openai` (a hosted API: no `/tokenize`, `ignore_eos` refused).
    #[serde(default)]
    pub dialect: SimDialectSpec,
    /// Faults to inject, for testing how a run copes with them.
    #[serde(default)]
    pub faults: SimFaults,
    /// The KV cache's capacity in tokens, instead of the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_tokens: Option<Tokens>,
    /// The most requests scheduled at once (vLLM `--max-num-seqs`), instead of the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_num_seqs: Option<u32>,
    /// Tokens per KV-cache block (vLLM `--block-size`), instead of the profile's 16 (GPU
    /// vLLM's default): prefix-cache hits and `cached_tokens` come in whole blocks; 128
    /// imitates vLLM's CPU build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4096))]
    pub block_size: Option<u32>,
    /// Run-to-run noise: the relative standard deviation of the engine's step time, redrawn
    /// every quarter second of engine time (0, the default: none).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 0.5))]
    pub noise: f64,
    /// The noise's seed: two runs with different seeds draw different noise.
    #[serde(default)]
    pub noise_seed: u64,
    /// Every cost of the profile times this: 1.1 is an engine 10% slower (for comparisons).
    #[serde(default = "unit_scale")]
    #[schemars(range(min = 0.1, max = 10.0))]
    pub time_scale: f64,
    /// A twin written by `benchspec fit` (relative to the spec): the engine's costs and limits
    /// from it instead of `profile`'s, so any spec can be tried against a fitted engine. Kept
    /// in the run directory as `twin.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<String>,
    /// How the simulated model takes images in chat prompts (default: 256 tokens an image,
    /// at most 4 a prompt, sides of at most 4096 pixels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::images::SimImages>,
    /// LoRA adapters served beside the base model, resident slots and their load cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<super::adapters::SimLora>,
    /// Speculative decoding: each decode step drafts `draft_tokens` tokens, accepted one
    /// after the other with the probability of the prompt's kind of text, and serves
    /// vLLM's `spec_decode` counters (llama.cpp's `timings.draft_n` in that dialect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SimSpeculative>,
}

/// The simulated engine's speculative decoding (`engine.sim.speculative`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimSpeculative {
    /// Draft tokens proposed per decode step (vLLM's `num_speculative_tokens`).
    #[schemars(range(min = 1, max = 64))]
    pub draft_tokens: u32,
    /// The probability that a draft token is accepted, the ones before it accepted, by the
    /// kind of text of the prompt (`workload.text`, as the simulator tells it apart).
    #[serde(default)]
    pub acceptance: SimAcceptance,
}

/// Per-position acceptance probabilities by kind of prompt text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimAcceptance {
    /// Random common words (`workload.text: random`).
    #[serde(default = "accept_random")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub random: f64,
    /// English prose.
    #[serde(default = "accept_natural")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub natural: f64,
    /// Source code.
    #[serde(default = "accept_code")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub code: f64,
}

fn accept_random() -> f64 {
    0.3
}
fn accept_natural() -> f64 {
    0.6
}
fn accept_code() -> f64 {
    0.8
}

impl Default for SimAcceptance {
    fn default() -> Self {
        SimAcceptance {
            random: accept_random(),
            natural: accept_natural(),
            code: accept_code(),
        }
    }
}

fn unit_scale() -> f64 {
    1.0
}

/// The simulated engine's API dialect.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "SimDialect")]
pub enum SimDialectSpec {
    /// vLLM's.
    #[default]
    Vllm,
    /// llama.cpp's server's.
    LlamaCpp,
    /// SGLang's.
    Sglang,
    /// TensorRT-LLM's `trtllm-serve`'s.
    Trtllm,
    /// A hosted OpenAI-compatible API's.
    Openai,
}

fn one_token() -> u32 {
    1
}

/// Faults the simulated engine injects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimFaults {
    /// Fraction of requests answered with HTTP 500.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub failure_rate: f64,
    /// Fraction of streams cut mid-way (the connection drops).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub disconnect_rate: f64,
    /// Fraction of streams that go silent mid-way and stay open.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub stall_rate: f64,
    /// The engine dies this long after it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub die_after: Option<Span>,
    /// Fraction of requests refused with HTTP 429 and a `retry-after` (a rate limit).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub rate_limit_rate: f64,
    /// The `retry-after` of those 429s.
    #[serde(default = "one_second")]
    pub retry_after: Span,
}

fn one_second() -> Span {
    Span(Duration::from_secs(1))
}

impl Default for SimFaults {
    fn default() -> SimFaults {
        SimFaults {
            failure_rate: 0.0,
            disconnect_rate: 0.0,
            stall_rate: 0.0,
            die_after: None,
            rate_limit_rate: 0.0,
            retry_after: one_second(),
        }
    }
}

/// The simulator profile used when a spec names none (calibrated to the seed page).
pub const DEFAULT_SIM_PROFILE: &str = crate::sim::profile::DEFAULT;

fn default_sim_profile() -> String {
    DEFAULT_SIM_PROFILE.to_string()
}

impl Default for SimEngine {
    fn default() -> Self {
        SimEngine {
            profile: default_sim_profile(),
            reasoning_tokens: 0,
            tokens_per_chunk: one_token(),
            dialect: SimDialectSpec::default(),
            faults: SimFaults::default(),
            kv_tokens: None,
            max_num_seqs: None,
            block_size: None,
            noise: 0.0,
            noise_seed: 0,
            time_scale: 1.0,
            twin: None,
            images: None,
            lora: None,
            speculative: None,
        }
    }
}
