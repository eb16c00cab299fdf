//! A session cell's record from its turns ([`Turn`]): `by_turn`, `sessions`, and the cell's
//! own latencies, tokens and prefix-cache expectation.

use crate::client::Failure;
use crate::plan::vocab::Slo;
use crate::results::slo::{self, Summaries};
use crate::results::stats::{Latencies, round};
use crate::results::{Record, SessionCounts, TurnStats};
use std::collections::BTreeMap;
use tokio::time::Instant;

/// What one turn saw.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Its place in the session, from 1.
    pub turn: u32,
    /// When it was sent.
    pub sent: Instant,
    /// Its first token-bearing chunk.
    pub first: Option<Instant>,
    /// Its last token-bearing chunk.
    pub last: Option<Instant>,
    /// Output tokens: the server's count, else one per chunk.
    pub tokens: u64,
    /// The prompt's length: the server's count, else the client's estimate.
    pub input: u64,
    /// Prompt tokens a perfect prefix cache holds: the previous turn's prompt and answer
    /// (the shared prefix on the first turn).
    pub reusable: u64,
    /// `usage.prompt_tokens` as the server counted it.
    pub usage_input: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, where the server gives it.
    pub cached: Option<u64>,
    /// The gaps between its token-bearing chunks, µs per token.
    pub gaps: Vec<u32>,
    /// The session it belongs to.
    pub session: u64,
    /// When it ended: finished, failed or cut at the close.
    pub end: Instant,
    /// The server it went to.
    pub endpoint: usize,
    /// The LoRA adapter it went to (its place in the mix).
    pub adapter: Option<usize>,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
}

/// What a session cell's turns are judged with besides themselves: its sessions' counts,
/// the servers' URLs, the SLO and the window's length.
pub struct SessionContext<'a> {
    /// Sessions begun inside the window.
    pub started: u64,
    /// Sessions that ran all their turns inside the window.
    pub completed: u64,
    /// The turns of the completed sessions.
    pub completed_turns: u64,
    /// Sessions ended early because their next turn would not fit `max_model_len`.
    pub at_max_len: u64,
    /// The servers' URLs (`by_endpoint` with more than one).
    pub endpoints: &'a [String],
    /// The LoRA adapters' names (`by_adapter`; empty without a mix).
    pub adapters: &'a [String],
    /// The workload's SLO.
    pub slo: &'a Slo,
    /// The window's length, seconds.
    pub window_s: f64,
}

/// The finished turns' distributions and token sums.
#[derive(Default)]
struct Sums {
    ttft: Latencies,
    tpot: Latencies,
    e2e: Latencies,
    itl: Latencies,
    tokens: u64,
    input: u64,
    reusable: u64,
}

/// Count every turn in `rec` (started, completed, errors), and sum the finished ones, turn
/// by turn.
fn sum<'a>(rec: &mut Record, turns: &'a [Turn]) -> (Sums, BTreeMap<u32, Vec<&'a Turn>>) {
    let mut s = Sums::default();
    let mut by: BTreeMap<u32, Vec<&Turn>> = BTreeMap::new();
    for t in turns {
        rec.requests_started += 1;
        if let Some(f) = &t.failure {
            rec.errors += 1;
            *rec.error_kinds.entry(f.kind()).or_default() += 1;
            continue;
        }
        rec.completed += 1;
        s.tokens += t.tokens;
        s.input += t.input;
        s.reusable += t.reusable;
        if let Some(v) = first_token_s(t) {
            s.ttft.record_s(v);
        }
        if let Some(v) = per_token_s(t) {
            s.tpot.record_s(v);
        }
        if let Some(v) = end_to_end_s(t) {
            s.e2e.record_s(v);
        }
        for &g in &t.gaps {
            s.itl.record_us(u64::from(g));
        }
        by.entry(t.turn).or_default().push(t);
    }
    (s, by)
}

/// Fill `rec` from the `turns` that ended in the window `seen` describes.
pub fn fill(rec: &mut Record, turns: &[Turn], seen: &SessionContext) {
    let window_s = seen.window_s;
    let slo = seen.slo;
    let (s, by) = sum(rec, turns);
    rec.by_turn = Some(
        by.iter()
            .map(|(&turn, ts)| turn_stats(turn, ts, slo))
            .collect(),
    );
    let completed = seen.completed;
    rec.sessions = Some(SessionCounts {
        started: seen.started,
        completed,
        turns_mean: (completed > 0)
            .then(|| round(seen.completed_turns as f64 / completed as f64, 2)),
        ended_at_max_len: seen.at_max_len,
    });
    rec.measured_s = Some(round(window_s, 3));
    let shares = shares(turns);
    rec.by_endpoint = shares.fields(seen.endpoints, window_s);
    rec.by_adapter = shares.adapter_fields(seen.adapters, window_s);
    rec.output_tokens = Some(s.tokens);
    rec.total_tok_s = (window_s > 0.0).then(|| round(s.tokens as f64 / window_s, 1));
    rec.ttft_ms = s.ttft.summary();
    rec.open.tpot_ms = s.tpot.summary();
    rec.open.e2e_ms = s.e2e.summary();
    // Every gap between tokens, as a load cell keeps them (TBT is the same distribution).
    rec.open.itl_ms = s.itl.summary();
    rec.tbt_ms = rec.open.itl_ms;
    judge(rec, turns, slo, window_s);
    per_request(rec, turns);
    rec.prefix_hit_expected = (s.input > 0).then(|| round(s.reusable as f64 / s.input as f64, 4));
    rec.server_prompt_tokens = turns
        .iter()
        .find(|t| t.turn == 1)
        .and_then(|t| t.usage_input);
}

/// 1000 ÷ TPOT p50 (of `rec`), unless most turns' tokens were delivered at once (no rate
/// then, and a warning).
fn per_request(rec: &mut Record, turns: &[Turn]) {
    let tpots: Vec<f64> = turns
        .iter()
        .filter_map(per_token_s)
        .map(|v| v * 1e3)
        .collect();
    let (speed, bursts) = crate::results::bursts::per_request(&tpots);
    rec.per_request_tok_s = speed
        .and(rec.open.tpot_ms)
        .filter(|t| t.p50 > 0.0)
        .map(|t| round(1000.0 / t.p50, 1));
    rec.warnings.extend(bursts);
}

/// Each server's and adapter's turns: started, output tokens of those that finished, TTFT.
fn shares(turns: &[Turn]) -> crate::results::Shares {
    let mut shares = crate::results::Shares::default();
    for t in turns {
        let ttft = first_token_s(t);
        shares.each(t.endpoint, t.adapter, |share| {
            share.requests += 1;
            if t.failure.is_none() {
                share.tokens += t.tokens as f64;
            }
            if let Some(v) = ttft {
                share.ttft.record_s(v);
            }
        });
    }
    shares
}

/// The cell against the SLO: every finished turn a request, the cell's percentiles.
fn judge(rec: &mut Record, turns: &[Turn], slo: &Slo, window_s: f64) {
    let requests: Vec<slo::RequestLatencies> = turns.iter().map(slo_request).collect();
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
fn slo_request(t: &Turn) -> slo::RequestLatencies {
    let mut itl: Vec<f64> = t.gaps.iter().map(|&g| f64::from(g) / 1e3).collect();
    itl.sort_by(f64::total_cmp);
    slo::RequestLatencies {
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
pub fn first_turn_reason(turns: &[Turn], context: u64) -> Option<String> {
    let t = turns
        .iter()
        .find(|t| t.turn == 1 && t.usage_input.is_some_and(|u| u != context))?;
    Some(format!(
        "prompt length mismatch: sent {context} tokens on the first turn, the server counted {}",
        t.usage_input.unwrap_or_default()
    ))
}
