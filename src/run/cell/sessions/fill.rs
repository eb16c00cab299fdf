//! A session cell's record from its turns: `by_turn`, `sessions`, and the cell's own
//! latencies, tokens and prefix-cache expectation.

use super::{Shared, Turn};
use crate::plan::vocab::Slo;
use crate::results::slo::{self, Summaries};
use crate::results::stats::{Latencies, round};
use crate::results::{Record, SessionCounts, TurnStats};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

/// Fill `rec` from the `turns` that ended in a window of `window_s` seconds.
pub(super) fn fill(rec: &mut Record, turns: &[Turn], s: &Shared, window_s: f64) {
    let (mut ttft, mut tpot, mut e2e, mut itl) = (
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
    );
    let slo = &s.cx.workload.slo;
    let mut by: BTreeMap<u32, Vec<&Turn>> = BTreeMap::new();
    let (mut tokens, mut input, mut reusable) = (0u64, 0u64, 0u64);
    for t in turns {
        rec.requests_started += 1;
        if let Some(f) = &t.failure {
            rec.errors += 1;
            *rec.error_kinds.entry(f.kind()).or_default() += 1;
            continue;
        }
        rec.completed += 1;
        tokens += t.tokens;
        input += t.input;
        reusable += t.reusable;
        if let Some(v) = first_token_s(t) {
            ttft.record_s(v);
        }
        if let Some(v) = per_token_s(t) {
            tpot.record_s(v);
        }
        if let Some(v) = end_to_end_s(t) {
            e2e.record_s(v);
        }
        for &g in &t.gaps {
            itl.record_us(u64::from(g));
        }
        by.entry(t.turn).or_default().push(t);
    }
    rec.by_turn = Some(
        by.iter()
            .map(|(&turn, ts)| turn_stats(turn, ts, slo))
            .collect(),
    );
    let completed = s.completed.load(Relaxed);
    rec.sessions = Some(SessionCounts {
        started: s.started.load(Relaxed),
        completed,
        turns_mean: (completed > 0)
            .then(|| round(s.completed_turns.load(Relaxed) as f64 / completed as f64, 2)),
        ended_at_max_len: s.at_max_len.load(Relaxed),
    });
    rec.measured_s = Some(round(window_s, 3));
    rec.by_endpoint = shares(turns).fields(&s.cx.client.endpoints(), window_s);
    rec.output_tokens = Some(tokens);
    rec.total_tok_s = (window_s > 0.0).then(|| round(tokens as f64 / window_s, 1));
    rec.ttft_ms = ttft.summary();
    let tpot_all = tpot.summary();
    rec.open.tpot_ms = tpot_all;
    rec.open.e2e_ms = e2e.summary();
    // Every gap between tokens, as a load cell keeps them (TBT is the same distribution).
    rec.open.itl_ms = itl.summary();
    rec.tbt_ms = rec.open.itl_ms;
    judge(rec, turns, slo, window_s);
    // 1000 ÷ TPOT p50, unless most turns' tokens were delivered at once (no rate then).
    let tpots: Vec<f64> = turns
        .iter()
        .filter_map(per_token_s)
        .map(|v| v * 1e3)
        .collect();
    let (speed, bursts) = crate::results::bursts::per_request(&tpots);
    rec.per_request_tok_s = speed
        .and(tpot_all)
        .filter(|t| t.p50 > 0.0)
        .map(|t| round(1000.0 / t.p50, 1));
    rec.warnings.extend(bursts);
    rec.prefix_hit_expected = (input > 0).then(|| round(reusable as f64 / input as f64, 4));
    rec.server_prompt_tokens = turns
        .iter()
        .find(|t| t.turn == 1)
        .and_then(|t| t.usage_input);
}

/// Each server's turns: started, output tokens of those that finished, TTFT.
fn shares(turns: &[Turn]) -> crate::results::Shares {
    let mut shares = crate::results::Shares::default();
    for t in turns {
        let share = shares.of(t.endpoint);
        share.requests += 1;
        if t.failure.is_none() {
            share.tokens += t.tokens as f64;
        }
        if let Some(v) = first_token_s(t) {
            share.ttft.record_s(v);
        }
    }
    shares
}

/// The cell against the SLO: every finished turn a request, the cell's percentiles.
fn judge(rec: &mut Record, turns: &[Turn], slo: &Slo, window_s: f64) {
    let requests: Vec<slo::Request> = turns.iter().map(slo_request).collect();
    let summaries = Summaries {
        ttft: rec.ttft_ms,
        tpot: rec.open.tpot_ms,
        itl: rec.open.itl_ms,
        e2e: rec.open.e2e_ms,
    };
    if let Some(v) = slo::judge(slo, &requests, &summaries, window_s) {
        rec.open.goodput_rps = Some(round(v.goodput_rps, 3));
        rec.open.slo_fraction = Some(round(v.fraction, 4));
        rec.open.slo_met = Some(v.met);
    }
}

fn end_to_end_s(t: &Turn) -> Option<f64> {
    Some((t.last? - t.sent).as_secs_f64())
}

/// A turn as the SLO judges a request (milliseconds).
fn slo_request(t: &Turn) -> slo::Request {
    let mut itl: Vec<f64> = t.gaps.iter().map(|&g| f64::from(g) / 1e3).collect();
    itl.sort_by(f64::total_cmp);
    slo::Request {
        ok: t.failure.is_none() && t.tokens > 0,
        ttft: first_token_s(t).map(|v| v * 1e3),
        tpot: per_token_s(t).map(|v| v * 1e3),
        e2e: end_to_end_s(t).map(|v| v * 1e3),
        itl,
    }
}

fn first_token_s(t: &Turn) -> Option<f64> {
    Some((t.first? - t.sent).as_secs_f64())
}

/// Time per output token after the first.
fn per_token_s(t: &Turn) -> Option<f64> {
    let (first, last) = (t.first?, t.last?);
    (t.tokens > 1).then(|| (last - first).as_secs_f64() / (t.tokens - 1) as f64)
}

fn turn_stats(turn: u32, ts: &[&Turn], slo: &Slo) -> TurnStats {
    let (mut ttft, mut tpot) = (Latencies::default(), Latencies::default());
    for t in ts {
        if let Some(v) = first_token_s(t) {
            ttft.record_s(v);
        }
        if let Some(v) = per_token_s(t) {
            tpot.record_s(v);
        }
    }
    let n = ts.len() as f64;
    let mean = |v: &mut dyn Iterator<Item = u64>| {
        let (sum, count) = v.fold((0u64, 0u64), |(s, c), x| (s + x, c + 1));
        (count > 0).then(|| round(sum as f64 / count as f64, 1))
    };
    TurnStats {
        turn,
        requests: ts.len() as u64,
        input_tokens_mean: (n > 0.0)
            .then(|| round(ts.iter().map(|t| t.input).sum::<u64>() as f64 / n, 1)),
        cached_tokens_mean: mean(&mut ts.iter().filter_map(|t| t.cached)),
        ttft_ms: ttft.summary(),
        tpot_ms: tpot.summary(),
        slo_fraction: (!slo.is_empty() && !ts.is_empty()).then(|| {
            let good = ts.iter().filter(|t| slo_request(t).good(slo)).count();
            round(good as f64 / ts.len() as f64, 4)
        }),
    }
}

/// The first turn's prompt must be exactly the context, as the server counts it.
pub(super) fn first_turn_reason(turns: &[Turn], context: u64) -> Option<String> {
    let t = turns
        .iter()
        .find(|t| t.turn == 1 && t.usage_input.is_some_and(|u| u != context))?;
    Some(format!(
        "prompt length mismatch: sent {context} tokens on the first turn, the server counted {}",
        t.usage_input.unwrap_or_default()
    ))
}
