//! Why `history trend` has no series: its filters match nothing, said naming what the history
//! holds — the specs of its measured runs, the cells of the spec asked for, the metrics of the
//! cells asked for — so that a gate with a typo stops (exit 2) instead of passing on nothing.

use super::HistoryError;
use super::store::Store;
use super::trend::{Row0, TrendQuery, glob, points};
use std::collections::BTreeSet;

/// How many names a message lists before `… and N more`.
const SHOWN: usize = 20;

/// The error of a trend whose filters `q` match no series of `store`.
pub async fn nothing_matches(store: &Store, q: &TrendQuery) -> HistoryError {
    let runs = match super::list::list(store, None).await {
        Ok(runs) => runs,
        Err(e) => return e,
    };
    let predicted: BTreeSet<String> = runs
        .into_iter()
        .filter(|r| r.predicted_by.is_some())
        .map(|r| r.run)
        .collect();
    match points(store, None).await {
        Ok(rows) => HistoryError::NoMatch(explain(&rows, &predicted, q, &store.target().shown())),
        Err(e) => e,
    }
}

/// `a`, `b`, `c` — distinct, sorted, at most [`SHOWN`] of them.
fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let set: BTreeSet<&str> = items.collect();
    let mut shown: Vec<String> = set.iter().take(SHOWN).map(|s| format!("`{s}`")).collect();
    if set.len() > SHOWN {
        shown.push(format!("… and {} more", set.len() - SHOWN));
    }
    shown.join(", ")
}

/// Which filter of `q` leaves nothing of `rows` (all the history's metric rows; those of the
/// `predicted` runs do not count), naming what there is at that step.
pub fn explain(rows: &[Row0], predicted: &BTreeSet<String>, q: &TrendQuery, db: &str) -> String {
    let left_out = match predicted.len() {
        0 => String::new(),
        n => format!(" ({n} predicted run(s) there are left out of trends)"),
    };
    let measured: Vec<&Row0> = rows
        .iter()
        .filter(|r| !predicted.contains(&r.point.run))
        .collect();
    if measured.is_empty() {
        return format!(
            "no series: the history at {db} holds no measured run{left_out}; `history add \
             RUN_DIR` adds one"
        );
    }
    let of_spec: Vec<&Row0> = measured
        .iter()
        .copied()
        .filter(|r| q.spec.as_ref().is_none_or(|s| *s == r.spec))
        .collect();
    let spec = q.spec.as_ref().map(|s| format!(" of spec `{s}`"));
    let spec = spec.unwrap_or_default();
    if of_spec.is_empty() {
        return format!(
            "no series: no measured run{spec} in the history at {db}{left_out}; its specs: {}",
            names(measured.iter().map(|r| r.spec.as_str()))
        );
    }
    let of_cells: Vec<&Row0> = of_spec
        .iter()
        .copied()
        .filter(|r| q.cells.as_ref().is_none_or(|g| glob(g, &r.cell)))
        .collect();
    if of_cells.is_empty() {
        return format!(
            "no series: no cell{spec} matches `{}` in the history at {db}; its cells: {}",
            q.cells.as_deref().unwrap_or("*"),
            names(of_spec.iter().map(|r| r.cell.as_str()))
        );
    }
    let cells = q
        .cells
        .as_ref()
        .map(|g| format!(" matching `{g}`"))
        .unwrap_or_default();
    format!(
        "no series: no cell{spec}{cells} in the history at {db} has the metric {}; the metrics \
         there: {}",
        names(q.metrics.iter().map(String::as_str)).replace(", ", " or "),
        names(of_cells.iter().map(|r| r.metric.as_str()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::trend::Point;

    fn row(run: &str, spec: &str, cell: &str, metric: &str) -> Row0 {
        Row0 {
            spec: spec.into(),
            cell: cell.into(),
            metric: metric.into(),
            point: Point {
                run: run.into(),
                started_at: "2026-12-01T00:00:00Z".into(),
                value: 1.0,
                ci95: None,
                labels: Default::default(),
                flag: None,
                change_pct: None,
                p_value: None,
                repeats: Vec::new(),
            },
        }
    }

    fn query(spec: Option<&str>, cells: Option<&str>, metrics: &[&str]) -> TrendQuery {
        TrendQuery {
            spec: spec.map(Into::into),
            cells: cells.map(Into::into),
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            ..TrendQuery::default()
        }
    }

    #[test]
    fn names_the_first_filter_that_leaves_nothing() {
        let rows = [
            row("r1", "nightly", "decode/256/c1", "total_tok_s"),
            row("r1", "nightly", "decode/256/c4", "tbt_ms_p50"),
            row("r2", "weekly", "prefill/1K", "prefill_tok_s"),
            row("p1", "predicted-only", "decode/256/c1", "total_tok_s"),
        ];
        let predicted: BTreeSet<String> = ["p1".to_string()].into();
        let cases = [
            (
                query(Some("no such spec"), None, &[]),
                "no measured run of spec `no such spec` in the history at h.sqlite (1 predicted \
                 run(s) there are left out of trends); its specs: `nightly`, `weekly`",
            ),
            // A spec whose only runs were predicted has no measured run.
            (
                query(Some("predicted-only"), None, &[]),
                "no measured run of spec `predicted-only`",
            ),
            (
                query(Some("nightly"), Some("prefill/*"), &[]),
                "no cell of spec `nightly` matches `prefill/*` in the history at h.sqlite; its \
                 cells: `decode/256/c1`, `decode/256/c4`",
            ),
            (
                query(None, Some("decode/*/c1"), &["capacity"]),
                "no cell matching `decode/*/c1` in the history at h.sqlite has the metric \
                 `capacity`; the metrics there: `total_tok_s`",
            ),
        ];
        for (q, want) in cases {
            let got = explain(&rows, &predicted, &q, "h.sqlite");
            assert!(got.contains(want), "{q:?}:\n{got}\nwant: {want}");
        }
        let empty = explain(&rows[3..], &predicted, &query(None, None, &[]), "h.sqlite");
        assert!(
            empty.contains("holds no measured run (1 predicted run(s)"),
            "{empty}"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let many: Vec<String> = (0..25).map(|i| format!("c{i:02}")).collect();
        let text = names(many.iter().map(String::as_str));
        assert!(text.starts_with("`c00`, `c01`"), "{text}");
        assert!(text.ends_with("`c19`, … and 5 more"), "{text}");
    }
}
