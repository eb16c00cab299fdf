//! The record of a measured decode window: the slots' tallies merged ([`Totals`], merged by
//! the decode cell) as the record's fields, and the verdict with its reasons
//! (docs/results.md).

use super::verdict::{shared_reasons, verdict};
use crate::plan::Cell;
use crate::plan::Workload;
use crate::plan::vocab::{Slo, Validity};
use crate::results::slo::{self, Summaries};
use crate::results::stats::{Latencies, median, round};
use crate::results::{Record, Shares, TokenSource};
use std::collections::BTreeMap;
use std::time::Duration;

/// A cell's measurements, from all its slots.
#[derive(Debug, Default)]
pub struct Totals {
    /// Window length in seconds.
    pub length_s: f64,
    /// Output tokens inside the window (reconciled with final usage).
    pub tokens: f64,
    /// Time to first token of the cell's requests.
    pub ttft: Latencies,
    /// Time between tokens inside the window.
    pub tbt: Latencies,
    /// Per-request tok/s of the requests whose rate was measured.
    pub rates: Vec<f64>,
    /// Requests whose tokens were delivered at once, their rate not counted.
    pub bursts: u64,
    /// Requests in flight at some time during the window.
    pub started: u64,
    /// Requests whose last token arrived inside the window.
    pub completed: u64,
    /// Failed requests by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// Failed requests.
    pub errors: u64,
    /// Every token-bearing chunk carried usage.
    pub all_usage: bool,
    /// `usage.prompt_tokens` values that differ from the prompt sent.
    pub prompt_mismatches: u64,
    /// A `usage.prompt_tokens` the server reported.
    pub server_prompt_tokens: Option<u64>,
    /// Request-seconds in flight inside the window (the slots' sum).
    pub active_s: f64,
    /// Latencies of the requests that ended inside the window, for the SLO.
    pub judged: Vec<slo::RequestLatencies>,
    /// Requests, tokens and TTFT server by server.
    pub shares: Shares,
}

impl Totals {
    /// Time-weighted mean of requests in flight.
    pub fn avg_active(&self) -> f64 {
        if self.length_s > 0.0 {
            self.active_s / self.length_s
        } else {
            0.0
        }
    }

    /// Requests whose rate was measured (not delivered at once).
    pub fn measured_rates(&self) -> usize {
        self.rates.len()
    }

    /// Median per-request tok/s, none when most requests were delivered at once.
    pub fn per_request(&mut self) -> Option<f64> {
        // Most requests delivered at once: the client did not see the generation speed.
        if self.bursts as usize > self.rates.len() {
            return None;
        }
        median(&mut self.rates)
    }
}

/// The record of a measured window, with its verdict.
pub fn fill(
    mut rec: Record,
    w: &mut Totals,
    cell: &Cell,
    window: Option<Duration>,
    workload: &Workload,
) -> Record {
    let validity = &workload.validity;
    let len = w.length_s;
    rec.measured_s = Some(round(len, 3));
    rec.output_tokens = Some(w.tokens.round() as u64);
    rec.token_source = Some(if w.all_usage {
        TokenSource::Usage
    } else {
        TokenSource::Chunks
    });
    rec.total_tok_s = (len > 0.0).then(|| round(w.tokens / len, 1));
    rec.per_request_tok_s = w.per_request().map(|v| round(v, 1));
    rec.warnings
        .extend(crate::results::bursts::delivered_at_once(
            w.bursts,
            w.measured_rates(),
        ));
    rec.avg_active = Some(round(w.avg_active(), 2));
    rec.requests_started = w.started;
    rec.completed = w.completed;
    rec.errors = w.errors;
    rec.error_kinds = w.error_kinds.clone();
    rec.ttft_ms = w.ttft.summary();
    rec.tbt_ms = w.tbt.summary();
    rec.server_prompt_tokens = w.server_prompt_tokens;
    judge(&mut rec, w, &workload.slo);
    let reasons = reasons(&rec, w, cell, window, validity);
    verdict(rec, w.errors, w.started.max(1), &reasons)
}

/// TPOT and E2E of the requests that finished inside the window, and the verdict against
/// the SLO (ITL is the window's TBT).
fn judge(rec: &mut Record, w: &Totals, slo: &Slo) {
    let (mut tpot, mut e2e) = (Latencies::default(), Latencies::default());
    for r in w.judged.iter().filter(|r| r.ok) {
        if let Some(v) = r.tpot {
            tpot.record_s(v / 1e3);
        }
        if let Some(v) = r.e2e {
            e2e.record_s(v / 1e3);
        }
    }
    rec.open.tpot_ms = tpot.summary();
    rec.open.e2e_ms = e2e.summary();
    let s = Summaries {
        ttft: rec.ttft_ms,
        tpot: rec.open.tpot_ms,
        itl: rec.tbt_ms,
        e2e: rec.open.e2e_ms,
    };
    if let Some(v) = slo::judge(slo, &w.judged, &s, w.length_s) {
        rec.open.goodput_rps = Some(round(v.goodput_rps, 3));
        rec.open.slo_fraction = Some(round(v.fraction, 4));
        rec.open.slo_met = Some(v.met);
    }
}

/// Why the window is not valid, if it is not (docs/results.md, verdict).
fn reasons(
    rec: &Record,
    w: &Totals,
    cell: &Cell,
    window: Option<Duration>,
    validity: &Validity,
) -> Vec<String> {
    let len = w.length_s;
    let mut reasons = Vec::new();
    if w.prompt_mismatches > 0 {
        reasons.push(format!(
            "prompt length mismatch: sent {} tokens, the server counted {} ({} requests)",
            cell.prompt_tokens,
            w.server_prompt_tokens.unwrap_or_default(),
            w.prompt_mismatches
        ));
    }
    let c = f64::from(cell.concurrency);
    if w.avg_active() < validity.min_active_fraction * c {
        reasons.push(format!(
            "average active requests {:.2} < {} x {}",
            w.avg_active(),
            validity.min_active_fraction,
            cell.concurrency
        ));
    }
    if let Some(d) = window.map(|d| d.as_secs_f64())
        && len + 1e-3 < d
    {
        reasons.push(format!("window {len:.3} s shorter than {d} s"));
    }
    if w.tokens <= 0.0 {
        reasons.push("no tokens inside the window".into());
    }
    reasons.extend(shared_reasons(rec, w.errors, w.started, validity));
    reasons
}
