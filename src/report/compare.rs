//! `benchspec compare BASE NEW`: the change of each cell's rates and latencies between two
//! runs, with regressions marked — a rate down, or a latency up, by more than the threshold,
//! or a cell that was valid and is no longer — and the cells that only one run has.

use super::{ReportError, context};
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
    /// Cells both runs recorded, in the base run's order.
    pub rows: Vec<Row>,
    /// Cells only the base run recorded.
    pub only_base: Vec<String>,
    /// Cells only the new run recorded.
    pub only_new: Vec<String>,
    /// Rows marked as regressions.
    pub regressions: usize,
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
    /// Worse by more than the threshold.
    pub regression: bool,
}

/// Parse `5%`, `5` or `2.5%` as percent.
pub fn parse_threshold(text: &str) -> Result<f64, ReportError> {
    let t = text.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| ReportError::Threshold(text.to_string()))
}

fn status(r: &Record) -> String {
    r.status.as_str().to_string()
}

fn side(run: &RunDir) -> Side {
    let cx = context::Context::build(run);
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

type Pick = fn(&Record) -> Option<f64>;

const RATES: [(&str, &str, Pick); 7] = [
    ("total_tok_s", "Total tok/s", |r| r.total_tok_s),
    ("per_request_tok_s", "Per request tok/s", |r| {
        r.per_request_tok_s
    }),
    ("prefill_tok_s", "Prefill tok/s", |r| r.prefill_tok_s),
    ("rate_achieved", "Achieved req/s", |r| r.open.rate_achieved),
    ("goodput_rps", "Goodput req/s", |r| r.open.goodput_rps),
    ("capacity", "Capacity", |r| r.open.capacity),
    ("tokens_per_joule", "Tokens per joule", |r| {
        r.tokens_per_joule
    }),
];
const LATENCIES: [(&str, &str, Pick); 5] = [
    ("ttft_ms_p50", "TTFT p50", |r| r.ttft_ms.map(|s| s.p50)),
    ("tbt_ms_p50", "TBT p50", |r| r.tbt_ms.map(|s| s.p50)),
    ("ttft_ms_p99", "TTFT p99", |r| {
        r.open.rate_offered.and(r.ttft_ms.map(|s| s.p99))
    }),
    ("tpot_ms_p50", "TPOT p50", |r| {
        r.open.rate_offered.and(r.open.tpot_ms.map(|s| s.p50))
    }),
    ("e2e_ms_p99", "E2E p99", |r| {
        r.open.rate_offered.and(r.open.e2e_ms.map(|s| s.p99))
    }),
];

/// A capacity search's probe: its value differs from run to run, so only the search's
/// summary record is compared.
fn probe(r: &Record) -> bool {
    r.cell.starts_with("capacity/") && r.phase != crate::plan::Phase::Capacity
}

fn metric(
    key: &str,
    label: &str,
    pick: Pick,
    b: &Record,
    n: &Record,
    higher: bool,
    threshold: f64,
) -> Option<Metric> {
    let (base, new) = (pick(b), pick(n));
    if base.is_none() && new.is_none() {
        return None;
    }
    let change_pct = match (base, new) {
        (Some(b), Some(n)) if b != 0.0 => Some((n - b) / b * 100.0),
        _ => None,
    };
    let regression = change_pct.is_some_and(|c| {
        if higher {
            c < -threshold
        } else {
            c > threshold
        }
    });
    Some(Metric {
        key: key.into(),
        label: label.into(),
        base,
        new,
        change_pct,
        higher_is_better: higher,
        regression,
    })
}

fn row(b: &Record, n: &Record, threshold: f64) -> Row {
    let measured = |r: &Record| matches!(r.status, Status::Valid | Status::Invalid);
    let mut metrics = Vec::new();
    if measured(b) && measured(n) {
        metrics.extend(
            RATES
                .iter()
                .filter_map(|(k, l, p)| metric(k, l, *p, b, n, true, threshold)),
        );
        metrics.extend(
            LATENCIES
                .iter()
                .filter_map(|(k, l, p)| metric(k, l, *p, b, n, false, threshold)),
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
        metrics,
        notes,
    }
}

/// Compare `new` with `base`.
pub fn compare(base: &RunDir, new: &RunDir, threshold_pct: f64) -> Comparison {
    let rows: Vec<Row> = base
        .records
        .iter()
        .filter(|b| b.status != Status::Skipped && !probe(b))
        .filter_map(|b| {
            Some(row(
                b,
                new.record(&b.cell)
                    .filter(|n| n.status != Status::Skipped)?,
                threshold_pct,
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
    Comparison {
        schema: COMPARE_SCHEMA.into(),
        base: side(base),
        new: side(new),
        threshold_pct,
        regressions: rows.iter().filter(|r| r.regression).count(),
        only_base: only(base, new),
        only_new: only(new, base),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_threshold;

    #[test]
    fn thresholds() {
        assert_eq!(parse_threshold("5%").ok(), Some(5.0));
        assert_eq!(parse_threshold("2.5").ok(), Some(2.5));
        assert_eq!(parse_threshold(" 0% ").ok(), Some(0.0));
        for bad in ["", "five", "-1%", "%", "inf"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
