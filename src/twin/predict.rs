//! `benchspec predict SPEC --twin TWIN.toml`: each cell of the spec's plan with the values of
//! the spec run against the twin (`super::answer::add_simulated`; the closed form here, before
//! it) and an interval — the twin's own (earned on left-out cells) inside the fitted range, once more for every doubling of context or concurrency
//! beyond it, the cell then marked `extrapolated`.

use super::Twin;
use super::identify::unknown;
pub use super::interval::widen;
use super::model::Params;
use super::model::Predicted;
use super::settings::SpecSettings;
use crate::plan::{Decode, Measure, Phase, Plan};
use serde::Serialize;

/// The half-width of the twin's 90% interval inside its range, as a fraction of the value
/// (`ttft`: TTFT's — a prefill cell's apart, `phase` — else tok/s and TBT's); `None` when no
/// fitted cell could be left out to earn it (one cell fitted, or none of them predictable
/// without itself).
pub(super) fn fraction(twin: &Twin, ttft: bool, phase: Phase) -> Option<f64> {
    let iv = &twin.intervals;
    let b = match (ttft, phase) {
        (true, Phase::Prefill) => &iv.prefill_ttft,
        (true, _) => &iv.ttft,
        _ => &iv.tok_s,
    };
    b.pct.map(|p| p / 100.0)
}

/// 2 when no cell the twin was fitted on was of `phase` (its interval rests on other
/// phases), else 1.
pub(super) fn unseen(twin: &Twin, phase: Phase) -> f64 {
    let seen = &twin.intervals.phases;
    if seen.is_empty() || seen.iter().any(|p| p == phase.as_str()) {
        1.0
    } else {
        2.0
    }
}

/// One predicted cell.
#[derive(Debug, Clone, Serialize)]
pub struct PredictedCell {
    /// The cell id.
    pub cell: String,
    /// `prefill` or `decode`.
    pub phase: String,
    /// Prompt tokens.
    pub context: u64,
    /// Requests in flight.
    pub concurrency: u32,
    /// Output tokens per second of all requests.
    pub total_tok_s: Option<f64>,
    /// Of one request.
    pub per_request_tok_s: Option<f64>,
    /// TTFT p50, ms.
    pub ttft_ms_p50: Option<f64>,
    /// TBT p50, ms.
    pub tbt_ms_p50: Option<f64>,
    /// The 90% interval's half-width of each value.
    pub interval: Predicted,
    /// Outside the contexts or concurrency the twin was fitted on.
    pub extrapolated: bool,
    /// Whether the twin was fitted on cells of this phase (if not, its interval, earned on
    /// other phases, is doubled).
    pub phase_fitted: bool,
    /// `simulated`: the spec run against the twin as an engine on a paused clock (`closed
    /// form` only before `answer::add_simulated` replaces the prefill and decode cells' values).
    pub method: &'static str,
    /// The metrics the fitted cells do not fix (a parameter they depend on is not
    /// identified): `null` above, `unknown` in the table.
    pub unknown: Vec<&'static str>,
}

impl PredictedCell {
    /// `self` with the values the twin cannot know blanked and named in `unknown`.
    pub(super) fn blank(mut self, unknown: Vec<&'static str>) -> PredictedCell {
        for m in &unknown {
            let (v, h) = match *m {
                "total_tok_s" => (&mut self.total_tok_s, &mut self.interval.total_tok_s),
                "per_request_tok_s" => (
                    &mut self.per_request_tok_s,
                    &mut self.interval.per_request_tok_s,
                ),
                "tbt_ms_p50" => (&mut self.tbt_ms_p50, &mut self.interval.tbt_ms_p50),
                _ => (&mut self.ttft_ms_p50, &mut self.interval.ttft_ms_p50),
            };
            (*v, *h) = (None, None);
        }
        self.unknown = unknown;
        self
    }

    /// Whether any value is known.
    pub fn known(&self) -> bool {
        [
            self.total_tok_s,
            self.per_request_tok_s,
            self.ttft_ms_p50,
            self.tbt_ms_p50,
        ]
        .iter()
        .any(Option::is_some)
    }
}

/// The capacity under the spec's SLO, by the twin.
#[derive(Debug, Clone, Serialize)]
pub struct PredictedCapacity {
    /// `concurrency` or `rate`.
    pub search: String,
    /// One per searched context.
    pub cells: Vec<CapacityAt>,
}

/// The capacity at one context.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityAt {
    /// The search cell's id.
    pub cell: String,
    /// Prompt tokens.
    pub context: u64,
    /// The highest concurrency or rate meeting the SLO (`null`: none did).
    pub value: Option<f64>,
    /// The half-width of its 90% interval (the twin's, widened as for a cell).
    pub interval: Option<f64>,
    /// Outside the fitted contexts or concurrency.
    pub extrapolated: bool,
}

/// `predict --format json`.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// The predicted cells, in plan order.
    pub cells: Vec<PredictedCell>,
    /// Capacity under the spec's SLO, when the spec searches for it.
    pub capacity: Option<PredictedCapacity>,
    /// The twin's interval inside its fitted range, percent (absent: none was earned).
    pub interval_pct: Option<f64>,
    /// What the twin's intervals rest on (cells left out, phases fitted).
    pub intervals: super::interval::Intervals,
    /// Cells of the plan the twin did not predict, with why.
    pub not_predicted: Vec<String>,
    /// The twin's parameters no fitted cell constrains, with the cells that would.
    pub not_identified: Vec<String>,
    /// The spec's engine settings the twin does not model (the prediction ignores them).
    pub not_modelled: Vec<String>,
    /// The cells the closed form leaves to a simulation (not printed).
    #[serde(skip)]
    pub to_simulate: Vec<String>,
}

pub(super) fn round(v: Option<f64>, d: i32) -> Option<f64> {
    let f = 10f64.powi(d);
    v.map(|x| (x * f).round() / f)
}

fn cell(p: &Params, twin: &Twin, c: &crate::plan::Cell, output: f64) -> PredictedCell {
    let (ctx, n) = (c.prompt_tokens as f64, f64::from(c.concurrency.max(1)));
    let window = match c.measure {
        Measure::Decode(Decode::FixedDuration(d)) => Some(d.as_secs_f64()),
        _ => None,
    };
    let v = match c.phase() {
        Phase::Prefill => p.prefill(ctx),
        _ => p.decode(ctx, n, output, window),
    };
    let running = p.running(n, ctx, output);
    let lost = unknown(
        &twin.designs,
        (true, c.phase() == Phase::Prefill),
        ctx,
        (running, output),
        p.burst_at(n, ctx, output, window),
    );
    let w = widen(twin.range, ctx, n) * unseen(twin, c.phase());
    let half = |x: Option<f64>, d| {
        round(
            x.zip(fraction(twin, false, c.phase()))
                .map(|(x, f)| x * f * w),
            d,
        )
    };
    let ttft_half = round(
        v.ttft_ms_p50
            .zip(fraction(twin, true, c.phase()))
            .map(|(x, f)| x * f * w),
        1,
    );
    PredictedCell {
        cell: c.id.clone(),
        phase: c.phase().as_str().into(),
        context: c.prompt_tokens,
        concurrency: c.concurrency,
        total_tok_s: round(v.total_tok_s, 1),
        per_request_tok_s: round(v.per_request_tok_s, 1),
        ttft_ms_p50: round(v.ttft_ms_p50, 1),
        tbt_ms_p50: round(v.tbt_ms_p50, 2),
        interval: Predicted {
            total_tok_s: half(v.total_tok_s, 1),
            per_request_tok_s: half(v.per_request_tok_s, 1),
            ttft_ms_p50: ttft_half,
            tbt_ms_p50: half(v.tbt_ms_p50, 2),
        },
        extrapolated: widen(twin.range, ctx, n) > 1.0,
        phase_fitted: unseen(twin, c.phase()) == 1.0,
        method: "closed form",
        unknown: Vec::new(),
    }
    .blank(lost)
}

/// The twin's prediction of `plan`'s cells, each under the engine settings of its variant
/// (`settings`, read from the spec).
pub fn predict(plan: &Plan, twin: &Twin, settings: &SpecSettings) -> Prediction {
    let output = plan.max_output_tokens as f64;
    let (mut cells, mut to_simulate, mut not_predicted) = (Vec::new(), Vec::new(), Vec::new());
    for c in plan.cells.iter().filter(|c| c.runs()) {
        let p = settings.get(c.variant.as_deref()).apply(twin.params);
        // A prefill cell asks for one token.
        let out = if c.phase() == Phase::Prefill {
            1
        } else {
            plan.max_output_tokens
        };
        let tokens = c.prompt_tokens + out;
        match c.phase() {
            Phase::Prefill | Phase::Decode if tokens > p.max_model_len => not_predicted.push(
                format!("{}: prompt and output ({tokens} tokens) exceed max_model_len {}: the engine refuses it", c.id, p.max_model_len),
            ),
            Phase::Prefill | Phase::Decode => cells.push(cell(&p, twin, c, output)),
            _ => to_simulate.push(c.id.clone()),
        }
    }
    Prediction {
        cells,
        capacity: None,
        interval_pct: twin.interval_pct,
        intervals: twin.intervals.clone(),
        not_predicted,
        not_identified: super::identify::summary(&twin.not_identified)
            .into_iter()
            .collect(),
        not_modelled: Vec::new(),
        to_simulate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twin::Range;

    #[test]
    fn intervals_widen_once_per_doubling_outside_the_fitted_range() {
        let r = Range {
            contexts: [1024.0, 8192.0],
            concurrency: [1.0, 8.0],
        };
        let cases = [
            (4096.0, 4.0, 1.0),
            (1024.0, 8.0, 1.0),
            (16384.0, 4.0, 2.0),
            (32768.0, 4.0, 3.0),
            (512.0, 16.0, 3.0),
            (4096.0, 64.0, 4.0),
        ];
        for (c, n, want) in cases {
            assert!(
                (widen(r, c, n) - want).abs() < 1e-9,
                "{c} {n}: {}",
                widen(r, c, n)
            );
        }
    }
}
