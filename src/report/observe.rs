//! The engine's and the GPUs' side of the report context (docs/reports.md): the server-side
//! cross-check of each measured cell (the engine's running and waiting requests, KV usage,
//! prefix-cache hits, preemptions, and its own TTFT and ITL beside the client's), the power
//! and tokens per joule of each cell with GPU telemetry, and the effective concurrency of a
//! decode cell whose engine ran fewer requests than were sent, and what limits the cells
//! diagnosed (`limit`).

use super::format::grouped;
use super::view::{CellStatus, CellView};
use crate::plan::Phase;
use crate::results::{Bucket, Record};
use schemars::JsonSchema;
use serde::Serialize;

/// What the engine and the GPUs showed.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ObservedView {
    /// Measured cells whose record has the engine's view, in cell order.
    pub server: Vec<ServerRow>,
    /// Measured cells with GPU telemetry, in cell order.
    pub gpu: Vec<GpuRow>,
    /// `No GPU telemetry …` when no record has any.
    pub gpu_note: Option<String>,
    /// Cells with a diagnosis (`limit`), in cell order.
    pub limits: Vec<LimitRow>,
    /// Measured cells whose engine drafted (speculative decoding), in cell order.
    #[serde(default)]
    pub spec: Vec<SpecRow>,
}

/// What limits one cell (the record's `limit`), for display.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LimitRow {
    /// The cell id.
    pub id: String,
    /// `scheduler`, `kv_cache`, `prefill_interference`, `compute`, `client`, or
    /// `not judged`.
    pub kind: String,
    /// The numbers it rests on, each with where it was read, in one line.
    pub evidence: String,
    /// The flag to turn, or what would let it be judged.
    pub suggestion: String,
}

/// One cell's speculative decoding, beside its speed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SpecRow {
    /// The cell id.
    pub id: String,
    /// Output tok/s of the cell.
    pub total_tok_s: Option<f64>,
    /// Accepted / drafted tokens.
    pub acceptance_rate: f64,
    /// Accepted tokens per draft, where the engine counts drafts.
    pub accepted_per_draft: Option<f64>,
    /// Drafted tokens per output token.
    pub drafted_per_output_token: Option<f64>,
    /// `vllm-metrics` or `llamacpp-timings`.
    pub source: String,
}

/// One cell as the engine saw it, beside the client's numbers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerRow {
    /// The cell id.
    pub id: String,
    /// Requests sent at once (0 for open-loop cells).
    pub concurrency: u32,
    /// The engine's mean running requests.
    pub running_mean: Option<f64>,
    /// Its most waiting requests.
    pub waiting_max: Option<f64>,
    /// Its highest KV usage, percent.
    pub kv_usage_pct: Option<f64>,
    /// Prefix-cache hit rate, percent.
    pub prefix_hit_pct: Option<f64>,
    /// What a perfect prefix cache would have reused of what the client sent, percent
    /// (with shared prefixes, and for session cells).
    pub prefix_hit_expected_pct: Option<f64>,
    /// Preemptions during the cell.
    pub preemptions: Option<f64>,
    /// The client's TTFT p50, ms.
    pub client_ttft_ms: Option<f64>,
    /// The engine's TTFT p50, ms: an estimate from its histogram's buckets.
    pub server_ttft_ms: Option<f64>,
    /// The bucket the engine's TTFT p50 lies in: `1,000–2,500 ms`.
    pub server_ttft_bucket: Option<String>,
    /// The client's time between tokens p50, ms (its ITL, else its TPOT, where a cell has
    /// no TBT: session cells).
    pub client_tbt_ms: Option<f64>,
    /// The engine's inter-token latency p50, ms: an estimate from its histogram's buckets.
    pub server_itl_ms: Option<f64>,
    /// The bucket the engine's inter-token latency p50 lies in.
    pub server_itl_bucket: Option<String>,
    /// Whose metric names: `vllm`, `sglang`, `llamacpp` or `trtllm`.
    pub source: String,
}

/// One cell's power.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GpuRow {
    /// The cell id.
    pub id: String,
    /// `8K`.
    pub context_label: String,
    /// Requests sent at once.
    pub concurrency: u32,
    /// GPUs seen.
    pub gpus: usize,
    /// Mean power over the window, all GPUs, W.
    pub power_w: f64,
    /// The GPUs' peak power samples added up, W.
    pub power_w_max: f64,
    /// Energy in the window, all GPUs, J.
    pub energy_j: f64,
    /// Output tok/s of the cell.
    pub total_tok_s: Option<f64>,
    /// Output tokens per joule.
    pub tokens_per_joule: Option<f64>,
}

/// `1,000–2,500 ms`, or `above 5,000 ms` for the `+Inf` bucket.
pub fn bucket_label(b: Bucket) -> String {
    let ms = |v: f64| grouped(v, if v < 10.0 && v.fract() != 0.0 { 1 } else { 0 });
    match b.high_ms {
        Some(h) => format!("{}–{} ms", ms(b.low_ms), ms(h)),
        None => format!("above {} ms", ms(b.low_ms)),
    }
}

fn measured(c: &CellView) -> Option<&Record> {
    matches!(c.status, CellStatus::Valid | CellStatus::Invalid)
        .then_some(c.record.as_ref())
        .flatten()
}

/// The view of `cells`.
pub fn observed(cells: &[CellView]) -> ObservedView {
    let mut v = ObservedView::default();
    for c in cells {
        let Some(r) = measured(c) else { continue };
        if let Some(s) = &r.server {
            v.server.push(ServerRow {
                id: c.id.clone(),
                concurrency: c.concurrency,
                running_mean: s.running_mean,
                waiting_max: s.waiting_max,
                kv_usage_pct: s.kv_usage_max.map(|k| k * 100.0),
                prefix_hit_pct: s.prefix_hit_rate.map(|h| h * 100.0),
                prefix_hit_expected_pct: r.prefix_hit_expected.map(|h| h * 100.0),
                preemptions: s.preemptions,
                client_ttft_ms: r.ttft_ms.map(|t| t.p50),
                server_ttft_ms: s.ttft_ms_p50,
                server_ttft_bucket: s.ttft_ms_p50_bucket.map(bucket_label),
                client_tbt_ms: r.tbt_ms.or(r.open.itl_ms).or(r.open.tpot_ms).map(|t| t.p50),
                server_itl_ms: s.itl_ms_p50,
                server_itl_bucket: s.itl_ms_p50_bucket.map(bucket_label),
                source: s.source.clone(),
            });
        }
        if let Some(l) = &r.limit {
            v.limits.push(LimitRow {
                id: c.id.clone(),
                kind: l.kind_str().to_string(),
                evidence: l.evidence_line(),
                suggestion: l.suggestion.clone(),
            });
        }
        if let Some(s) = &r.spec_decode {
            v.spec.push(SpecRow {
                id: c.id.clone(),
                total_tok_s: r.total_tok_s,
                acceptance_rate: s.acceptance_rate,
                accepted_per_draft: s.accepted_per_draft,
                drafted_per_output_token: s.drafted_per_output_token,
                source: s.source.as_str().into(),
            });
        }
        if let Some(g) = r.gpu.as_ref().filter(|g| !g.is_empty()) {
            v.gpu.push(GpuRow {
                id: c.id.clone(),
                context_label: c.context_label.clone(),
                concurrency: c.concurrency,
                gpus: g.len(),
                power_w: g.iter().map(|x| x.power_w_mean).sum(),
                power_w_max: g.iter().map(|x| x.power_w_max).sum(),
                energy_j: g.iter().map(|x| x.energy_j).sum(),
                total_tok_s: r.total_tok_s,
                tokens_per_joule: r.tokens_per_joule,
            });
        }
    }
    if v.gpu.is_empty() {
        v.gpu_note = Some("No GPU telemetry: `telemetry.gpu` is off, or it found no `nvidia-smi` on PATH and no DCGM exporter, so no power or tokens per joule.".into());
    }
    v
}

/// The engine's mean running requests of a decode cell when it differs from the requests
/// sent: below 90% of them, or above by more than half a request. One request at a time is
/// never flagged: its gaps between requests are not a scheduling limit.
pub fn effective_concurrency(r: &Record) -> Option<f64> {
    if r.phase != Phase::Decode || r.concurrency <= 1 {
        return None;
    }
    let running = r.server.as_ref()?.running_mean?;
    let c = f64::from(r.concurrency);
    (running < 0.9 * c || running > c + 0.5).then_some(running)
}
