//! The measuring half of spec v1: request shape, matrix axes, phases, validity thresholds and
//! report formats (docs/spec.md).

use super::units::{Span, Tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How requests are shaped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Workload")]
pub struct WorkloadSpec {
    /// Which endpoint is measured: `/v1/completions` or `/v1/chat/completions`.
    #[serde(default)]
    pub api: ApiSpec,
    /// The `max_tokens` of every decode request.
    #[serde(default = "default_max_output")]
    pub max_output_tokens: Tokens,
    /// Ask the engine to decode to `max_output_tokens` whatever the model says.
    #[serde(default = "yes")]
    pub ignore_eos: bool,
    /// `warm`: each request slot reuses one prompt, sent once before the window opens;
    /// `cold`: every request gets a prompt never sent before.
    #[serde(default)]
    pub prompt_cache: PromptCache,
    /// `server` (the engine's `/tokenize`), or a local tokenizer: the model's Hugging Face
    /// `tokenizer.json` or a directory holding it (relative to the spec), with
    /// `tokenizer_config.json` beside it for chat prompts (its `chat_template`). Engines
    /// without `/tokenize` (`trtllm`, `openai`) need one.
    #[serde(default = "default_tokenizer")]
    #[schemars(length(min = 1))]
    pub tokenizer: String,
    /// A stream silent this long is a failed request.
    #[serde(default = "default_stall_timeout")]
    pub stall_timeout: Span,
    /// Seed of prompt synthesis; the same seed gives the same prompts.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Cells whose concurrency × (context + max output) exceeds the engine's KV capacity
    /// (`model.kv_tokens`, or what the engine reports): `skip`, `warn` or `run`.
    #[serde(default)]
    pub kv_overflow: super::telemetry::KvOverflow,
    /// Shared system prompts: every prompt of every phase starts with one of `groups`
    /// prefixes of `tokens` tokens (counted inside the context), the rest of it unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Prefix>,
    /// Images after the text of every chat prompt, in every phase: their count, width and
    /// height (each fixed or drawn), format and seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::images::Images>,
    /// LoRA adapters: name (a `model` the server lists) → weight in the mix; each request
    /// goes to one, drawn with `seed` in proportion to the weights (`by_adapter` in records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<super::adapters::Adapters>,
    /// What synthetic prompt bodies are made of: `random` common words (the default),
    /// `natural` English prose or `code`; a draft model's acceptance depends on it.
    #[serde(default, skip_serializing_if = "is_random")]
    pub text: crate::text::TextKind,
    /// The sampling temperature of every request: 0 (the default) is greedy decoding; a
    /// draft model's acceptance falls as it rises.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0.0, max = 5.0))]
    pub temperature: f64,
}

fn is_zero(t: &f64) -> bool {
    *t == 0.0
}

fn is_random(t: &crate::text::TextKind) -> bool {
    *t == crate::text::TextKind::Random
}

/// Shared prefixes at the start of every prompt (`workload.prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prefix {
    /// How many different prefixes; requests are spread evenly over them.
    #[schemars(range(min = 1))]
    pub groups: u32,
    /// Each prefix's length in tokens as the engine counts them (BOS included), counted
    /// inside each context.
    pub tokens: Tokens,
    /// Send each prefix once (one output token) before each cell's window opens.
    #[serde(default = "yes")]
    pub prime: bool,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            api: ApiSpec::default(),
            max_output_tokens: default_max_output(),
            ignore_eos: true,
            prompt_cache: PromptCache::default(),
            tokenizer: default_tokenizer(),
            stall_timeout: default_stall_timeout(),
            seed: default_seed(),
            kv_overflow: super::telemetry::KvOverflow::default(),
            prefix: None,
            images: None,
            adapters: None,
            text: crate::text::TextKind::Random,
            temperature: 0.0,
        }
    }
}

/// `workload.max_output_tokens` when the spec gives none.
pub const DEFAULT_MAX_OUTPUT_TOKENS: Tokens = Tokens(4096);

fn default_max_output() -> Tokens {
    DEFAULT_MAX_OUTPUT_TOKENS
}
fn yes() -> bool {
    true
}
fn default_tokenizer() -> String {
    "server".to_string()
}
fn default_stall_timeout() -> Span {
    Span(Duration::from_secs(60))
}
fn default_seed() -> u64 {
    1
}

/// The measured endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Api")]
pub enum ApiSpec {
    /// `/v1/completions`.
    #[default]
    Completions,
    /// `/v1/chat/completions`; reasoning tokens count as tokens.
    Chat,
}

/// What `--resume` does with the repeats an unfinished cell measured before the stop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ResumeRepeats {
    /// Keep the repeats written whole; measure only the missing ones.
    #[default]
    Keep,
    /// Supersede them and measure every repeat again.
    Fresh,
}

impl ResumeRepeats {
    pub(super) fn is_keep(&self) -> bool {
        *self == ResumeRepeats::Keep
    }
}

/// Whether a request's prompt may be in the server's prefix cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PromptCache {
    /// Each slot's prompt is sent once before the window and reused.
    #[default]
    Warm,
    /// Every request's prompt is new.
    Cold,
}

/// The axes of the benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Prompt lengths in tokens, ascending (`8K`, `16K`, …).
    #[schemars(length(min = 1))]
    pub contexts: Vec<Tokens>,
    /// Numbers of simultaneous requests, ascending.
    #[schemars(length(min = 1))]
    pub concurrency: Vec<Concurrency>,
}

/// A number of simultaneous requests.
pub type Concurrency = u32;

/// The phases of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    /// Prompt processing speed by context, at concurrency 1.
    #[serde(default)]
    pub prefill: PrefillSpec,
    /// Sustained generation speed for each context × concurrency.
    #[serde(default)]
    pub decode: DecodeSpec,
    /// Open-loop load: requests arriving at set rates (cells `load/<context>/r<rate>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<super::load::Load>,
    /// The highest concurrency or rate that meets the `slo`, searched by bisection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::load::Capacity>,
    /// Multi-turn conversations (cells `sessions/<context>/u<users>` and `.../r<rate>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<super::sessions::Sessions>,
    /// Trace replay (a cell `replay/<trace file stem>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::trace::Replay>,
}

/// The prefill phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Prefill")]
pub struct PrefillSpec {
    /// Whether prefill is measured.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The contexts measured; default: `matrix.contexts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Tokens>>,
    /// `decode-warmup`: taken from the first warm-up request of each decode context;
    /// `standalone`: `repeats` cold requests with max_tokens 1, median reported.
    #[serde(default)]
    pub mode: PrefillMode,
    /// Cold requests per context in `standalone` mode (their mean is reported, with a 95%
    /// confidence interval from two on); default: the spec's `repeats`, else 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub repeats: Option<u32>,
}

impl Default for PrefillSpec {
    fn default() -> Self {
        PrefillSpec {
            enabled: true,
            contexts: None,
            mode: PrefillMode::default(),
            repeats: None,
        }
    }
}

/// How prefill is measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrefillMode {
    /// From the first warm-up request of each decode context.
    #[default]
    DecodeWarmup,
    /// Separate cold requests with max_tokens 1.
    Standalone,
}

/// The decode phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Decode")]
pub struct DecodeSpec {
    /// Whether decode is measured.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `fixed-duration`: C streams for `duration`; `request-count`: `requests` per cell.
    #[serde(default)]
    pub mode: DecodeMode,
    /// The measured window of a fixed-duration cell.
    #[serde(default = "default_duration")]
    pub duration: Span,
    /// Measured requests per cell in `request-count` mode.
    #[serde(default)]
    pub requests: u32,
    /// The contexts measured; default: `matrix.contexts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Tokens>>,
    /// The concurrency levels measured; default: `matrix.concurrency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Vec<Concurrency>>,
    /// Measure every cell this many times (interleaved across the cells of a context);
    /// default: the spec's `repeats`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub repeats: Option<u32>,
}

impl Default for DecodeSpec {
    fn default() -> Self {
        DecodeSpec {
            enabled: true,
            mode: DecodeMode::default(),
            duration: default_duration(),
            requests: 0,
            contexts: None,
            concurrency: None,
            repeats: None,
        }
    }
}

fn default_duration() -> Span {
    Span(Duration::from_secs(30))
}

/// How a decode cell is bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DecodeMode {
    /// A window of `duration` with C streams always in flight.
    #[default]
    FixedDuration,
    /// Each slot issues requests until `requests` have finished.
    RequestCount,
}

/// When a cell counts as valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Validity {
    /// Average active requests must be at least this × concurrency.
    #[serde(default = "default_min_active")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_active_fraction: f64,
    /// Failed requests / requests started in the window may be at most this.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_error_rate: f64,
    /// The client's CPU busy fraction during a window may be at most this: above it the
    /// client itself, not the engine, was the bottleneck.
    #[serde(default = "default_max_client_busy")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_client_busy: f64,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            min_active_fraction: default_min_active(),
            max_error_rate: 0.0,
            max_client_busy: default_max_client_busy(),
        }
    }
}

fn default_max_client_busy() -> f64 {
    0.9
}

fn default_min_active() -> f64 {
    0.9
}

/// The reports rendered at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The report's title.
    #[serde(default = "default_title")]
    pub title: String,
    /// Which built-in reports are written.
    #[serde(default = "default_formats")]
    pub formats: Vec<Format>,
    /// Extra user templates (`.j2`), relative to the spec, rendered beside the built-ins.
    #[serde(default)]
    pub templates: Vec<String>,
}

impl Default for Report {
    fn default() -> Self {
        Report {
            title: default_title(),
            formats: default_formats(),
            templates: Vec::new(),
        }
    }
}

fn default_title() -> String {
    "Speed test matrix".to_string()
}

fn default_formats() -> Vec<Format> {
    vec![Format::Markdown, Format::Html, Format::Csv, Format::Json]
}

/// A built-in report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `report.md`.
    Markdown,
    /// `report.html`, self-contained, with inline SVG charts.
    Html,
    /// `results.csv`, one row per cell.
    Csv,
    /// `results.json`.
    Json,
}
