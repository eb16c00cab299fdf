//! The engine part of a spec: which engine serves the API, how benchspec launches it (or
//! the embedded simulator's settings), and its named variants. Kept apart from the rest of
//! the model so that the variant logic (`variant.rs`) and the model both read these types
//! without importing each other.

use super::units::{Span, Tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// A variant's changes to `engine.sim`: the keys given replace the base's.
pub type SimPatch = serde_json::Map<String, serde_json::Value>;

/// The serving engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Engine")]
pub struct EngineSpec {
    /// Which engine serves the API; it decides the tokenize and usage dialect.
    pub kind: EngineKind,
    /// The engine version; recorded, and compared with what the server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The weights' precision or quantization, e.g. `BF16`, `FP8`, `Q4_K_M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    /// The compute backend, e.g. `cuda`, `rocm`, `metal`, `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Where the engine's source lives, e.g. `github.com/vllm-project/vllm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The build flavour, e.g. `cuda-13.2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// The source commit the engine was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Where the OpenAI-compatible API is; `run --base-url` overrides it.
    #[serde(default = "default_base_url")]
    #[schemars(regex(pattern = r"^https?://[^\s/]+(/.*)?$"))]
    pub base_url: String,
    /// Data-parallel replicas: `launch.command` started this many times, `${PORT}` being
    /// `base_url`'s port + the replica's index and `${REPLICA}` the index (from 0); requests
    /// are spread over them by `balance`.
    #[serde(default = "one_replica", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1, max = 64))]
    pub replicas: u32,
    /// Several running servers to attach to, instead of `base_url`; requests are spread
    /// over them by `balance`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 64))]
    pub endpoints: Vec<String>,
    /// How requests are spread over replicas or endpoints.
    #[serde(default, skip_serializing_if = "is_default_balance")]
    pub balance: BalanceSpec,
    /// The NAME of the environment variable holding the API key. A key never appears in a spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub api_key_env: Option<String>,
    /// The embedded simulated engine's settings (kind `sim` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimEngine>,
    /// How to start the engine; without it benchspec attaches to a running server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// Versions of the engine measured one after another over the whole plan, each launched,
    /// measured and stopped; cells are `<variant>/<cell id>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// Variants as the cartesian product of launch-argument values, e.g.
    /// `{--max-num-seqs: [128, 256]}`; each is named by its values (`max-num-seqs-128`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, Vec<ArgValue>>,
}

/// `engine.base_url` when the spec gives none (vLLM's default port).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000";

fn default_base_url() -> String {
    DEFAULT_BASE_URL.to_string()
}

fn one_replica() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_default_balance(b: &BalanceSpec) -> bool {
    *b == BalanceSpec::default()
}

/// How requests are spread over several endpoints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Balance")]
pub enum BalanceSpec {
    /// Each request to the endpoint with the fewest requests in flight (ties in turn).
    #[default]
    LeastOutstanding,
    /// Each request to the next endpoint in turn.
    RoundRobin,
}

impl BalanceSpec {
    /// The name as written in a spec.
    pub fn as_str(self) -> &'static str {
        match self {
            BalanceSpec::LeastOutstanding => "least-outstanding",
            BalanceSpec::RoundRobin => "round-robin",
        }
    }
}

/// Which engine serves the API.
// Its names (kebab-case) are the spec's and the command line's (`import --engine`) alike.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum EngineKind {
    /// vLLM (`vllm serve`).
    Vllm,
    /// SGLang.
    Sglang,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// TensorRT-LLM's `trtllm-serve` (no `/tokenize`: needs `workload.tokenizer`).
    Trtllm,
    /// Any other OpenAI-compatible server, hosted APIs and proxies included (no `/tokenize`,
    /// no `ignore_eos`: needs `workload.tokenizer`; output lengths vary).
    Openai,
    /// benchspec's embedded simulated engine, run in-process.
    Sim,
}

impl EngineKind {
    /// The name as written in a spec.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vllm",
            EngineKind::Sglang => "sglang",
            EngineKind::LlamaCpp => "llama-cpp",
            EngineKind::Trtllm => "trtllm",
            EngineKind::Openai => "openai",
            EngineKind::Sim => "sim",
        }
    }
}

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

pub(super) fn one_repeat() -> u32 {
    1
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

/// How benchspec launches and stops the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// The command: a string split like a shell does (no shell is run) or a list of
    /// arguments. `$VAR` and `${VAR}` are replaced from the environment as a shell does it
    /// (`$$` is one `$`; no other shell feature is read).
    pub command: LaunchCommand,
    /// Extra environment variables for the engine; `$VAR` and `${VAR}` in values are
    /// replaced as in `command`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long the engine may take to become ready.
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout: Span,
    /// How long the engine may take to stop after SIGTERM before it is killed.
    #[serde(default = "default_stop_timeout")]
    pub stop_timeout: Span,
    /// Relaunch the engine when it crashes mid-run and go on with the next cell.
    #[serde(default)]
    pub restart_on_crash: bool,
}

fn default_ready_timeout() -> Span {
    Span(Duration::from_secs(20 * 60))
}

fn default_stop_timeout() -> Span {
    Span(Duration::from_secs(30))
}

/// A launch command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "Command")]
pub enum LaunchCommand {
    /// One string, split into arguments like a shell would (quotes, backslashes).
    Line(#[schemars(length(min = 1))] String),
    /// The arguments, the program first.
    Args(#[schemars(length(min = 1))] Vec<String>),
}

/// One named variant of the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// The variant's name; its cells are `<name>/<cell id>` (e.g. `mns128/decode/8K/c4`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._+=-]*$"), length(max = 64))]
    pub name: String,
    /// Launch arguments to set: a flag already in `launch.command` gets the new value, an
    /// absent one is appended; `true` leaves the bare flag, `false` writes `--no-<flag>` (as
    /// vLLM's boolean flags take it), `null` removes the flag with its value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, Option<ArgValue>>,
    /// Environment variables added to `launch.env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A whole launch command instead of `launch.command` (`args` then apply to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<LaunchCommand>,
    /// Another engine kind (e.g. `sglang` beside `vllm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EngineKind>,
    /// Another engine version, recorded and compared with what the server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Labels added to the records of this variant's cells.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Settings of the simulated engine to change (kind `sim` only): each key given replaces
    /// that key of `engine.sim` (`faults` key by key too), the others keep the base's, so
    /// `sim: {time_scale: 1.5}` is the base engine 1.5 times slower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<SimEngine>")]
    pub sim: Option<SimPatch>,
}

/// A launch argument's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ArgValue {
    /// `true`: the bare flag; `false`: `--no-<flag>`.
    Switch(bool),
    /// A number, written as YAML or TOML wrote it.
    Number(serde_json::Number),
    /// Any other value.
    Text(String),
}

impl ArgValue {
    /// The value as a word of the command line (`None` for a switch).
    pub(super) fn word(&self) -> Option<String> {
        match self {
            ArgValue::Switch(_) => None,
            ArgValue::Number(n) => Some(n.to_string()),
            ArgValue::Text(t) => Some(t.clone()),
        }
    }
}
