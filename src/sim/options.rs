//! How the simulator is set up: its performance profile, the model name it serves, the
//! streaming dialect it speaks, and the faults it injects.

use super::profile::Profile;
use std::time::Duration;

/// Faults to inject, for tests of everything that must survive them.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Fraction of requests answered with HTTP 500.
    pub failure_rate: f64,
    /// Fraction of streams cut mid-way (the connection drops).
    pub disconnect_rate: f64,
    /// Fraction of streams that go silent mid-way and stay open.
    pub stall_rate: f64,
    /// Stop serving this long after start.
    pub die_after: Option<Duration>,
    /// Fraction of requests refused with HTTP 429 (a hosted API's rate limit).
    pub rate_limit_rate: f64,
    /// The `retry-after` a 429 carries.
    pub retry_after: Duration,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            failure_rate: 0.0,
            disconnect_rate: 0.0,
            stall_rate: 0.0,
            die_after: None,
            rate_limit_rate: 0.0,
            retry_after: Duration::from_secs(1),
        }
    }
}

/// Whose streaming dialect the simulator speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SimDialect {
    /// vLLM: `continuous_usage_stats` honoured, usage in a separate final `choices: []` chunk.
    #[default]
    Vllm,
    /// llama.cpp's server: no per-chunk usage, usage inside the last chunk.
    LlamaCpp,
    /// SGLang: usage only in the final `choices: []` chunk; `/tokenize` takes a prompt, not
    /// messages; `/get_server_info` states the KV capacity.
    Sglang,
    /// TensorRT-LLM's `trtllm-serve`: no `/tokenize`; usage only in the final chunk; no
    /// `max_model_len` in `/v1/models`.
    Trtllm,
    /// A hosted OpenAI-compatible API: no `/tokenize`, `/health` or `/version`; unknown
    /// request fields (`ignore_eos`, `continuous_usage_stats`) refused with HTTP 400; usage
    /// only in the final chunk; HTTP 429 with `retry-after` under the rate-limit fault.
    Openai,
}

impl SimDialect {
    /// Whether `/tokenize` exists.
    pub fn tokenizes(self) -> bool {
        matches!(
            self,
            SimDialect::Vllm | SimDialect::LlamaCpp | SimDialect::Sglang
        )
    }
}

/// How the simulator is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Performance profile.
    pub profile: Profile,
    /// The model name served; the profile's by default.
    pub served_name: String,
    /// Chat: the first this many generated tokens are `reasoning_content`.
    pub reasoning_tokens: usize,
    /// Tokens per streamed chunk (several, as speculative decoding sends them).
    pub tokens_per_chunk: usize,
    /// Faults.
    pub faults: Faults,
    /// Seed of the fault draws and of generated text.
    pub seed: u64,
    /// The streaming dialect.
    pub dialect: SimDialect,
    /// Run-to-run noise: relative standard deviation of the step time (0: none).
    pub noise: f64,
    /// Seed of the noise, apart from `seed` so that two runs can differ.
    pub noise_seed: u64,
    /// Images in chat prompts: tokens per image, the most per prompt, the largest side.
    pub images: super::images::ImageRule,
    /// LoRA adapters served beside the model (`super::lora`).
    pub lora: Option<super::lora::LoraOptions>,
    /// Speculative decoding, when the engine models it.
    pub speculation: Option<super::Speculation>,
}

impl Options {
    /// Plain options for a profile.
    pub fn new(profile: Profile) -> Options {
        Options {
            served_name: profile.served_name.to_string(),
            profile,
            reasoning_tokens: 0,
            tokens_per_chunk: 1,
            faults: Faults::default(),
            seed: 1,
            dialect: SimDialect::Vllm,
            noise: 0.0,
            noise_seed: 0,
            images: super::images::ImageRule::default(),
            lora: None,
            speculation: None,
        }
    }
}
