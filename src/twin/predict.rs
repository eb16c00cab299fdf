//! `benchspec predict SPEC --twin TWIN.toml`: each cell of the spec's plan with the values of
//! the spec run against the twin ([`add_simulated`]; the closed form before it) and a 90%
//! interval — the twin's own (from its residuals and held-out
//! cells) inside the fitted range, wider by half for every doubling of context or concurrency
//! beyond it, the cell then marked `extrapolated`.

use super::Twin;
use super::model::Predicted;
use super::{Range, model::Params};
use crate::plan::{Phase, Plan};
use crate::results::{Record, Status};
use serde::Serialize;

/// How much wider an interval is at (`context`, `n`) than inside `r`: 1 + ½ per doubling out.
pub fn widen(r: Range, context: f64, n: f64) -> f64 {
    let out = |v: f64, [lo, hi]: [f64; 2]| {
        if v > hi && hi > 0.0 {
            (v / hi).log2()
        } else if v < lo && v > 0.0 {
            (lo / v).log2()
        } else {
            0.0
        }
    };
    1.0 + 0.5 * (out(context, r.contexts) + out(n, r.concurrency))
}

/// One predicted cell.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
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
    /// `simulated`: the spec run against the twin as an engine on a paused clock (`closed
    /// form` only before [`add_simulated`] replaces the prefill and decode cells' values).
    pub method: &'static str,
}

/// The capacity under the spec's SLO, by the twin.
#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
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
    pub cells: Vec<Cell>,
    /// Capacity under the spec's SLO, when the spec searches for it.
    pub capacity: Option<Capacity>,
    /// The twin's interval inside its fitted range, percent.
    pub interval_pct: f64,
    /// Cells of the plan the twin did not predict, with why.
    pub not_predicted: Vec<String>,
    /// The cells the closed form leaves to a simulation (not printed).
    #[serde(skip)]
    pub to_simulate: Vec<String>,
}

fn round(v: Option<f64>, d: i32) -> Option<f64> {
    let f = 10f64.powi(d);
    v.map(|x| (x * f).round() / f)
}

fn cell(p: &Params, twin: &Twin, c: &crate::plan::Cell, output: f64) -> Cell {
    let (ctx, n) = (c.prompt_tokens as f64, f64::from(c.concurrency.max(1)));
    let v = match c.phase() {
        Phase::Prefill => p.prefill(ctx),
        _ => p.decode(ctx, n, output),
    };
    let w = widen(twin.range, ctx, n);
    let h = twin.interval_pct / 100.0 * w;
    let half = |x: Option<f64>, d| round(x.map(|x| x * h), d);
    let ttft_half = round(
        v.ttft_ms_p50
            .map(|x| x * twin.ttft_interval_pct / 100.0 * w),
        1,
    );
    Cell {
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
        extrapolated: w > 1.0,
        method: "closed form",
    }
}

/// The twin's prediction of `plan`'s cells.
pub fn predict(plan: &Plan, twin: &Twin) -> Prediction {
    let output = plan.max_output_tokens as f64;
    let mut cells = Vec::new();
    let mut to_simulate = Vec::new();
    for c in plan.cells.iter().filter(|c| c.runs()) {
        match c.phase() {
            Phase::Prefill | Phase::Decode => cells.push(cell(&twin.params, twin, c, output)),
            _ => to_simulate.push(c.id.clone()),
        }
    }
    Prediction {
        cells,
        capacity: None,
        interval_pct: twin.interval_pct,
        not_predicted: Vec::new(),
        to_simulate,
    }
}

/// `p` with the simulated `records`: the spec run against the twin as its engine, every
/// cell of it — so that the table and `predict --out` are one computation. A prefill or
/// decode cell's values are the simulation's (a metric the closed form leaves unknown stays
/// unknown); load, session and replay cells and capacity probes are added as cells, capacity
/// searches' summaries as [`Capacity`]; a cell without a valid record goes to
/// `not_predicted` with its status and reasons.
pub fn add_simulated(p: &mut Prediction, records: &[Record], twin: &Twin) {
    for r in records {
        if r.phase == Phase::Capacity {
            add_capacity(p, r, twin);
        } else if matches!(r.status, Status::Valid | Status::Invalid) {
            let sim = simulated_cell(r, twin);
            match p.cells.iter_mut().find(|c| c.cell == r.cell) {
                Some(closed) => *closed = keep_unknown(closed, sim),
                None => p.cells.push(sim),
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
            r.open.capacity.map(|v| v * twin.interval_pct / 100.0 * w),
            2,
        ),
        extrapolated: w > 1.0,
    };
    let search = r.open.search.clone().unwrap_or_default();
    p.capacity
        .get_or_insert_with(|| Capacity {
            search,
            cells: Vec::new(),
        })
        .cells
        .push(at);
}

/// The simulated cell `sim`, each metric unknown where the closed form's `closed` is.
fn keep_unknown(closed: &Cell, mut sim: Cell) -> Cell {
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
    sim
}

fn simulated_cell(r: &Record, twin: &Twin) -> Cell {
    let n = r
        .avg_active
        .unwrap_or(f64::from(r.concurrency.max(1)))
        .max(1.0);
    let w = widen(twin.range, r.prompt_tokens as f64, n);
    let h = twin.interval_pct / 100.0 * w;
    let ttft = r.ttft_ms.map(|s| s.p50);
    let tbt = r.tbt_ms.map(|s| s.p50);
    let half = |x: Option<f64>, d| round(x.map(|x| x * h), d);
    Cell {
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
            ttft_ms_p50: round(ttft.map(|x| x * twin.ttft_interval_pct / 100.0 * w), 1),
            tbt_ms_p50: half(tbt, 2),
        },
        extrapolated: w > 1.0,
        method: "simulated",
    }
}

/// The prediction as a table.
pub fn table(p: &Prediction) -> String {
    let mut out = format!(
        "predicted by the twin (90% intervals; ±{:.1}% inside the fitted range)\n\n| Cell | Total tok/s | Per request tok/s | TTFT p50 ms | TBT p50 ms | |\n|---|---|---|---|---|---|\n",
        p.interval_pct
    );
    let f = |v: Option<f64>, h: Option<f64>| match (v, h) {
        (Some(v), Some(h)) => format!("{v} ± {h}"),
        (Some(v), None) => format!("{v}"),
        _ => "—".into(),
    };
    for c in &p.cells {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            c.cell,
            f(c.total_tok_s, c.interval.total_tok_s),
            f(c.per_request_tok_s, c.interval.per_request_tok_s),
            f(c.ttft_ms_p50, c.interval.ttft_ms_p50),
            f(c.tbt_ms_p50, c.interval.tbt_ms_p50),
            match (c.extrapolated, c.method == "simulated") {
                (true, true) => "simulated, extrapolated",
                (true, false) => "extrapolated",
                (false, true) => "simulated",
                (false, false) => "",
            }
        ));
    }
    if let Some(c) = &p.capacity {
        for at in &c.cells {
            out.push_str(&format!(
                "\ncapacity at {} under the SLO: {} {}{}",
                at.cell,
                at.value.map_or("none meets it".into(), |v| format!("{v}")),
                c.search,
                at.interval.map_or(String::new(), |h| format!(" ± {h}"))
            ));
        }
        out.push('\n');
    }
    for n in &p.not_predicted {
        out.push_str(&format!("\n{n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_widen_by_half_per_doubling_outside_the_fitted_range() {
        let r = Range {
            contexts: [1024.0, 8192.0],
            concurrency: [1.0, 8.0],
        };
        let cases = [
            (4096.0, 4.0, 1.0),
            (1024.0, 8.0, 1.0),
            (16384.0, 4.0, 1.5),
            (32768.0, 4.0, 2.0),
            (512.0, 16.0, 2.0),
            (4096.0, 64.0, 2.5),
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
