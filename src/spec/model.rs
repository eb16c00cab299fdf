//! Spec v1, the checked-in description of one benchmark (docs/spec.md). These types are the
//! single source of the JSON Schema (`benchspec schema`); every field's `///` becomes its
//! description there, so editors show it while a spec is written.

use super::engine::{EngineSpec, one_repeat};
use super::units::{Size, Tokens};
use super::workload::{Matrix, Phases, Report, Validity, WorkloadSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A benchspec spec, version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "benchspec spec v1")]
pub struct Spec {
    /// The spec format version; `1` is the only version today.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// The benchmark's name, shown as the report's subtitle.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Free text about the benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Labels copied into every result record (e.g. `team: inference`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// What the engine runs on: recorded and shown in reports.
    #[serde(default)]
    pub hardware: Hardware,
    /// The serving engine, how to reach it and, optionally, how to launch it.
    pub engine: EngineSpec,
    /// The model the engine serves.
    pub model: Model,
    /// How requests are shaped.
    #[serde(default)]
    pub workload: WorkloadSpec,
    /// The axes of the benchmark: context lengths and concurrency levels.
    pub matrix: Matrix,
    /// Which phases run, and on which part of the matrix.
    #[serde(default)]
    pub phases: Phases,
    /// When a measured cell counts as valid.
    #[serde(default)]
    pub validity: Validity,
    /// Latency objectives: every load and decode cell gets goodput and `slo_met`.
    #[serde(default, skip_serializing_if = "super::load::Slo::is_empty")]
    pub slo: super::load::Slo,
    /// Measure every prefill, decode and load cell this many times; records carry the
    /// mean with a 95% confidence interval (`ci95`). `phases.<name>.repeats` overrides it.
    #[serde(default = "one_repeat")]
    #[schemars(range(min = 1))]
    pub repeats: u32,
    /// On `--resume`, the repeats an unfinished cell measured before the stop: `keep` them
    /// and measure only the missing ones, or measure all of them afresh (`fresh`: every
    /// `--resume` starts or attaches to the engine anew, and the repeats of a cell are then
    /// all from one engine start).
    #[serde(
        default,
        skip_serializing_if = "super::workload::ResumeRepeats::is_keep"
    )]
    pub resume_repeats: super::workload::ResumeRepeats,
    /// What is watched besides the API while cells are measured: the engine's `/metrics`
    /// and the GPUs.
    #[serde(
        default,
        skip_serializing_if = "super::telemetry::Telemetry::is_default"
    )]
    pub telemetry: super::telemetry::Telemetry,
    /// The reports rendered at the end of a run.
    #[serde(default)]
    pub report: Report,
}

/// The machine the engine runs on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    /// The kind of accelerator.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<HardwareType>,
    /// The GPU model, e.g. `H200 NVL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// How many GPUs the engine uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub gpu_count: Option<u32>,
    /// Memory of one GPU, e.g. `141GB`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vram: Option<Size>,
    /// The operating system, e.g. `linux`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// US dollars per hour for the whole hardware described (every replica): each record's
    /// `usd_per_mtok` is this over its output tokens per hour, per million.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_per_hour: Option<f64>,
}

impl Hardware {
    /// `H200 NVL ×2 linux`: the GPU, its count when more than one, the OS (empty when the
    /// spec says none of them).
    pub fn summary(&self) -> String {
        [
            self.gpu.clone(),
            self.gpu_count.filter(|n| *n > 1).map(|n| format!("×{n}")),
            self.os.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// The kind of accelerator the engine runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HardwareType {
    /// A GPU on its own card (H100, H200, RTX 4090, …).
    DiscreteGpu,
    /// A GPU sharing memory with the CPU (Apple silicon, GB10, …).
    IntegratedGpu,
    /// CPU only.
    Cpu,
    /// Another accelerator (TPU, Gaudi, Trainium, …).
    Accelerator,
}

/// The served model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// The `model` field of every request, as the server lists it in `/v1/models`.
    #[schemars(length(min = 1))]
    pub served_name: String,
    /// Where the weights come from, e.g. `RedHatAI/gemma-4-E2B-it`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The weights' revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The longest prompt + output the engine accepts; read from the server when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<Tokens>,
    /// The engine's KV-cache capacity in tokens; read from the engine when absent (vLLM's
    /// `cache_config_info`, SGLang's server info, llama.cpp's `/props`). Stated here, `plan`
    /// skips the cells it cannot hold (`workload.kv_overflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_tokens: Option<Tokens>,
    /// The images the model accepts: per prompt and largest size; `workload.images` beyond
    /// them is refused before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_limit: Option<super::images::ImageLimit>,
}
