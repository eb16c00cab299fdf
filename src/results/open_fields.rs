//! The open-loop fields of a result record (docs/results.md), flattened into it: a load cell's
//! offered and achieved rates and its latency distributions, the goodput of any cell judged
//! against an `slo`, and a capacity search's summary. All are absent (null) where not
//! measured, so records of older runs read back unchanged.

use super::stats::Summary;
use crate::spec::Rate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Open-loop measurements, SLO verdicts and capacity results of one record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenFields {
    /// Requests per second offered (`inf`: all at once): a load cell's rate, a replay cell's
    /// (requests − 1) / the trace's span.
    #[serde(default)]
    pub rate_offered: Option<Rate>,
    /// Requests per second actually sent: (sent − 1) / (last send − first send).
    #[serde(default)]
    pub rate_sent: Option<f64>,
    /// Completed requests / the window from the first arrival to the later of the last
    /// request's end and the end of the offered period (requests / `rate_offered`).
    #[serde(default)]
    pub rate_achieved: Option<f64>,
    /// Why this rate saturated the server (`0.42 req/s completed of 1.00 req/s sent`, or the
    /// client's queue growing); absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturated: Option<String>,
    /// When the measured window began (the first scheduled arrival), RFC 3339 UTC to the
    /// millisecond; with `measured_s`, the window `merge` compares between the shards of a
    /// split load cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_started_at: Option<String>,
    /// How arrivals were drawn: `poisson`, `gamma` or `constant`; `trace` for a replay.
    #[serde(default)]
    pub arrivals: Option<String>,
    /// Coefficient of variation of the measured gaps between sends (1 for Poisson).
    #[serde(default)]
    pub arrival_cv: Option<f64>,
    /// Most requests in flight at once.
    #[serde(default)]
    pub peak_active: Option<u32>,
    /// Mean prompt length of the cell's requests that did not fail (each exact; drawn when
    /// `input` spreads).
    #[serde(default)]
    pub input_tokens_mean: Option<f64>,
    /// Mean output length of its finished requests.
    #[serde(default)]
    pub output_tokens_mean: Option<f64>,
    /// Time per output token, per request: (last token − first token) / (tokens − 1).
    #[serde(default)]
    pub tpot_ms: Option<Summary>,
    /// Inter-token latency: every gap between token-bearing chunks (divided by the tokens
    /// of the later chunk).
    #[serde(default)]
    pub itl_ms: Option<Summary>,
    /// End-to-end latency: from the send to the last token.
    #[serde(default)]
    pub e2e_ms: Option<Summary>,
    /// Time an arrival waited in the client for a `max_concurrency` slot (not in TTFT).
    #[serde(default)]
    pub queue_ms: Option<Summary>,
    /// How late each send was against its scheduled arrival (after any queue wait).
    #[serde(default)]
    pub send_lateness_ms: Option<Summary>,
    /// Requests per second that met every objective of the `slo` (vLLM's goodput).
    #[serde(default)]
    pub goodput_rps: Option<f64>,
    /// The fraction of finished requests that met every objective.
    #[serde(default)]
    pub slo_fraction: Option<f64>,
    /// Whether every objective held at its percentile over the cell.
    #[serde(default)]
    pub slo_met: Option<bool>,
    /// What a capacity summary searched: `concurrency` or `rate`.
    #[serde(default)]
    pub search: Option<String>,
    /// A capacity summary: the highest value that met the SLO (null: none did).
    #[serde(default)]
    pub capacity: Option<f64>,
    /// A capacity summary: how `capacity` bounds the truth — `exact` (a higher probe
    /// failed), `at_least` (the search's `max` still met the SLO) or `below_min` (not even
    /// its `min` did). Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bound: Option<CapacityBound>,
}

/// How a capacity search's result bounds the true capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityBound {
    /// Within `precision` of the capacity: the next value up failed.
    Exact,
    /// The search's `max` met the SLO: the capacity is that or more.
    AtLeast,
    /// Not even the search's `min` met the SLO: the capacity is below it.
    BelowMin,
}
