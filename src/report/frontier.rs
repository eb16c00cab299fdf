//! The Pareto frontier of a run (docs/reports.md): per context, every measured decode
//! (concurrency) and open-loop load (rate) cell of every variant as a point of total tok/s
//! per GPU (`hardware.gpu_count`, default 1) against per-request tok/s ("per user"); a point
//! is on the frontier when no other point is at least as good in both and better in one.
//! Where the spec sets `hardware.cost_per_hour`, a second frontier: US dollars per million
//! output tokens (lower is better) against per-user tok/s. Cells that are no point (not
//! valid, a rate unknown, a capacity probe excepted) are counted as left out, with why.

use super::view::{CellStatus, CellView};
use crate::plan::Phase;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `a` dominates `b`: at least as high in both coordinates, higher in one.
pub(crate) fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// Which of `points` (both coordinates higher-is-better) no other point dominates.
pub(crate) fn pareto(points: &[(f64, f64)]) -> Vec<bool> {
    points
        .iter()
        .map(|p| !points.iter().any(|q| dominates(*q, *p)))
        .collect()
}

/// One point of a frontier: which cell it is and its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrontierPoint {
    /// The cell id.
    pub cell: String,
    /// The engine variant; `null` without variants.
    pub variant: Option<String>,
    /// `4 at once` (a decode cell's concurrency) or `2 req/s` (a load cell's offered rate).
    pub load: String,
    /// The cell's total tok/s.
    pub total_tok_s: f64,
    /// Total tok/s / `hardware.gpu_count`.
    pub tok_s_per_gpu: f64,
    /// Per-request tok/s (the record's `per_request_tok_s`).
    pub per_user_tok_s: f64,
    /// US dollars per million output tokens; `null` without `hardware.cost_per_hour`.
    pub usd_per_mtok: Option<f64>,
}

/// A cell of the frontier's kind that is no point of it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LeftOut {
    /// The cell id.
    pub cell: String,
    /// Why: `invalid: …`, `failed: …`, `skipped`, `not run`, `no per-request tok/s`.
    pub reason: String,
}

/// The frontiers at one context.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FrontierView {
    /// Context tokens.
    pub context: u64,
    /// `8K`.
    pub context_label: String,
    /// The GPUs total tok/s is divided by (`hardware.gpu_count`, 1 when unset).
    pub gpu_count: u32,
    /// How many cells were points.
    pub cells: usize,
    /// Every point, on a frontier or not, in run order (what the chart draws).
    pub all: Vec<FrontierPoint>,
    /// The points on the tok/s-per-GPU frontier, by per-user tok/s ascending.
    pub points: Vec<FrontierPoint>,
    /// The points on the $/Mtok frontier, by per-user tok/s ascending; empty without a cost.
    pub cost_points: Vec<FrontierPoint>,
    /// Cells of the context that are no point, with why.
    pub left_out: Vec<LeftOut>,
}

/// The frontiers of the measured cells of `run` (its spec's `hardware.gpu_count` and
/// `cost_per_hour`), as the report draws them; `tune` lists them too.
pub fn of_run(run: &crate::rundir::Run) -> Vec<FrontierView> {
    let hw = &run.spec.hardware;
    frontiers(&super::cells::cells(run), hw.gpu_count, hw.cost_per_hour)
}

/// A cell that can be a point: a decode or load cell that is not a capacity probe.
fn candidate(c: &CellView) -> bool {
    matches!(c.phase, Phase::Decode | Phase::Load) && !c.probe
}

/// The point of `c`, or why it is none.
fn point(c: &CellView, gpus: u32, cost: Option<f64>) -> Result<FrontierPoint, String> {
    let why = |s: &str| {
        let r = c.reasons.join("; ");
        if r.is_empty() {
            s.to_string()
        } else {
            format!("{s}: {r}")
        }
    };
    match c.status {
        CellStatus::Valid => {}
        CellStatus::Missing => return Err("not run".into()),
        s => return Err(why(s.as_str())),
    }
    let r = c.record.as_ref().ok_or("no record")?;
    let total = r.total_tok_s.ok_or("no total tok/s")?;
    let per_user = r.per_request_tok_s.ok_or("no per-request tok/s")?;
    let usd = r
        .usd_per_mtok
        .or_else(|| crate::results::stats::usd_per_mtok(cost?, total));
    Ok(FrontierPoint {
        cell: c.id.clone(),
        variant: c.variant.clone(),
        load: match c.phase {
            Phase::Decode => format!("{} at once", c.concurrency),
            _ => c.level_label.clone(),
        },
        total_tok_s: total,
        tok_s_per_gpu: crate::results::stats::round(total / f64::from(gpus.max(1)), 1),
        per_user_tok_s: per_user,
        usd_per_mtok: usd.filter(|_| cost.is_some()),
    })
}

/// The frontiers of `cells`, one per context in the order the cells first name it; GPUs
/// `gpu_count` (1 when unset), hardware costing `cost_per_hour`.
pub(super) fn frontiers(
    cells: &[CellView],
    gpu_count: Option<u32>,
    cost_per_hour: Option<f64>,
) -> Vec<FrontierView> {
    let gpus = gpu_count.unwrap_or(1).max(1);
    let mut contexts: Vec<(u64, String)> = Vec::new();
    for c in cells.iter().filter(|c| candidate(c)) {
        if !contexts.iter().any(|(n, _)| *n == c.context) {
            contexts.push((c.context, c.context_label.clone()));
        }
    }
    contexts
        .into_iter()
        .map(|(context, context_label)| {
            let mut points = Vec::new();
            let mut left_out = Vec::new();
            for c in cells
                .iter()
                .filter(|c| candidate(c) && c.context == context)
            {
                match point(c, gpus, cost_per_hour) {
                    Ok(p) => points.push(p),
                    Err(reason) => left_out.push(LeftOut {
                        cell: c.id.clone(),
                        reason,
                    }),
                }
            }
            FrontierView {
                context,
                context_label,
                gpu_count: gpus,
                cells: points.len(),
                cost_points: on(&points, |p| Some((-p.usd_per_mtok?, p.per_user_tok_s))),
                points: on(&points, |p| Some((p.tok_s_per_gpu, p.per_user_tok_s))),
                all: points,
                left_out,
            }
        })
        .collect()
}

/// The points of `all` on the frontier of the coordinates `xy` (both higher-is-better;
/// a point without them is on none), by per-user tok/s ascending.
fn on(all: &[FrontierPoint], xy: fn(&FrontierPoint) -> Option<(f64, f64)>) -> Vec<FrontierPoint> {
    let have: Vec<(&FrontierPoint, (f64, f64))> =
        all.iter().filter_map(|p| Some((p, xy(p)?))).collect();
    let coords: Vec<(f64, f64)> = have.iter().map(|h| h.1).collect();
    let mut out: Vec<FrontierPoint> = have
        .iter()
        .zip(pareto(&coords))
        .filter(|(_, on)| *on)
        .map(|((p, _), _)| (*p).clone())
        .collect();
    out.sort_by(|a, b| a.per_user_tok_s.total_cmp(&b.per_user_tok_s));
    out
}

/// Mark each cell of `cells` with its tok/s per GPU and whether it is on either frontier
/// of `fronts` (`null` for a cell that is no point).
pub(super) fn mark(cells: &mut [CellView], fronts: &[FrontierView]) {
    for c in cells.iter_mut().filter(|c| candidate(c)) {
        let Some(f) = fronts.iter().find(|f| f.context == c.context) else {
            continue;
        };
        c.tok_s_per_gpu = c
            .record
            .as_ref()
            .and_then(|r| r.total_tok_s)
            .filter(|_| c.status.measured())
            .map(|t| crate::results::stats::round(t / f64::from(f.gpu_count), 1));
        if f.left_out.iter().any(|l| l.cell == c.id) {
            continue;
        }
        c.on_frontier = Some(f.points.iter().any(|p| p.cell == c.id));
        let costed = !f.cost_points.is_empty();
        c.on_cost_frontier = costed.then(|| f.cost_points.iter().any(|p| p.cell == c.id));
    }
}

#[cfg(test)]
mod tests;
