//! The `telemetry` section (docs/spec.md): what benchspec watches besides the API while it
//! measures — the engine's Prometheus `/metrics`, and the GPUs' power, clocks and memory —
//! and `workload.kv_overflow`, what to do with cells the engine's KV cache cannot hold.

use super::units::Span;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What is watched during every cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Telemetry {
    /// Scrape the engine's `/metrics` before, during and after every cell (records gain
    /// `server`). An engine without it is a note, never a failure.
    #[serde(default = "yes")]
    pub server: bool,
    /// How often `/metrics` is scraped during a cell.
    #[serde(default = "default_interval")]
    pub interval: Span,
    /// Where GPU power, clocks and memory come from: `auto` (`nvidia-smi` when it is on
    /// PATH), `nvidia-smi`, `dcgm` (a DCGM exporter at `dcgm_url`) or `off`.
    #[serde(default)]
    pub gpu: GpuSource,
    /// The DCGM exporter's Prometheus endpoint (`gpu: dcgm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^https?://[^\s/]+(/.*)?$"))]
    pub dcgm_url: Option<String>,
}

fn yes() -> bool {
    true
}

fn default_interval() -> Span {
    Span(Duration::from_secs(1))
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            server: true,
            interval: default_interval(),
            gpu: GpuSource::default(),
            dcgm_url: None,
        }
    }
}

impl Telemetry {
    /// Whether every setting is the default (left out when a spec is written back).
    pub fn is_default(&self) -> bool {
        *self == Telemetry::default()
    }
}

/// Where GPU telemetry comes from. YAML 1.1 readers take a bare `off` for `false`, so
/// `false` means `off` too (and `true` means `auto`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", from = "GpuWritten")]
#[schemars(with = "GpuWritten")]
pub enum GpuSource {
    /// `nvidia-smi` when it is on PATH, else none.
    #[default]
    Auto,
    /// `nvidia-smi … -lms 250`, a child process for the whole run.
    NvidiaSmi,
    /// A DCGM exporter's Prometheus endpoint (`telemetry.dcgm_url`), polled every 250 ms.
    Dcgm,
    /// No GPU telemetry.
    Off,
}

/// `telemetry.gpu` as a spec may write it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(untagged)]
enum GpuWritten {
    /// `false` is `off`, `true` is `auto`.
    Flag(bool),
    /// A source by name.
    Named(GpuName),
}

/// The sources by name.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum GpuName {
    /// `nvidia-smi` when it is on PATH, else none.
    Auto,
    /// `nvidia-smi … -lms 250`, a child process for the whole run.
    NvidiaSmi,
    /// A DCGM exporter's Prometheus endpoint (`telemetry.dcgm_url`), polled every 250 ms.
    Dcgm,
    /// No GPU telemetry.
    Off,
}

impl From<GpuWritten> for GpuSource {
    fn from(w: GpuWritten) -> GpuSource {
        match w {
            GpuWritten::Flag(true) | GpuWritten::Named(GpuName::Auto) => GpuSource::Auto,
            GpuWritten::Flag(false) | GpuWritten::Named(GpuName::Off) => GpuSource::Off,
            GpuWritten::Named(GpuName::NvidiaSmi) => GpuSource::NvidiaSmi,
            GpuWritten::Named(GpuName::Dcgm) => GpuSource::Dcgm,
        }
    }
}

/// What to do with a cell whose requests cannot all fit in the engine's KV cache at once
/// (concurrency × (context + max output) > the capacity).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KvOverflow {
    /// Skip it, with the reason.
    #[default]
    Skip,
    /// Run it, and write the reason into its record's warnings.
    Warn,
    /// Run it as any other cell.
    Run,
}

impl KvOverflow {
    /// As a spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            KvOverflow::Skip => "skip",
            KvOverflow::Warn => "warn",
            KvOverflow::Run => "run",
        }
    }
}
