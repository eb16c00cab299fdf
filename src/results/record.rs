//! The result record (docs/results.md): one JSON object per cell in `results.jsonl`.

use super::stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The record's schema tag.
pub const RESULT_SCHEMA: &str = "benchspec.result.v1";

/// A cell's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured and within the validity thresholds.
    Valid,
    /// Measured, but a threshold was missed (see `reasons`).
    Invalid,
    /// Could not be measured.
    Failed,
    /// In the plan, never sent.
    Skipped,
}

/// Where output token counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenSource {
    /// The server's cumulative usage in every chunk.
    Usage,
    /// One per token-bearing chunk, reconciled with the final usage.
    Chunks,
    /// Read from a peer tool's result file (`benchspec import`): the peer's own counts.
    Imported,
}

/// One cell's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "benchspec result record v1")]
pub struct Record {
    /// Always [`RESULT_SCHEMA`].
    pub schema: String,
    /// `prefill/8K` or `decode/8K/c4`; `<variant>/decode/8K/c4` in a run of engine variants.
    pub cell: String,
    /// The engine variant the cell was measured on (`engine.variants`); null without variants.
    #[serde(default)]
    pub variant: Option<String>,
    /// `prefill` or `decode`.
    pub phase: crate::plan::Phase,
    /// The context length in tokens.
    pub context: u64,
    /// Simultaneous requests.
    pub concurrency: u32,
    /// The verdict.
    pub status: Status,
    /// Why the cell is invalid or failed.
    pub reasons: Vec<String>,
    /// When the cell started (UTC, RFC 3339).
    pub started_at: String,
    /// The measured window (decode) or the request time (prefill), seconds.
    pub measured_s: Option<f64>,
    /// The exact prompt length sent.
    pub prompt_tokens: u64,
    /// Output tokens inside the window.
    pub output_tokens: Option<u64>,
    /// Where token counts come from.
    pub token_source: Option<TokenSource>,
    /// Output tokens in the window / window length.
    pub total_tok_s: Option<f64>,
    /// Median over requests of their in-window tokens / in-window generation time.
    pub per_request_tok_s: Option<f64>,
    /// Time-weighted mean of requests in flight during the window.
    pub avg_active: Option<f64>,
    /// Requests in flight at some time during the window.
    pub requests_started: u64,
    /// Requests whose last token arrived inside the window.
    pub completed: u64,
    /// Failed requests.
    pub errors: u64,
    /// Failed requests by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// Time to first token.
    pub ttft_ms: Option<Summary>,
    /// Time between tokens.
    pub tbt_ms: Option<Summary>,
    /// Prompt tokens / TTFT of a cold request (prefill cells); of several, their median.
    pub prefill_tok_s: Option<f64>,
    /// The spec's labels.
    pub labels: BTreeMap<String, String>,
    /// `usage.prompt_tokens` as the server reported it.
    pub server_prompt_tokens: Option<u64>,
    /// The measuring client's own footprint during the window (decode cells).
    #[serde(default)]
    pub client: Option<ClientUse>,
    /// The engine's own view of the cell, from its `/metrics`.
    #[serde(default)]
    pub server: Option<super::ServerUse>,
    /// Each GPU during the window, from `nvidia-smi` or a DCGM exporter.
    #[serde(default)]
    pub gpu: Option<Vec<super::GpuUse>>,
    /// Output tokens in the window / the GPUs' energy in it.
    #[serde(default)]
    pub tokens_per_joule: Option<f64>,
    /// US dollars per million output tokens: `hardware.cost_per_hour` / 3600 / `total_tok_s`
    /// × 10⁶ (absent without a cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_mtok: Option<f64>,
    /// Each server's share when requests are spread over several (replicas, endpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_endpoint: Option<Vec<super::EndpointUse>>,
    /// How many times the cell was measured, when more than once.
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Half-widths of the 95% confidence intervals (Student t) of the means, keyed like the
    /// metrics: `total_tok_s`, `per_request_tok_s`, `ttft_ms_p50`, `tbt_ms_p50`,
    /// `prefill_tok_s`; with repeats, those fields hold the means (but `prefill_tok_s` the
    /// median of a prefill cell's cold requests).
    #[serde(default)]
    pub ci95: Option<BTreeMap<String, f64>>,
    /// Each repeat's value, keyed like `ci95`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_repeat: Option<BTreeMap<String, Vec<f64>>>,
    /// What is worth knowing about the cell but does not make it invalid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The fraction of the window's prompt tokens a perfect prefix cache would reuse, from
    /// what the client sent (primes excluded), with `workload.prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_expected: Option<f64>,
    /// A session cell's turns: requests, prompt length and latencies per turn index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_turn: Option<Vec<super::TurnStats>>,
    /// A session cell's sessions: started, completed, turns per completed session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<super::SessionCounts>,
    /// A replay cell's trace: its file, requests, speed, and offered against achieved
    /// requests second by second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<super::TraceInfo>,
    /// Open-loop measurements, SLO verdicts and capacity results.
    #[serde(flatten)]
    pub open: super::open::OpenFields,
}

/// What the measuring client itself used during a decode window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientUse {
    /// CPU time of the client's threads / (window length × `threads`): near 1, the client
    /// itself was the bottleneck.
    pub cpu_busy: f64,
    /// The client's worker threads (`--client-threads`, else one per core).
    pub threads: u32,
    /// Peak resident memory of the benchspec process during the cell, MB.
    pub rss_mb: Option<f64>,
    /// CPU seconds of the client's threads during the window.
    pub cpu_s: f64,
}

/// The JSON Schema of a result record, as committed in `schemas/result-v1.schema.json`.
pub fn record_schema_text() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<Record>().to_value();
    if let serde_json::Value::Object(map) = &mut schema {
        map.insert(
            "description".into(),
            "One line of results.jsonl: the measurement of one cell.".into(),
        );
    }
    // `{:#}` is `to_string_pretty`, and cannot fail.
    format!("{schema:#}\n")
}

impl TokenSource {
    /// `usage`, `chunks` or `imported`, as records write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Usage => "usage",
            TokenSource::Chunks => "chunks",
            TokenSource::Imported => "imported",
        }
    }
}

impl Status {
    /// `valid`, `invalid`, `failed` or `skipped`, as records write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

impl Record {
    /// An empty record for `cell`, to be filled in.
    pub fn new(
        cell: &crate::plan::Cell,
        started_at: String,
        labels: &BTreeMap<String, String>,
    ) -> Record {
        Record {
            schema: RESULT_SCHEMA.to_string(),
            cell: cell.id.clone(),
            variant: cell.variant.clone(),
            phase: cell.phase(),
            context: cell.context,
            concurrency: cell.concurrency,
            status: Status::Failed,
            reasons: Vec::new(),
            started_at,
            measured_s: None,
            prompt_tokens: cell.prompt_tokens,
            output_tokens: None,
            token_source: None,
            total_tok_s: None,
            per_request_tok_s: None,
            avg_active: None,
            requests_started: 0,
            completed: 0,
            errors: 0,
            error_kinds: BTreeMap::new(),
            ttft_ms: None,
            tbt_ms: None,
            prefill_tok_s: None,
            labels: labels.clone(),
            server_prompt_tokens: None,
            client: None,
            server: None,
            gpu: None,
            tokens_per_joule: None,
            usd_per_mtok: None,
            by_endpoint: None,
            repeats: None,
            ci95: None,
            per_repeat: None,
            warnings: Vec::new(),
            prefix_hit_expected: None,
            by_turn: None,
            sessions: None,
            trace: None,
            open: super::open::OpenFields::default(),
        }
    }
}

/// Now as `2026-12-02T10:00:00Z`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Unix seconds as RFC 3339 UTC (civil-from-days, proleptic Gregorian).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_205_600), "2026-12-02T10:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
