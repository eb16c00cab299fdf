//! Results that travel between tools: `benchspec import guidellm|vllm|aiperf FILE… --out DIR`
//! reads the peers' own result files into a run directory (one `import/<tool>/<n>` cell per
//! peer benchmark, the peer's own statistics kept as it reported them, `token_source:
//! "imported"`, the peer named in the manifest), so that `report`, `compare` and `history`
//! treat it like any run; and `benchspec export --format benchmark-report` writes llm-d's
//! Benchmark Report v0.2.1, one YAML file per cell ([`benchmark_report`]).

mod aiperf;
pub mod benchmark_report;
mod guidellm;
pub mod kept;
mod vllm;
mod write;

use crate::results::Summary;
use std::path::{Path, PathBuf};

pub use write::write_run;

/// A peer tool whose results `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// guidellm's `--output` JSON (`benchmarks[]`, one per rate or strategy).
    Guidellm,
    /// `vllm bench serve --save-result` JSON (one benchmark per file).
    Vllm,
    /// AIPerf's `profile_export_aiperf.json` (one benchmark per file).
    Aiperf,
}

impl Tool {
    /// `guidellm`, `vllm` or `aiperf`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Guidellm => "guidellm",
            Tool::Vllm => "vllm",
            Tool::Aiperf => "aiperf",
        }
    }

    /// The tool named `name` (as [`Tool::as_str`] writes it in a manifest).
    pub fn named(name: &str) -> Option<Tool> {
        [Tool::Guidellm, Tool::Vllm, Tool::Aiperf]
            .into_iter()
            .find(|t| t.as_str() == name)
    }

    /// The tool as its authors write its name: `GuideLLM`, `vLLM bench serve`, `AIPerf`.
    pub fn display_name(self) -> &'static str {
        match self {
            Tool::Guidellm => "GuideLLM",
            Tool::Vllm => "vLLM bench serve",
            Tool::Aiperf => "AIPerf",
        }
    }
}

/// Who measured an imported run, from its manifest: `AIPerf 0.13.0`, `vLLM bench serve
/// (version not stated)`; `None` for a run benchspec measured.
pub fn measured_by(m: &crate::rundir::Manifest) -> Option<String> {
    let i = m.imported_from.as_ref()?;
    let name = match Tool::named(&i.tool) {
        Some(t) => t.display_name(),
        None => i.tool.as_str(),
    };
    Some(match i.version.as_deref() {
        Some(v) => format!("{name} {v}"),
        None => format!("{name} (version not stated)"),
    })
}

/// What can go wrong importing or exporting.
#[derive(Debug, thiserror::Error)]
pub enum InteropError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what the tool writes.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// The run directory could not be written or read.
    #[error("{0}")]
    RunDir(#[from] crate::rundir::RunDirError),
    /// `import --out` names a folder that is not empty.
    #[error(
        "`{0}` exists and is not empty: `import` writes a new run directory; choose an empty or new `--out` folder"
    )]
    NotEmpty(PathBuf),
    /// A peer's file lacks what its tool writes: what is missing (`read_file` names the file
    /// and the tool).
    #[error("{0}")]
    Shape(&'static str),
    /// An exported file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One benchmark of a peer's file: one load level, as the peer measured it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerBenchmark {
    /// The peer's name for it (`poisson@3.00`, `request-rate 4`).
    pub label: String,
    /// Requests per second offered (infinite: all at once, as vLLM's `inf`); `None` where the
    /// peer offered no rate (a concurrency or throughput benchmark).
    pub rate: Option<f64>,
    /// How arrivals were drawn: `poisson`, `constant`, …
    pub arrivals: Option<String>,
    /// Requests kept in flight at most (a concurrency benchmark), when the peer capped it.
    pub max_concurrency: Option<u32>,
    /// Start, Unix seconds.
    pub started_at: Option<f64>,
    /// How long it measured, seconds.
    pub duration_s: Option<f64>,
    /// Requests that finished well.
    pub completed: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Requests cut off (by the duration).
    pub incomplete: u64,
    /// Prompt tokens per request, mean.
    pub input_tokens_mean: Option<f64>,
    /// Prompt tokens per request, the least and the most, when the file says.
    pub input_tokens_range: Option<(f64, f64)>,
    /// Output tokens per request, mean.
    pub output_tokens_mean: Option<f64>,
    /// Output tokens per request, the least and the most, when the file says.
    pub output_tokens_range: Option<(f64, f64)>,
    /// Output tokens in all.
    pub output_tokens: Option<u64>,
    /// Output tokens per second, the peer's figure.
    pub output_tok_s: Option<f64>,
    /// Finished requests per second, the peer's figure.
    pub request_rate: Option<f64>,
    /// Time to first token, ms.
    pub ttft: Option<Summary>,
    /// Time per output token, ms.
    pub tpot: Option<Summary>,
    /// Inter-token latency, ms.
    pub itl: Option<Summary>,
    /// Request latency, ms.
    pub e2e: Option<Summary>,
    /// What the peer's file did not state and the record shows in its place (warnings).
    pub notes: Vec<String>,
}

/// A peer's file, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerRun {
    /// The peer's version, when the file states it.
    pub version: Option<String>,
    /// The served model.
    pub model: Option<String>,
    /// The server's URL.
    pub target: Option<String>,
    /// Its benchmarks, in the file's order.
    pub benchmarks: Vec<PeerBenchmark>,
}

/// Read `path` as `tool`'s result file.
pub fn read(tool: Tool, path: &Path) -> Result<PeerRun, InteropError> {
    let text = std::fs::read_to_string(path).map_err(|source| InteropError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| InteropError::Format {
            path: path.to_path_buf(),
            message: format!(
                "not JSON ({e}): `import {}` reads {}",
                tool.as_str(),
                what(tool)
            ),
        })?;
    let bad = |e: InteropError| InteropError::Format {
        path: path.to_path_buf(),
        message: format!("{e}: `import {}` reads {}", tool.as_str(), what(tool)),
    };
    match tool {
        Tool::Guidellm => guidellm::read(&value).map_err(bad),
        Tool::Vllm => vllm::read(&value).map_err(bad),
        Tool::Aiperf => aiperf::read(&value).map_err(bad),
    }
}

fn what(tool: Tool) -> &'static str {
    match tool {
        Tool::Guidellm => "the JSON of `guidellm run --output kind=json,path=FILE`",
        Tool::Vllm => "the JSON of `vllm bench serve --save-result`",
        Tool::Aiperf => "AIPerf's profile_export_aiperf.json",
    }
}

/// A number at `pointer`.
pub(crate) fn num(v: &serde_json::Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .filter(|x| x.is_finite())
}

/// The least and the most at `min` and `max` under `pointer`.
pub(crate) fn range(v: &serde_json::Value, pointer: &str) -> Option<(f64, f64)> {
    Some((
        num(v, &format!("{pointer}/min"))?,
        num(v, &format!("{pointer}/max"))?,
    ))
}

/// Text at `pointer`.
pub(crate) fn text(v: &serde_json::Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}
