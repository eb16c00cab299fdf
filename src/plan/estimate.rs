//! Wall-time estimates of plan cells: windows, warm-ups and prefills at stated rates.

use super::{Cell, Decode, Measure, Prefill, Workload};
use serde::{Deserialize, Serialize};

/// The rates an estimate assumes, and where they come from. The caller gives them: the
/// simulator's profile knows its own speed (`sim::rates_for`), else [`Rates::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Prompt tokens per second of prefill.
    pub prefill_tok_s: f64,
    /// Output tokens per second of one request.
    pub decode_tok_s: f64,
    /// Where these numbers come from, said in the plan.
    pub source: String,
}

impl Default for Rates {
    /// A stated assumption for when neither the spec nor a previous run gives rates.
    fn default() -> Self {
        Rates {
            prefill_tok_s: 10_000.0,
            decode_tok_s: 50.0,
            source: "assumed: prefill 10,000 tok/s, decode 50 tok/s per request".to_string(),
        }
    }
}

/// Fixed cost of one request (connection, scheduling, first step), in seconds.
const REQUEST_OVERHEAD_S: f64 = 0.05;

/// Fill in `estimate_s` of every runnable cell.
///
/// - standalone prefill: `repeats` prompts at the prefill rate;
/// - decode-warmup prefill: nothing of its own (the decode cell's warm-up sends it);
/// - fixed-duration decode: the warm-up, then the window. With a warm prompt cache, slot
///   prompts are shared across the concurrencies of one context, so a cell only prefills
///   the slots the previous cell of its context did not have;
/// - request-count decode: rounds of C requests, each a prefill and `max_output_tokens`;
/// - load: the arrivals (requests / rate; rounds of the cap for `inf`), then the last
///   request's prefill and output;
/// - capacity: the most probes the bisection takes, each a window and a drain.
pub(super) fn apply(cells: &mut [Cell], rates: &Rates, workload: &Workload) {
    let out = workload.max_output_tokens as f64;
    let warm = workload.warm();
    let prefill = |tokens: u64| tokens as f64 / rates.prefill_tok_s.max(1.0) + REQUEST_OVERHEAD_S;
    let mut warmed: Option<(u64, u32)> = None;
    for cell in cells.iter_mut().filter(|c| c.runs()) {
        cell.estimate_s = match cell.measure {
            Measure::Prefill(Prefill::DecodeWarmup) => 0.0,
            Measure::Prefill(Prefill::Standalone { repeats }) => {
                f64::from(repeats) * prefill(cell.prompt_tokens)
            }
            Measure::Decode(Decode::RequestCount(requests)) => {
                let rounds = f64::from(requests).max(1.0) / f64::from(cell.concurrency.max(1));
                rounds.ceil() * (prefill(cell.prompt_tokens) + out / rates.decode_tok_s.max(0.001))
            }
            Measure::Decode(Decode::FixedDuration(window)) => {
                let already = match warmed {
                    Some((ctx, c)) if warm && ctx == cell.context => c,
                    _ => 0,
                };
                let new_slots = cell.concurrency.saturating_sub(already).max(1);
                warmed = Some((cell.context, cell.concurrency.max(already)));
                f64::from(new_slots) * prefill(cell.prompt_tokens) + window.as_secs_f64()
            }
            Measure::Load(l) => {
                let one = prefill(cell.prompt_tokens) + out / rates.decode_tok_s.max(0.001);
                let n = l.expected_requests();
                let arriving = if l.rate.is_inf() {
                    let cap = f64::from(l.max_concurrency.unwrap_or(u32::MAX)).min(n.max(1.0));
                    (n / cap).ceil().max(1.0) * one - one
                } else {
                    n / l.rate.0
                };
                arriving + one
            }
            Measure::Capacity(s) => {
                let drain = out / rates.decode_tok_s.max(0.001);
                f64::from(s.max_probes()) * (s.window.as_secs_f64() + drain)
            }
            Measure::Sessions(s) => sessions(cell, &s, rates),
            // The trace's span (known when the plan had the trace at hand) and the last
            // requests' drain.
            Measure::Replay(r) => r.span_s.unwrap_or(0.0) + REPLAY_DRAIN_S,
        } * f64::from(cell.repeats.max(1));
    }
}

/// What a replay cell is assumed to take past its trace's last arrival.
pub(super) const REPLAY_DRAIN_S: f64 = 2.0;

/// A session cell: its window and the last turn's drain, or (a count of sessions) the
/// rounds of sessions its users or arrivals take, each turn a prefill of the grown history
/// and its output, with the think times between.
fn sessions(cell: &Cell, s: &crate::plan::sessions::SessionLoad, rates: &Rates) -> f64 {
    let turns = s.turns_mean();
    let history = cell.prompt_tokens as f64
        + (turns - 1.0).max(0.0) / 2.0 * (s.output_tokens + s.user_tokens) as f64;
    let turn = history / rates.prefill_tok_s.max(1.0)
        + REQUEST_OVERHEAD_S
        + s.output_tokens as f64 / rates.decode_tok_s.max(0.001);
    let session = turns * turn + (turns - 1.0).max(0.0) * s.think_s;
    match (s.duration_s, s.sessions, s.users, s.rate) {
        (Some(d), _, _, _) => d + turn,
        (None, Some(n), Some(u), _) => (f64::from(n) / f64::from(u.max(1))).ceil() * session,
        (None, Some(n), None, Some(r)) if !r.is_inf() => f64::from(n) / r.0 + session,
        _ => session,
    }
}

/// `1h 02m`, `31m 20s`, `45s`.
pub fn human_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(45.2), "45s");
        assert_eq!(human_duration(1880.0), "31m 20s");
        assert_eq!(human_duration(3720.0), "1h 02m");
    }
}
