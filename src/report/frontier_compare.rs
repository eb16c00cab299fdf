//! `compare`'s frontier lines (docs/cli.md): at each context both runs have frontier
//! points, which of the base run's frontier points the new frontier dominates (the new run
//! is ahead there) and which of the new run's the base frontier dominates (behind there);
//! the same for the $/Mtok frontier where both runs have a cost. A comparison with no such
//! context says it judged nothing. The lines inform; `compare`'s exit status stays the
//! per-cell verdict.

use super::format::tok_s;
use super::frontier::{FrontierPoint, FrontierView, dominates};
use schemars::JsonSchema;
use serde::Serialize;

/// The two runs' frontiers side by side.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FrontierComparison {
    /// Per context and frontier both runs have points of.
    pub changes: Vec<FrontierChange>,
    /// Contexts with frontier points in the base run only (`8K`).
    pub only_base: Vec<String>,
    /// Contexts with frontier points in the new run only.
    pub only_new: Vec<String>,
    /// In words: `judged nothing: …`, or each context's verdict.
    pub summary: String,
}

/// One context's frontier in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FrontierChange {
    /// `8K`.
    pub context_label: String,
    /// `tok/s per GPU` or `$/Mtok`, each against per-user tok/s.
    pub frontier: String,
    /// Points on the base run's frontier.
    pub base_points: usize,
    /// Points on the new run's frontier.
    pub new_points: usize,
    /// Base frontier points the new frontier dominates, described.
    pub base_dominated: Vec<String>,
    /// New frontier points the base frontier dominates, described.
    pub new_dominated: Vec<String>,
    /// `ahead` (new dominates some base point, none of its own dominated), `behind`, `mixed`
    /// (both), `even` (neither).
    pub verdict: String,
}

/// The frontiers of `base` and `new` compared; a point dominates another only beyond
/// `margin` (a fraction: compare's threshold), so that two runs of one spec are even.
pub fn compare(base: &[FrontierView], new: &[FrontierView], margin: f64) -> FrontierComparison {
    let has = |f: &FrontierView| !f.points.is_empty();
    let mut changes = Vec::new();
    let mut only_base = Vec::new();
    for b in base.iter().filter(|f| has(f)) {
        let Some(n) = new.iter().find(|n| n.context == b.context && has(n)) else {
            only_base.push(b.context_label.clone());
            continue;
        };
        let sides = (&b.points[..], &n.points[..]);
        changes.push(change(b, "tok/s per GPU", sides, per_gpu, margin));
        if !b.cost_points.is_empty() && !n.cost_points.is_empty() {
            let sides = (&b.cost_points[..], &n.cost_points[..]);
            changes.push(change(b, "$/Mtok", sides, cost, margin));
        }
    }
    let only_new: Vec<String> = new
        .iter()
        .filter(|n| has(n) && !base.iter().any(|b| b.context == n.context && has(b)))
        .map(|n| n.context_label.clone())
        .collect();
    FrontierComparison {
        summary: summary(&changes),
        changes,
        only_base,
        only_new,
    }
}

/// A point's coordinates, both higher-is-better, and its description.
type Coords = fn(&FrontierPoint) -> Option<((f64, f64), String)>;

fn per_gpu(p: &FrontierPoint) -> Option<((f64, f64), String)> {
    Some((
        (p.tok_s_per_gpu, p.per_user_tok_s),
        format!(
            "`{}` ({} tok/s per GPU at {} per user)",
            p.cell,
            tok_s(p.tok_s_per_gpu),
            tok_s(p.per_user_tok_s)
        ),
    ))
}

fn cost(p: &FrontierPoint) -> Option<((f64, f64), String)> {
    let usd = p.usd_per_mtok?;
    Some((
        (-usd, p.per_user_tok_s),
        format!(
            "`{}` (${usd:.4}/Mtok at {} tok/s per user)",
            p.cell,
            tok_s(p.per_user_tok_s)
        ),
    ))
}

/// `q` dominates `p` beyond `margin`: worse on neither coordinate by more than the margin,
/// better on one by more than it (relative changes; a run measured twice moves by noise).
fn dominates_beyond(q: (f64, f64), p: (f64, f64), margin: f64) -> bool {
    let gain = |a: f64, b: f64| {
        if b == 0.0 {
            if a > b { f64::INFINITY } else { 0.0 }
        } else {
            (a - b) / b.abs()
        }
    };
    let (gx, gy) = (gain(q.0, p.0), gain(q.1, p.1));
    if margin <= 0.0 {
        return dominates(q, p);
    }
    gx >= -margin && gy >= -margin && (gx > margin || gy > margin)
}

/// The points of `these` some point of `by` dominates beyond `margin`, described.
fn dominated(
    these: &[FrontierPoint],
    by: &[FrontierPoint],
    xy: Coords,
    margin: f64,
) -> Vec<String> {
    let others: Vec<(f64, f64)> = by.iter().filter_map(|p| Some(xy(p)?.0)).collect();
    these
        .iter()
        .filter_map(xy)
        .filter(|(p, _)| others.iter().any(|q| dominates_beyond(*q, *p, margin)))
        .map(|(_, text)| text)
        .collect()
}

/// The frontier `frontier` of `b`'s context: `base`'s points against `new`'s.
fn change(
    b: &FrontierView,
    frontier: &str,
    (base, new): (&[FrontierPoint], &[FrontierPoint]),
    xy: Coords,
    margin: f64,
) -> FrontierChange {
    let base_dominated = dominated(base, new, xy, margin);
    let new_dominated = dominated(new, base, xy, margin);
    let verdict = match (base_dominated.is_empty(), new_dominated.is_empty()) {
        (false, true) => "ahead",
        (true, false) => "behind",
        (false, false) => "mixed",
        (true, true) => "even",
    };
    FrontierChange {
        context_label: b.context_label.clone(),
        frontier: frontier.into(),
        base_points: base.len(),
        new_points: new.len(),
        base_dominated,
        new_dominated,
        verdict: verdict.into(),
    }
}

/// `judged nothing: …` without a change; else each change's verdict.
fn summary(changes: &[FrontierChange]) -> String {
    if changes.is_empty() {
        return "judged nothing: no context has frontier points in both runs".into();
    }
    changes
        .iter()
        .map(|c| format!("{} at {} ({})", c.verdict, c.context_label, c.frontier))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests;
