//! `predict`'s answer: the spec run against the twin as its engine ([`super::simulate`]),
//! its records read into the prediction cell by cell (a metric the closed form leaves unknown
//! stays unknown, with its interval), capacity searches' summaries added, and `--out`'s records
//! blanked where the table says unknown — so that the table and `--out` are one computation.

use super::Twin;
use super::identify::unknown;
use super::interval::widen;
use super::model::Predicted;
use super::predict::{
    CapacityAt, PredictedCapacity, PredictedCell, Prediction, fraction, round, unseen,
};
use crate::plan::Phase;
use crate::results::{Record, Status};

/// `p` with the simulated `records`: the spec run against the twin as its engine, every
/// cell of it — so that the table and `predict --out` are one computation. A prefill or
/// decode cell's values are the simulation's (a metric the closed form leaves unknown stays
/// unknown); load, session and replay cells and capacity probes are added as cells, capacity
/// searches' summaries as [`PredictedCapacity`]; a cell without a valid record goes to
/// `not_predicted` with its status and reasons.
pub fn add_simulated(p: &mut Prediction, records: &[Record], twin: &Twin) {
    for r in records {
        if r.phase == Phase::Capacity {
            add_capacity(p, r, twin);
        } else if matches!(r.status, Status::Valid | Status::Invalid) {
            let sim = simulated_cell(r, twin);
            // A prefill or decode cell is known where its closed form is (the simulation
            // adds only what the closed form leaves out, prefills stalling the batch); other
            // cells by what their requests in flight need.
            match p.cells.iter_mut().find(|c| c.cell == r.cell) {
                Some(closed) => *closed = keep_unknown(closed, sim),
                None => {
                    let lost = simulated_unknown(r, twin);
                    p.cells.push(sim.blank(lost));
                }
            }
        } else if r.status != Status::Skipped || planned(p, &r.cell) {
            let why = r.reasons.join("; ");
            p.cells.retain(|c| c.cell != r.cell);
            p.not_predicted.push(format!(
                "{}: {} in the simulation{}",
                r.cell,
                r.status.as_str(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ));
        }
    }
    for id in &p.to_simulate {
        if !records
            .iter()
            .any(|r| &r.cell == id || r.cell.starts_with(&format!("{id}/")))
        {
            p.not_predicted
                .push(format!("{id}: no record from the simulation"));
        }
    }
}

/// `records` (the predicted run) with each metric the prediction marks unknown removed and
/// said in the record's reasons: a value resting on a parameter the fitted cells do not fix is
/// not written.
pub fn blank_records(p: &Prediction, records: &mut [Record]) {
    for r in records {
        let Some(c) = p.cells.iter().find(|c| c.cell == r.cell) else {
            continue;
        };
        if c.unknown.is_empty() {
            continue;
        }
        for m in &c.unknown {
            match *m {
                "total_tok_s" => r.total_tok_s = None,
                "per_request_tok_s" => r.per_request_tok_s = None,
                "tbt_ms_p50" => r.tbt_ms = None,
                _ => (r.ttft_ms, r.prefill_tok_s) = (None, None),
            }
        }
        // What is derived from them goes too: TPOT, E2E, the tokens counted in the window, the
        // engine's and the client's view, costs.
        (r.output_tokens, r.server, r.client, r.per_repeat) = (None, None, None, None);
        (r.usd_per_mtok, r.tokens_per_joule, r.by_endpoint) = (None, None, None);
        r.open = Default::default();
        if r.phase == Phase::Prefill {
            r.measured_s = None;
        }
        r.reasons.push(format!(
            "unknown to the twin: {} (a parameter it depends on is not identified)",
            c.unknown.join(", ")
        ));
    }
}

/// Whether `cell` is one the prediction was to give (a cell the plan itself skips is not).
fn planned(p: &Prediction, cell: &str) -> bool {
    p.cells.iter().any(|c| c.cell == cell) || p.to_simulate.iter().any(|id| id == cell)
}

/// A capacity search's summary record as [`CapacityAt`].
fn add_capacity(p: &mut Prediction, r: &Record, twin: &Twin) {
    let w = widen(twin.range, r.context as f64, r.open.capacity.unwrap_or(1.0));
    let at = CapacityAt {
        cell: r.cell.clone(),
        context: r.context,
        value: r.open.capacity,
        interval: round(
            r.open
                .capacity
                .zip(fraction(twin, false, Phase::Decode))
                .map(|(v, f)| v * f * w),
            2,
        ),
        extrapolated: w > 1.0,
    };
    let search = r.open.search.clone().unwrap_or_default();
    p.capacity
        .get_or_insert_with(|| PredictedCapacity {
            search,
            cells: Vec::new(),
        })
        .cells
        .push(at);
}

/// The simulated cell `sim`, each metric unknown where the closed form's `closed` is.
fn keep_unknown(closed: &PredictedCell, mut sim: PredictedCell) -> PredictedCell {
    let pairs = [
        (
            closed.total_tok_s,
            &mut sim.total_tok_s,
            &mut sim.interval.total_tok_s,
        ),
        (
            closed.per_request_tok_s,
            &mut sim.per_request_tok_s,
            &mut sim.interval.per_request_tok_s,
        ),
        (
            closed.ttft_ms_p50,
            &mut sim.ttft_ms_p50,
            &mut sim.interval.ttft_ms_p50,
        ),
        (
            closed.tbt_ms_p50,
            &mut sim.tbt_ms_p50,
            &mut sim.interval.tbt_ms_p50,
        ),
    ];
    for (known, value, half) in pairs {
        if known.is_none() {
            (*value, *half) = (None, None);
        }
    }
    sim.extrapolated |= closed.extrapolated;
    sim.unknown.clone_from(&closed.unknown);
    sim
}

fn simulated_cell(r: &Record, twin: &Twin) -> PredictedCell {
    // A closed loop's concurrency is what was fitted on; an open loop's, its requests in flight.
    let closed = matches!(r.phase, Phase::Prefill | Phase::Decode);
    let n = r
        .avg_active
        .filter(|_| !closed)
        .unwrap_or(f64::from(r.concurrency.max(1)))
        .max(1.0);
    let w = widen(twin.range, r.prompt_tokens as f64, n) * unseen(twin, r.phase);
    let ttft = r.ttft_ms.map(|s| s.p50);
    // A closed loop's time between tokens is its step, 1 / per-request tok/s: exact, where the
    // simulated TBT p50 is a whole millisecond (the paused clock's timer).
    let step = r.per_request_tok_s.filter(|_| closed).map(|t| 1e3 / t);
    let tbt = step.or(r.tbt_ms.map(|s| s.p50));
    let half = |x: Option<f64>, d| {
        round(
            x.zip(fraction(twin, false, r.phase))
                .map(|(x, f)| x * f * w),
            d,
        )
    };
    PredictedCell {
        cell: r.cell.clone(),
        phase: r.phase.as_str().into(),
        context: r.prompt_tokens,
        concurrency: r.concurrency,
        total_tok_s: round(r.total_tok_s, 1),
        per_request_tok_s: round(r.per_request_tok_s, 1),
        ttft_ms_p50: round(ttft, 1),
        tbt_ms_p50: round(tbt, 2),
        interval: Predicted {
            total_tok_s: half(r.total_tok_s, 1),
            per_request_tok_s: half(r.per_request_tok_s, 1),
            ttft_ms_p50: round(
                ttft.zip(fraction(twin, true, r.phase))
                    .map(|(x, f)| x * f * w),
                1,
            ),
            tbt_ms_p50: half(tbt, 2),
        },
        extrapolated: widen(twin.range, r.prompt_tokens as f64, n) > 1.0,
        phase_fitted: unseen(twin, r.phase) == 1.0,
        method: "simulated",
        unknown: Vec::new(),
    }
}

/// The metrics of a load, session or replay cell (or capacity probe) the twin cannot know:
/// a decode step at its mean requests in flight, and its prompts' cold prefill.
fn simulated_unknown(r: &Record, twin: &Twin) -> Vec<&'static str> {
    let n = r
        .avg_active
        .unwrap_or(f64::from(r.concurrency.max(1)))
        .max(1.0);
    unknown(
        &twin.designs,
        (false, false),
        r.prompt_tokens as f64,
        (n, r.open.output_tokens_mean.unwrap_or(0.0)),
        0.0,
    )
}
