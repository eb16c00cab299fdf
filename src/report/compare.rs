//! `benchspec compare BASE NEW`: the change of each cell's rates and latencies between two
//! runs, each judged `regression`, `improvement`, `no significant change` or `not
//! comparable` — past the threshold and an absolute floor, and, where both runs measured the
//! cell several times, significant by Welch's t-test — a cell that was valid and is no longer
//! also regressed; and the cells that only one run has. A base cell the new run lacks fails
//! the comparison (unless allowed), and so does a comparison with no cell in common.

use super::compare_traffic as traffic;
pub use super::compare_traffic::{Acceptance, AdapterChange, ImagesChange};
use super::context;
use super::verdict::{LATENCIES, Pick, RATES, probe};
pub use super::verdict::{Rules, Verdict, parse_threshold};
use crate::results::significance::welch_p;
use crate::results::{Record, Status};
use crate::rundir::Run as RunDir;
use schemars::JsonSchema;
use serde::Serialize;

/// The version tag of the comparison.
pub const COMPARE_SCHEMA: &str = "benchspec.compare.v1";

/// Two runs side by side.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Comparison {
    /// Always `benchspec.compare.v1`.
    pub schema: String,
    /// The base run.
    pub base: Side,
    /// The new run.
    pub new: Side,
    /// A change beyond this many percent in the worse direction is a regression.
    pub threshold_pct: f64,
    /// How a change is judged: significance level and absolute floors.
    pub rules: Rules,
    /// Cells both runs recorded, in the base run's order.
    pub rows: Vec<Row>,
    /// Cells only the base run recorded: missing from the new run.
    pub only_base: Vec<String>,
    /// Cells only the new run recorded.
    pub only_new: Vec<String>,
    /// Rows marked as regressions.
    pub regressions: usize,
    /// `--allow-missing`: base cells missing from the new run do not fail the comparison.
    pub allow_missing: bool,
    /// The verdict in words: `no regression`, `no cell in common`, `2 regression(s), 1 base
    /// cell(s) missing from the new run`.
    pub summary: String,
    /// The comparison passes: no regression, a cell measured in both runs (a metric
    /// judged), and no base cell missing from the new run (unless allowed). `compare` exits 1 when it does not.
    pub passed: bool,
    /// Where the new run's frontier (tok/s per GPU, and $/Mtok, against per-user tok/s)
    /// dominates or falls behind the base's, per context; informs, does not gate.
    pub frontier: super::frontier_compare::FrontierComparison,
}

/// One run of a comparison.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Side {
    /// The run directory.
    pub dir: String,
    /// The spec's name.
    pub name: String,
    /// `vllm · 0.27.2 · BF16`.
    pub engine_line: String,
    /// `Discrete GPU · H200 NVL · 141 GB · linux`.
    pub hardware_line: String,
    /// What the server reported as its version.
    pub reported_version: Option<String>,
    /// When the run started.
    pub started_at: Option<String>,
}

/// One cell in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Row {
    /// The cell id.
    pub cell: String,
    /// The base run's status.
    pub base_status: String,
    /// The new run's status.
    pub new_status: String,
    /// The compared values.
    pub metrics: Vec<Metric>,
    /// Any metric regressed, or the cell stopped being valid.
    pub regression: bool,
    /// Why, in words.
    pub notes: Vec<String>,
    /// Speculative decoding's acceptance in both runs, where either measured it: a rate's
    /// change read beside it (context, never a verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<Acceptance>,
    /// The images of the cell's prompts in both runs, where either sent images (context,
    /// never a verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesChange>,
    /// Each LoRA adapter's share in both runs, where either spread its requests over
    /// adapters (context, never a verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapters: Option<Vec<AdapterChange>>,
}

/// One value in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Metric {
    /// `total_tok_s`, `per_request_tok_s`, `prefill_tok_s`, `tokens_per_joule`, `ttft_ms_p50`,
    /// `tbt_ms_p50`, and the open-loop keys.
    pub key: String,
    /// `Total tok/s`.
    pub label: String,
    /// In the base run.
    pub base: Option<f64>,
    /// In the new run.
    pub new: Option<f64>,
    /// (new − base) / base in percent.
    pub change_pct: Option<f64>,
    /// A rate (higher is better) or a latency (lower is better).
    pub higher_is_better: bool,
    /// `regression`, `improvement`, `no significant change` or `not comparable`.
    pub verdict: Verdict,
    /// Worse by more than the threshold (and the floor, and significantly with repeats).
    pub regression: bool,
    /// Welch's t-test p-value, where both runs measured the cell several times.
    pub p_value: Option<f64>,
    /// The 95% half-widths, where the runs have them.
    pub base_ci95: Option<f64>,
    /// The new run's.
    pub new_ci95: Option<f64>,
}

fn status(r: &Record) -> String {
    r.status.as_str().to_string()
}

fn side(run: &RunDir, cx: context::Context) -> Side {
    Side {
        dir: run.path.display().to_string(),
        name: cx.subtitle,
        engine_line: cx.engine_line,
        hardware_line: cx
            .hardware
            .iter()
            .map(|i| i.value.as_str())
            .collect::<Vec<_>>()
            .join(" · "),
        reported_version: cx.run.engine_reported_version,
        started_at: cx.run.started_at,
    }
}

fn values(r: &Record, key: &str) -> Option<Vec<f64>> {
    r.per_repeat.as_ref()?.get(key).cloned()
}

fn half(r: &Record, key: &str) -> Option<f64> {
    r.ci95.as_ref()?.get(key).copied()
}

/// One metric of a cell in both runs, judged by `rules`.
fn metric(
    (key, label, pick): (&str, &str, Pick),
    b: &Record,
    n: &Record,
    higher: bool,
    rules: &Rules,
) -> Option<Metric> {
    let (base, new) = (pick(b), pick(n));
    if base.is_none() && new.is_none() {
        return None;
    }
    let change_pct = match (base, new) {
        (Some(b), Some(n)) if b != 0.0 => Some((n - b) / b * 100.0),
        _ => None,
    };
    let p_value = match (values(b, key), values(n, key)) {
        (Some(x), Some(y)) => welch_p(&x, &y),
        _ => None,
    };
    let verdict = rules.judge(key, (base, new), change_pct, p_value, higher);
    Some(Metric {
        key: key.into(),
        label: label.into(),
        base,
        new,
        change_pct,
        higher_is_better: higher,
        regression: verdict == Verdict::Regression,
        verdict,
        p_value: p_value.map(|p| (p * 1e4).round() / 1e4),
        base_ci95: half(b, key),
        new_ci95: half(n, key),
    })
}

fn row(b: &Record, n: &Record, rules: &Rules) -> Row {
    let measured = |r: &Record| matches!(r.status, Status::Valid | Status::Invalid);
    let mut metrics = Vec::new();
    if measured(b) && measured(n) {
        metrics.extend(RATES.iter().filter_map(|m| metric(*m, b, n, true, rules)));
        metrics.extend(
            LATENCIES
                .iter()
                .filter_map(|m| metric(*m, b, n, false, rules)),
        );
    }
    let mut notes: Vec<String> = metrics
        .iter()
        .filter(|m| m.regression)
        .map(|m| {
            format!(
                "{} {}",
                m.label,
                super::format::pct(m.change_pct.unwrap_or_default())
            )
        })
        .collect();
    if b.status == Status::Valid && n.status != Status::Valid {
        notes.push(format!("was valid, now {}", status(n)));
    }
    Row {
        cell: b.cell.clone(),
        base_status: status(b),
        new_status: status(n),
        regression: !notes.is_empty(),
        acceptance: traffic::acceptance(b, n),
        images: traffic::images(b, n),
        adapters: traffic::adapters(b, n),
        metrics,
        notes,
    }
}

/// Compare `new` with `base` by `rules`; `allow_missing` accepts base cells the new run lacks.
pub fn compare(base: &RunDir, new: &RunDir, rules: Rules, allow_missing: bool) -> Comparison {
    let rows: Vec<Row> = base
        .records
        .iter()
        .filter(|b| b.status != Status::Skipped && !probe(b))
        .filter_map(|b| {
            Some(row(
                b,
                new.record(&b.cell)
                    .filter(|n| n.status != Status::Skipped)?,
                &rules,
            ))
        })
        .collect();
    let only = |a: &RunDir, b: &RunDir| -> Vec<String> {
        a.records
            .iter()
            .filter(|r| r.status != Status::Skipped && !probe(r))
            .filter(|r| {
                b.record(&r.cell)
                    .is_none_or(|o| o.status == Status::Skipped)
            })
            .map(|r| r.cell.clone())
            .collect()
    };
    let regressions = rows.iter().filter(|r| r.regression).count();
    let only_base = only(base, new);
    // Rows with a metric measured in both runs: cells that failed in one run or both are
    // in common but judge nothing.
    let judged = rows.iter().filter(|r| !r.metrics.is_empty()).count();
    let passed = regressions == 0 && judged > 0 && (allow_missing || only_base.is_empty());
    let summary = summary(
        rows.len(),
        judged,
        regressions,
        only_base.len(),
        allow_missing,
    );
    let (bcx, ncx) = (context::Context::build(base), context::Context::build(new));
    Comparison {
        schema: COMPARE_SCHEMA.into(),
        frontier: super::frontier_compare::compare(
            &bcx.frontier,
            &ncx.frontier,
            rules.threshold_pct / 100.0,
        ),
        base: side(base, bcx),
        new: side(new, ncx),
        threshold_pct: rules.threshold_pct,
        rules,
        regressions,
        only_base,
        only_new: only(new, base),
        rows,
        allow_missing,
        summary,
        passed,
    }
}

/// The headline's words for `rows` compared, `regressions` among them and `missing` base
/// cells without a counterpart.
fn summary(
    rows: usize,
    judged: usize,
    regressions: usize,
    missing: usize,
    allow_missing: bool,
) -> String {
    if rows == 0 {
        return "no cell in common".into();
    }
    let mut failures = Vec::new();
    if judged == 0 {
        failures.push(format!(
            "nothing judged: none of the {rows} cell(s) in common was measured in both runs"
        ));
    }
    if regressions > 0 {
        failures.push(format!("{regressions} regression(s)"));
    }
    if missing > 0 && !allow_missing {
        failures.push(format!("{missing} base cell(s) missing from the new run"));
    }
    match (failures.is_empty(), missing) {
        (false, _) => failures.join(", "),
        (true, 0) => "no regression".into(),
        (true, n) => format!("no regression ({n} base cell(s) missing from the new run, allowed)"),
    }
}

#[cfg(test)]
mod tests;
