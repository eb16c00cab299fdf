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
    /// The engine's TTFT p50 over the window: an estimate from its histogram's buckets,
    /// interpolated inside the bucket as Prometheus's `histogram_quantile` does.
    pub ttft_ms_p50: Option<f64>,
    /// The bucket the engine's TTFT p50 lies in: the true median is somewhere inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms_p50_bucket: Option<Bucket>,
    /// The engine's inter-token latency p50 over the window, estimated from its histogram
    /// as `ttft_ms_p50` is.
    pub itl_ms_p50: Option<f64>,
    /// The bucket the engine's inter-token latency p50 lies in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms_p50_bucket: Option<Bucket>,
    /// Whose metric names were read: `vllm`, `sglang`, `llamacpp` or `trtllm`.
    pub source: String,
}

/// A histogram bucket a percentile falls in, milliseconds: `(low_ms, high_ms]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bucket {
    /// Its lower bound (the previous bucket's upper bound; 0 for the first bucket).
    pub low_ms: f64,
    /// Its upper bound; `null` for the `+Inf` bucket.
    pub high_ms: Option<f64>,
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
