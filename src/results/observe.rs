//! What a record says about the engine and the GPUs while its cell ran (docs/results.md):
//! `server`, read from the engine's own `/metrics`, and `gpu`, one entry per GPU.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The engine's own view of a cell, from its Prometheus metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerUse {
    /// Mean of the engine's running requests over the scrapes in the window: its effective
    /// concurrency.
    pub running_mean: Option<f64>,
    /// Most requests running in one scrape.
    pub running_max: Option<f64>,
    /// Most requests waiting in one scrape.
    pub waiting_max: Option<f64>,
    /// Highest KV-cache usage seen, 0 to 1.
    pub kv_usage_max: Option<f64>,
    /// Prefix-cache hits / queries over the cell (tokens), or the engine's own hit-rate gauge.
    pub prefix_hit_rate: Option<f64>,
    /// Requests preempted during the cell.
    pub preemptions: Option<f64>,
    /// The engine's TTFT p50 over the window, from its histogram (bucket resolution).
    pub ttft_ms_p50: Option<f64>,
    /// The engine's inter-token latency p50 over the window, from its histogram.
    pub itl_ms_p50: Option<f64>,
    /// Whose metric names were read: `vllm`, `sglang`, `llamacpp` or `trtllm`.
    pub source: String,
}

/// One GPU during a cell's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuUse {
    /// The GPU's index.
    pub index: u32,
    /// Its name, e.g. `NVIDIA H200 NVL`.
    pub name: String,
    /// Time-weighted mean power draw over the window, W.
    pub power_w_mean: f64,
    /// Highest power sample in the window, W.
    pub power_w_max: f64,
    /// Energy over the window (power integrated over time), J.
    pub energy_j: f64,
    /// Mean SM clock, MHz.
    pub sm_clock_mhz_mean: Option<f64>,
    /// Highest temperature, °C.
    pub temp_c_max: Option<f64>,
    /// Most memory used, MB.
    pub memory_used_mb: Option<f64>,
}
