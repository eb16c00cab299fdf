//! The engine part of a spec: which engine serves the API, how benchspec launches it (or
//! the embedded simulator's settings), and its named variants. Kept apart from the rest of
//! the model so that the variant logic (`variant.rs`) and the model both read these types
//! without importing each other.

use super::units::Span;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub use super::sim_engine::{DEFAULT_SIM_PROFILE, SimDialectSpec, SimEngine, SimFaults};

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

pub(super) fn one_repeat() -> u32 {
    1
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
