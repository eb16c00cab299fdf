//! The `results` of a Benchmark Report: requests (sent, failed, not completed; the input
//! and output lengths per request), latencies (TTFT, TPOT, ITL, request latency) and rates
//! (output tokens and requests completed per second), each from what the record truly holds
//! for its phase — and `session_performance` for a session cell.

use super::{put, scalar, stats};
use crate::interop::PeerBenchmark;
use crate::plan::Phase;
use crate::results::Record;
use serde_json::{Map, Value, json};

/// Lengths per request as `Statistics`: the mean, with the least and the most when known.
fn lengths(mean: f64, range: Option<(f64, f64)>) -> Value {
    let mut v = scalar(mean, "count");
    if let Some((min, max)) = range {
        v["min"] = json!(min);
        v["max"] = json!(max);
    }
    v
}

/// A session cell's mean prompt length: its turns' means weighted by their requests.
pub(super) fn session_input_mean(r: &Record) -> Option<f64> {
    let turns = r.by_turn.as_ref()?;
    let (sum, n) = turns
        .iter()
        .fold((0.0, 0u64), |(s, n), t| match t.input_tokens_mean {
            Some(m) => (s + m * t.requests as f64, n + t.requests),
            None => (s, n),
        });
    (n > 0).then(|| sum / n as f64)
}

/// Prompt tokens per request. Prefill and decode prompts are exactly `prompt_tokens`.
fn input_length(r: &Record, peer: Option<&PeerBenchmark>) -> Option<Value> {
    if r.token_source == Some(crate::results::TokenSource::Imported) {
        let b = peer;
        let mean = r.open.input_tokens_mean?;
        return Some(lengths(mean, b.and_then(|b| b.input_tokens_range)));
    }
    let exact = r.prompt_tokens as f64;
    match r.phase {
        Phase::Prefill | Phase::Decode => Some(lengths(exact, Some((exact, exact)))),
        Phase::Sessions => session_input_mean(r).map(|m| lengths(m, None)),
        _ => r.open.input_tokens_mean.map(|m| lengths(m, None)),
    }
}

/// Output tokens per finished request. A prefill request asks for one token and is counted
/// on its arrival; a decode window's tokens belong to requests it cut at both ends, so a
/// decode cell's lengths are not known (left out).
fn output_length(r: &Record, peer: Option<&PeerBenchmark>) -> Option<Value> {
    if r.token_source == Some(crate::results::TokenSource::Imported) {
        let mean = r.open.output_tokens_mean?;
        return Some(lengths(mean, peer.and_then(|b| b.output_tokens_range)));
    }
    match r.phase {
        Phase::Prefill => (r.completed > 0).then(|| lengths(1.0, Some((1.0, 1.0)))),
        Phase::Decode | Phase::Capacity => None,
        // Every finished turn's tokens, over the finished turns.
        Phase::Sessions => r
            .output_tokens
            .filter(|_| r.completed > 0)
            .map(|t| lengths(t as f64 / r.completed as f64, None)),
        Phase::Load | Phase::Replay => r.open.output_tokens_mean.map(|m| lengths(m, None)),
    }
}

/// Requests completed per second: the achieved rate of an open-loop or imported cell, the
/// window's completions per second of a decode or session cell; none for a prefill cell
/// (its requests are sent one after another, cold: no rate was measured).
fn request_rate(r: &Record) -> Option<f64> {
    match r.phase {
        Phase::Prefill | Phase::Capacity => None,
        Phase::Load | Phase::Replay => r.open.rate_achieved,
        Phase::Decode | Phase::Sessions => r
            .measured_s
            .filter(|s| *s > 0.0)
            .map(|s| r.completed as f64 / s),
    }
}

fn requests(r: &Record, peer: Option<&PeerBenchmark>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("total".into(), json!(r.requests_started));
    m.insert("failures".into(), json!(r.errors));
    let incomplete = r.requests_started.saturating_sub(r.completed + r.errors);
    m.insert("incomplete".into(), json!(incomplete));
    put(&mut m, "input_length", input_length(r, peer));
    put(&mut m, "output_length", output_length(r, peer));
    m
}

fn latency(r: &Record) -> Map<String, Value> {
    let mut m = Map::new();
    put(
        &mut m,
        "time_to_first_token",
        r.ttft_ms.map(|s| stats(&s, "ms")),
    );
    put(
        &mut m,
        "time_per_output_token",
        r.open.tpot_ms.map(|s| stats(&s, "ms/token")),
    );
    put(
        &mut m,
        "inter_token_latency",
        r.open.itl_ms.or(r.tbt_ms).map(|s| stats(&s, "ms/token")),
    );
    put(
        &mut m,
        "request_latency",
        r.open.e2e_ms.map(|s| stats(&s, "ms")),
    );
    m
}

/// A session cell's sessions: begun in the window, and those that ran all their turns in
/// it; its turns as the events.
fn sessions(r: &Record) -> Option<Value> {
    let s = r.sessions?;
    Some(
        json!({"sessions": {"total": s.started, "succeeded": s.completed,
                             "total_events": r.requests_started,
                             "total_events_completed": r.completed}}),
    )
}

/// The `results` of cell `r`.
pub(super) fn results(r: &Record, peer: Option<&PeerBenchmark>) -> Value {
    let mut throughput = Map::new();
    put(
        &mut throughput,
        "output_token_rate",
        r.total_tok_s.map(|v| scalar(v, "tokens/s")),
    );
    put(
        &mut throughput,
        "request_rate",
        request_rate(r).map(|v| scalar(v, "queries/s")),
    );
    let mut v = json!({"request_performance": {"aggregate": {
        "requests": requests(r, peer), "latency": latency(r), "throughput": throughput}}});
    if let Some(s) = sessions(r) {
        v["session_performance"] = s;
    }
    v
}
