//! What limits a cell (docs/results.md, `limit`): a diagnosis from the engine's own metrics
//! (the record's `server`: running, waiting, KV usage, preemptions) and the client's (TTFT,
//! TPOT, its self-check `client.cpu_busy`), with the numbers it rests on and the launch flag
//! to turn. A kind is named only when its evidence is there; otherwise `kind` is null and the
//! evidence says what was missing — a guessed diagnosis would be a false answer.
//!
//! Which records are judged, and against which neighbour, is [`super::limit_cells`]'s; this
//! file is the rules alone, with no I/O.

use super::Record;
mod knobs;
pub use knobs::Knobs;
use knobs::{front_end, suggestion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// KV-cache usage at or above this is a full cache.
pub const KV_FULL: f64 = 0.95;
/// TPOT at this many times the lower step's or more is TPOT rising with the batch; below it,
/// TPOT holds.
pub const TPOT_RISE: f64 = 1.2;
/// TTFT at this many times a cold request's or more is TTFT dominated by waiting (more than
/// half of it is not the prefill itself).
pub const TTFT_QUEUED: f64 = 2.0;
/// TTFT's wait (TTFT p50 − a cold request's) must also be this many ms or more for prefill
/// interference: a few milliseconds of wait, however many times a fast prefill, is no limit
/// a user sees.
pub const QUEUE_FLOOR_MS: f64 = 50.0;
/// … and worth this many output tokens or more (the cell's TPOT p50 times this): a wait
/// shorter than a few tokens' time is small against the request's own decode.
pub const QUEUE_TOKENS: f64 = 4.0;
/// The client's requests in flight above the engine's running mean by this many or more,
/// with requests waiting, is requests held back by the engine.
pub const HELD_BACK: f64 = 1.0;
/// The client's requests in flight at this many times the engine's (running mean + waiting
/// max) or more, and [`FRONT_GAP`] more, is requests held before the engine's scheduler (in
/// its API server): the engine's gauges do not see them, so no engine kind is judged.
pub const FRONT_END: f64 = 2.0;
/// … and at least this many requests more than the engine holds.
pub const FRONT_GAP: f64 = 2.0;
/// The client's mean in flight within this of the engine's cap (and the engine's running max
/// at it) is the engine at the cap the whole window (the client's count, not the engine's
/// few scrapes of a short probe); with the step up past it, the cap is the limit.
pub const AT_CAP: f64 = 0.5;

/// What limits a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// The engine ran as many requests as it may (`--max-num-seqs`, llama.cpp's slots) and
    /// held the rest back.
    Scheduler,
    /// The KV cache was full: usage at 95% or more, preemptions, or requests held back
    /// while fewer than the cap ran.
    KvCache,
    /// TTFT dominated by waiting while TPOT held: prefills queue behind the running batch.
    PrefillInterference,
    /// TPOT rose with the batch and nothing was held back: the hardware's compute.
    Compute,
    /// The measuring client itself was the bottleneck (its self-check).
    Client,
}

impl LimitKind {
    /// As records write it.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Scheduler => "scheduler",
            LimitKind::KvCache => "kv_cache",
            LimitKind::PrefillInterference => "prefill_interference",
            LimitKind::Compute => "compute",
            LimitKind::Client => "client",
        }
    }
}

/// One number a diagnosis rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// What it is, as the record names it: `server.running_max`, `tpot_ms.p50`.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Where it was read: the cell, and the engine metric or client measurement.
    pub source: String,
}

/// A cell's diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limit {
    /// What limits the cell; null when it could not be judged (see `evidence` and
    /// `suggestion` for what was missing).
    pub kind: Option<LimitKind>,
    /// The numbers the verdict rests on, each with where it was read.
    pub evidence: Vec<Evidence>,
    /// What to turn (a launch flag), or, when not judged, what would let it be judged.
    pub suggestion: String,
}

impl Limit {
    /// `scheduler` or `not judged`.
    pub fn kind_str(&self) -> &'static str {
        self.kind.map_or("not judged", LimitKind::as_str)
    }

    /// The evidence in one line: `server.running_max 2 (decode/512/c4: …), …`.
    pub fn evidence_line(&self) -> String {
        let each: Vec<String> = self
            .evidence
            .iter()
            .map(|e| {
                format!(
                    "{} {} ({})",
                    e.name,
                    super::stats::round(e.value, 3),
                    e.source
                )
            })
            .collect();
        each.join("; ")
    }

    /// One line for a cell: `decode/8K/c4: scheduler — raise … [evidence]`.
    pub fn line(&self, cell: &str) -> String {
        let mut line = format!("{cell}: {} — {}", self.kind_str(), self.suggestion);
        if !self.evidence.is_empty() {
            line.push_str(&format!(" [{}]", self.evidence_line()));
        }
        line
    }
}

/// The most requests the engine runs at once, as the spec sets it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cap {
    /// The value.
    pub value: f64,
    /// Where it is set: `--max-num-seqs`, `--parallel`, `engine.sim.max_num_seqs`.
    pub from: &'static str,
}

/// What one diagnosis looks at.
#[derive(Debug, Clone, Copy)]
pub struct Judged<'a> {
    /// The record whose metrics show the limit (for a plateau: the step past it).
    pub at: &'a Record,
    /// The same series' step below `at` (TPOT's baseline), if any.
    pub base: Option<&'a Record>,
    /// The same series' step above `at`, if any (where a cap reached at `at` holds requests
    /// back).
    pub above: Option<&'a Record>,
    /// A cold request's TTFT at this context, ms, and the cell it is from.
    pub cold_ttft: Option<(f64, &'a str)>,
    /// The engine's cap on running requests, when the spec sets it.
    pub cap: Option<Cap>,
    /// `validity.max_client_busy`.
    pub max_client_busy: f64,
    /// Where the user changes the engine's settings (the suggestion names them so).
    pub knobs: Knobs,
}

fn fact(name: &str, value: f64, source: String) -> Evidence {
    Evidence {
        name: name.to_string(),
        value,
        source,
    }
}

/// A request's time per output token, ms: the open-loop `tpot_ms`, else `tbt_ms`.
fn tpot(r: &Record) -> Option<(f64, &'static str)> {
    r.open
        .tpot_ms
        .map(|s| (s.p50, "tpot_ms.p50"))
        .or(r.tbt_ms.map(|s| (s.p50, "tbt_ms.p50")))
}

/// The diagnosis of `j`.
pub fn judge(j: &Judged) -> Limit {
    let a = j.at;
    let family = a.server.as_ref().map_or("vllm", |s| s.source.as_str());
    let done = |kind: LimitKind, evidence: Vec<Evidence>| Limit {
        kind: Some(kind),
        evidence,
        suggestion: suggestion(kind, family, j.cap, j.knobs),
    };
    if let Some(ev) = client_busy(j) {
        return done(LimitKind::Client, ev);
    }
    let Some(s) = &a.server else {
        return not_judged(
            Vec::new(),
            format!(
                "{} has no engine metrics (`server`): serve the engine's /metrics and keep `telemetry.server` on so the limit can be judged",
                a.cell
            ),
        );
    };
    let mut ev = server_evidence(a, s);
    let preempted = s.preemptions.is_some_and(|p| p > 0.0);
    if preempted || s.kv_usage_max.is_some_and(|k| k >= KV_FULL) {
        return done(LimitKind::KvCache, ev);
    }
    let Some((held, active)) = held_back(a) else {
        return not_judged(
            ev,
            format!(
                "{} lacks the engine's running or waiting requests or the client's in flight: not judged",
                a.cell
            ),
        );
    };
    let src = format!("{}: the client's requests in flight", a.cell);
    let in_flight = fact("avg_active", active, src);
    if held {
        ev.push(in_flight);
        let Some(cap) = j.cap else {
            return not_judged(ev, no_cap(j.knobs));
        };
        ev.push(fact("cap", cap.value, format!("the spec's {}", cap.from)));
        return match s.running_max {
            Some(r) if r >= cap.value => done(LimitKind::Scheduler, ev),
            _ => done(LimitKind::KvCache, ev),
        };
    }
    let ev = match beside_the_queue(j, s, in_flight, ev) {
        Ok(ev) => ev,
        Err((Some(kind), ev)) => return done(kind, ev),
        Err((None, ev)) => return not_judged(ev, front_end(family, j.knobs)),
    };
    latency_kind(j, ev).map_or_else(|ev| not_judged(ev, "nothing was held back and TPOT and TTFT give no verdict (no lower step to compare TPOT with, or neither rule met: TPOT 1.2× the lower step's, or TTFT 2× a cold request's with a wait of 50 ms and 4 output tokens or more): not judged".into()), |(k, ev)| done(k, ev))
}

/// Whether the engine of `r` held requests back (waiting, and the client's in flight at
/// least [`HELD_BACK`] above its running mean), with the client's in flight; `None` when a
/// gauge is missing.
fn held_back(r: &Record) -> Option<(bool, f64)> {
    let s = r.server.as_ref()?;
    match (r.avg_active, s.running_mean, s.waiting_max) {
        (Some(active), Some(running), Some(waiting)) => {
            Some((waiting >= 1.0 && active - running >= HELD_BACK, active))
        }
        _ => None,
    }
}

/// Whether `r` sent more than the engine's cap `cap` could run: held back, or the client's
/// in flight at least [`HELD_BACK`] above the cap while the engine ran at it (the requests
/// past the cap wait somewhere, whether or not a scrape caught them in the queue).
fn beyond_cap(r: &Record, cap: f64) -> bool {
    let at_cap = r.server.as_ref().and_then(|s| s.running_max) >= Some(cap);
    let over = r.avg_active.is_some_and(|a| a >= cap + HELD_BACK);
    held_back(r).is_some_and(|h| h.0) || (at_cap && over)
}

/// With nothing held back in the engine's queue: running at the cap the whole window (the
/// scheduler: `Err` with it), or requests in neither gauge, held before the scheduler (`Err`
/// with no kind); `Ok` with the evidence when neither.
#[allow(clippy::type_complexity)]
fn beside_the_queue(
    j: &Judged,
    s: &super::ServerUse,
    in_flight: Evidence,
    mut ev: Vec<Evidence>,
) -> Result<Vec<Evidence>, (Option<LimitKind>, Vec<Evidence>)> {
    let active = in_flight.value;
    if let Some(cap) = j.cap
        && s.running_max.is_some_and(|r| r >= cap.value)
        && active + AT_CAP >= cap.value
        && let Some(above) = j.above
        && beyond_cap(above, cap.value)
    {
        ev.push(in_flight);
        let why = "running at it the whole window";
        ev.push(fact(
            "cap",
            cap.value,
            format!("the spec's {} ({why})", cap.from),
        ));
        let waiting = above.server.as_ref().and_then(|s| s.waiting_max);
        let source = format!("{}: the step up, past the cap", above.cell);
        ev.push(fact("server.waiting_max", waiting.unwrap_or(0.0), source));
        return Err((Some(LimitKind::Scheduler), ev));
    }
    let engine = s.running_mean.unwrap_or(0.0) + s.waiting_max.unwrap_or(0.0);
    if active >= FRONT_END * engine && active - engine >= FRONT_GAP {
        let source = format!(
            "{}: avg_active − (server.running_mean + server.waiting_max): requests neither running nor waiting in the engine",
            j.at.cell
        );
        ev.push(in_flight);
        ev.push(fact("before_scheduler", active - engine, source));
        return Err((None, ev));
    }
    Ok(ev)
}

/// The client's self-check as evidence, when it says the client was the bottleneck.
fn client_busy(j: &Judged) -> Option<Vec<Evidence>> {
    let c = j.at.client.filter(|c| c.cpu_busy > j.max_client_busy)?;
    Some(vec![
        fact(
            "client.cpu_busy",
            c.cpu_busy,
            format!("{}: benchspec's own CPU time", j.at.cell),
        ),
        fact(
            "validity.max_client_busy",
            j.max_client_busy,
            "the spec".into(),
        ),
    ])
}

/// The engine's gauges and counters of `a` that are there, each named with its source.
fn server_evidence(a: &Record, s: &super::ServerUse) -> Vec<Evidence> {
    let from = |metric: &str| format!("{}: engine /metrics ({}), {metric}", a.cell, s.source);
    let seen = [
        ("server.running_mean", s.running_mean, "running requests"),
        ("server.running_max", s.running_max, "running requests"),
        ("server.waiting_max", s.waiting_max, "waiting requests"),
        ("server.kv_usage_max", s.kv_usage_max, "KV-cache usage"),
        ("server.preemptions", s.preemptions, "preemptions"),
    ];
    seen.iter()
        .filter_map(|(name, v, metric)| Some(fact(name, (*v)?, from(metric))))
        .collect()
}

/// With nothing held back: prefill interference (TTFT dominated by waiting, TPOT holding) or
/// compute (TPOT rising with the batch); `Err` with the evidence when neither is shown.
fn latency_kind(
    j: &Judged,
    mut ev: Vec<Evidence>,
) -> Result<(LimitKind, Vec<Evidence>), Vec<Evidence>> {
    let (a, base) = (j.at, j.base);
    let (Some((t, name)), Some((t0, _))) = (tpot(a), base.and_then(tpot)) else {
        return Err(ev);
    };
    let base_cell = base.map_or("", |b| b.cell.as_str());
    ev.push(fact(name, t, format!("{}: the client's timings", a.cell)));
    ev.push(fact(name, t0, format!("{base_cell}: the client's timings")));
    let ratio = t / t0.max(f64::MIN_POSITIVE);
    if ratio >= TPOT_RISE {
        return Ok((LimitKind::Compute, ev));
    }
    let ttft = a.ttft_ms.map(|s| s.p50);
    if let (Some(ttft), Some((cold, cell))) = (ttft, j.cold_ttft)
        && queued(ttft, cold, t)
    {
        ev.push(fact(
            "ttft_ms.p50",
            ttft,
            format!("{}: the client's timings", a.cell),
        ));
        ev.push(fact("ttft_ms.p50", cold, format!("{cell}: a cold request")));
        return Ok((LimitKind::PrefillInterference, ev));
    }
    Err(ev)
}

/// TTFT `ttft` (ms) dominated by waiting, against a cold request's `cold` and the cell's TPOT
/// `tpot`: at least [`TTFT_QUEUED`] times the cold one, and the wait at least
/// [`QUEUE_FLOOR_MS`] and [`QUEUE_TOKENS`] output tokens' time.
fn queued(ttft: f64, cold: f64, tpot: f64) -> bool {
    let wait = ttft - cold;
    ttft >= TTFT_QUEUED * cold && wait >= QUEUE_FLOOR_MS && wait >= QUEUE_TOKENS * tpot
}

/// Why a held-back cell without a cap is not judged, and what would state the cap.
fn no_cap(knobs: Knobs) -> String {
    let how = match knobs {
        Knobs::Sim => "set `engine.sim.max_num_seqs`",
        Knobs::Launch => {
            "set it in the launch command (`--max-num-seqs N`, llama.cpp `--parallel N`, SGLang `--max-running-requests N`)"
        }
        Knobs::Attached => {
            "this spec attaches to a running server, whose launch flags it cannot read: start the engine from the spec (`engine.launch.command` with `--max-num-seqs N`, llama.cpp `--parallel N`)"
        }
    };
    format!(
        "requests were held back, but the engine's cap on running requests is not known: {how}, so a full scheduler can be told from a full KV cache"
    )
}

fn not_judged(evidence: Vec<Evidence>, why: String) -> Limit {
    Limit {
        kind: None,
        evidence,
        suggestion: why,
    }
}

#[cfg(test)]
#[path = "limit_tests.rs"]
mod tests;
