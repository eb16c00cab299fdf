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
    /// Each LoRA adapter's share when requests are spread over adapters
    /// (`workload.adapters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_adapter: Option<Vec<super::AdapterUse>>,
    /// The engine's LoRA figures over the window (vLLM's `vllm:lora_requests_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<super::LoraUse>,
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
    /// What limits the cell, from the engine's metrics and the client's (capacity probes,
    /// saturated load cells, the last decode cell before a throughput plateau); absent where
    /// not judged for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<super::limit::Limit>,
    /// The images the cell's requests carried (`workload.images`), and the server's prompt
    /// tokens with them against the text's without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::ImageUse>,
    /// Speculative decoding over the window: drafted and accepted tokens and their ratios,
    /// from the server's metrics or its responses' timings; absent when nothing was drafted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<super::SpecDecode>,
    /// Open-loop measurements, SLO verdicts and capacity results.
    #[serde(flatten)]
    pub open: super::open_fields::OpenFields,
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
            by_adapter: None,
            lora: None,
            repeats: None,
            ci95: None,
            per_repeat: None,
            warnings: Vec::new(),
            prefix_hit_expected: None,
            by_turn: None,
            sessions: None,
            trace: None,
            limit: None,
            images: None,
            spec_decode: None,
            open: super::open_fields::OpenFields::default(),
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

/// Unix seconds (with a fraction) as RFC 3339 UTC to the millisecond:
/// `2026-12-02T10:00:00.250Z`.
pub fn rfc3339_ms(unix_s: f64) -> String {
    let ms = (unix_s.max(0.0) * 1e3).round() as u64;
    let whole = rfc3339(ms / 1000);
    format!("{}.{:03}Z", whole.trim_end_matches('Z'), ms % 1000)
}

/// An RFC 3339 instant (`2026-12-07T10:00:00Z`, `2026-12-07T12:00:00.5+02:00`) as Unix
/// seconds; `None` for anything else (an offset is required: a time without one means a
/// different instant on each machine).
pub fn unix_of_rfc3339(text: &str) -> Option<f64> {
    let t = text.trim();
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| digits_of(t.get(r)?);
    let shape = b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[13] == b':' && b[16] == b':';
    if !shape || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let rest = &t[19..];
    let zone_at = rest.find(['Z', 'z', '+', '-'])?;
    let (frac, zone) = rest.split_at(zone_at);
    let frac: f64 = match frac.strip_prefix('.') {
        None if frac.is_empty() => 0.0,
        Some(f) if !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()) => {
            format!("0.{f}").parse().ok()?
        }
        _ => return None,
    };
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let z = zone.as_bytes();
            let sign = if z[0] == b'-' { -1 } else { 1 };
            let (oh, om) = (digits_of(zone.get(1..3)?)?, digits_of(zone.get(4..)?)?);
            if z.len() != 6 || z[3] != b':' || oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let days_in = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let fits = (1..=12).contains(&mo) && d >= 1 && d <= days_in[(mo - 1) as usize];
    if !fits || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from civil (proleptic Gregorian), the inverse of [`rfc3339`].
    let (y2, m2) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * m2 + 2) / 5 + d - 1;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + s - offset) as f64 + frac)
}

/// A run of ASCII digits as a number.
fn digits_of(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::{rfc3339, rfc3339_ms, unix_of_rfc3339};

    /// Instants worked by hand from `rfc3339(1_796_205_600) == 2026-12-02T10:00:00Z`
    /// (+5 days = +432,000 s).
    #[test]
    fn instants_read_back() {
        let at = Some(1_796_637_600.0);
        assert_eq!(unix_of_rfc3339("2026-12-07T10:00:00Z"), at);
        assert_eq!(unix_of_rfc3339("2026-12-07T12:00:00+02:00"), at);
        assert_eq!(unix_of_rfc3339("2026-12-07T05:30:00-04:30"), at);
        assert_eq!(
            unix_of_rfc3339("2026-12-07 10:00:00.250Z"),
            Some(1_796_637_600.25)
        );
        assert_eq!(unix_of_rfc3339("2000-02-29T00:00:00Z"), Some(951_782_400.0));
        for bad in [
            "2026-12-07T10:00:00",
            "2026-12-07",
            "2026-13-07T10:00:00Z",
            "2026-12-07T24:00:00Z",
            "2026-12-07T10:00:00+2:00",
            "2026-12-07T10:00:00.Z",
            "tomorrow",
            "2026-12-07T10:00:00Zjunk",
        ] {
            assert_eq!(unix_of_rfc3339(bad), None, "{bad}");
        }
        assert_eq!(rfc3339_ms(1_796_637_600.25), "2026-12-07T10:00:00.250Z");
        assert_eq!(
            unix_of_rfc3339(&rfc3339_ms(1_796_637_600.007)),
            Some(1_796_637_600.007)
        );
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_205_600), "2026-12-02T10:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
