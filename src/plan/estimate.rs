//! Wall-time estimates of plan cells: windows, warm-ups and prefills at stated rates.

use super::{Cell, Mode, Phase};
use crate::spec::{PromptCache, Spec};
use serde::Serialize;

/// The rates an estimate assumes, and where they come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

impl Rates {
    /// The rates a spec implies: a `sim` engine's profile knows its own speed; otherwise the
    /// stated assumption.
    pub fn for_spec(spec: &Spec) -> Rates {
        let profile = match (spec.engine.kind, &spec.engine.sim) {
            (crate::spec::EngineKind::Sim, Some(sim)) => crate::sim::profile::profile(&sim.profile),
            (crate::spec::EngineKind::Sim, None) => {
                crate::sim::profile::profile("h200-gemma-4-e2b")
            }
            _ => None,
        };
        let Some(p) = profile else {
            return Rates::default();
        };
        let ctx = spec
            .matrix
            .contexts
            .first()
            .map_or(8192, |c| c.0 as usize)
            .min(p.max_model_len as usize - 1);
        let prefill = crate::sim::calibrate::prefill_tok_s(&p, ctx).max(1.0);
        let step = p.step_s + p.decode_s(1, ctx as u64);
        let decode = if step > 0.0 { 1.0 / step } else { 1e9 };
        Rates {
            prefill_tok_s: prefill,
            decode_tok_s: decode,
            source: format!(
                "from the `{}` simulator profile: prefill {:.0} tok/s, decode {:.0} tok/s per request",
                p.name, prefill, decode
            ),
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
/// - request-count decode: rounds of C requests, each a prefill and `max_output_tokens`.
pub(super) fn apply(cells: &mut [Cell], rates: &Rates, spec: &Spec) {
    let out = spec.workload.max_output_tokens.0 as f64;
    let warm = spec.workload.prompt_cache == PromptCache::Warm;
    let prefill = |tokens: u64| tokens as f64 / rates.prefill_tok_s.max(1.0) + REQUEST_OVERHEAD_S;
    let mut warmed: Option<(u64, u32)> = None;
    for cell in cells.iter_mut().filter(|c| c.runs()) {
        cell.estimate_s = match (cell.phase, cell.mode) {
            (Phase::Prefill, Mode::DecodeWarmup) => 0.0,
            (Phase::Prefill, _) => {
                f64::from(cell.repeats.unwrap_or(1)) * prefill(cell.prompt_tokens)
            }
            (Phase::Decode, Mode::RequestCount) => {
                let rounds = f64::from(cell.requests.unwrap_or(0)).max(1.0)
                    / f64::from(cell.concurrency.max(1));
                rounds.ceil() * (prefill(cell.prompt_tokens) + out / rates.decode_tok_s.max(0.001))
            }
            (Phase::Decode, _) => {
                let already = match warmed {
                    Some((ctx, c)) if warm && ctx == cell.context => c,
                    _ => 0,
                };
                let new_slots = cell.concurrency.saturating_sub(already).max(1);
                warmed = Some((cell.context, cell.concurrency.max(already)));
                f64::from(new_slots) * prefill(cell.prompt_tokens) + cell.duration_s.unwrap_or(0.0)
            }
        };
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
