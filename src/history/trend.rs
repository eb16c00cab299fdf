//! Trends: one series per spec name, cell and metric, its points ordered by their runs'
//! starts (or by a label such as the engine's version), each point judged against the points
//! before it (up to the last 5): past `compare`'s threshold and floors, and — where the
//! newest point has repeats, or there are at least 3 earlier points — Welch's t-test at
//! `alpha` agreeing (without repeats the earlier points' own run-to-run spread stands for the
//! newest point's noise). Pure functions over rows read from the store.

use super::HistoryError;
use super::store::Store;
use crate::report::verdict::{LATENCIES, RATES, Rules, Verdict};
use crate::results::significance::{two_sided_p, welch_p};
use serde::Serialize;
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet};

/// How many earlier points a point is judged against.
pub const BASELINE: usize = 5;

/// A judged point's flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flag {
    /// Worse than the points before it.
    Regression,
    /// Better than the points before it.
    Improvement,
}

/// One run's value of a series.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    /// The run's identity.
    pub run: String,
    /// The run's start (UTC, RFC 3339).
    pub started_at: String,
    /// The value (with repeats, their mean).
    pub value: f64,
    /// The 95% half-width, with repeats.
    pub ci95: Option<f64>,
    /// The run's labels, and `engine_version` when the server reported one.
    pub labels: BTreeMap<String, String>,
    /// The verdict against the points before it.
    pub flag: Option<Flag>,
    /// The change from the mean of the points before it, in percent.
    pub change_pct: Option<f64>,
    /// The significance test's p-value, when there was one.
    pub p_value: Option<f64>,
    /// Each repeat's value.
    #[serde(skip)]
    pub repeats: Vec<f64>,
}

/// One metric of one cell of one spec over the runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Series {
    /// The spec's name.
    pub spec: String,
    /// The cell id.
    pub cell: String,
    /// The metric's key (`total_tok_s`, `ttft_ms_p50`, …).
    pub metric: String,
    /// A rate (higher is better) or a latency.
    pub higher_is_better: bool,
    /// The points, oldest (or lowest label) first.
    pub points: Vec<Point>,
}

impl Series {
    /// The newest point, when it is a regression.
    pub fn newest_regression(&self) -> Option<&Point> {
        self.points
            .last()
            .filter(|p| p.flag == Some(Flag::Regression))
    }
}

/// Which series, and how they are judged.
#[derive(Debug, Clone, Default)]
pub struct TrendQuery {
    /// Only this spec name.
    pub spec: Option<String>,
    /// Only cells matching this glob (`*` and `?`).
    pub cells: Option<String>,
    /// Only these metrics (all headline metrics when empty).
    pub metrics: Vec<String>,
    /// Keep the last N points of each series (judged over all of them first).
    pub last: Option<usize>,
    /// Order by this label (`engine_version` included) instead of the start time.
    pub by: Option<String>,
    /// Thresholds, floors and significance level (`compare`'s).
    pub rules: Rules,
}

/// The metrics a trend follows: the headline metrics `compare` judges.
pub fn known_metrics() -> Vec<&'static str> {
    RATES
        .iter()
        .map(|m| m.0)
        .chain(LATENCIES.iter().map(|m| m.0))
        .collect()
}

impl TrendQuery {
    /// Refuse a `--metric` that is no headline metric, naming the metrics there are.
    pub fn check(&self) -> Result<(), HistoryError> {
        let known = known_metrics();
        match self.metrics.iter().find(|m| !known.contains(&m.as_str())) {
            Some(m) => Err(HistoryError::Usage(format!(
                "unknown metric `{m}` (--metric): the metrics are {}",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// `*` any run of characters, `?` one character.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    go(&p, &t)
}

/// `0.10.2` after `0.9.1`: digits compared as numbers, the rest as text.
fn version_key(v: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut digits = String::new();
    let mut rest = String::new();
    for c in v.chars() {
        if c.is_ascii_digit() {
            if !rest.is_empty() {
                out.push((0, std::mem::take(&mut rest)));
            }
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
                digits.clear();
            }
            rest.push(c);
        }
    }
    if !digits.is_empty() {
        out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
    }
    if !rest.is_empty() {
        out.push((0, rest));
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The p-value of `newest` against `earlier`: Welch's test between the newest point's repeats
/// and the earlier points' repeats (or values); without repeats of its own, the newest value
/// against the earlier points' spread (a prediction interval, ≥ 3 earlier points).
fn p_value(earlier: &[&Point], newest: &Point) -> Option<f64> {
    let values: Vec<f64> = earlier.iter().map(|p| p.value).collect();
    if newest.repeats.len() >= 2 {
        let pooled: Vec<f64> = earlier
            .iter()
            .flat_map(|p| {
                if p.repeats.len() >= 2 {
                    p.repeats.clone()
                } else {
                    vec![p.value]
                }
            })
            .collect();
        if pooled.len() >= 2 {
            return welch_p(&pooled, &newest.repeats);
        }
    }
    if values.len() < 3 {
        return None;
    }
    let m = mean(&values);
    let n = values.len() as f64;
    let sd = (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    if sd == 0.0 {
        return Some(if newest.value == m { 1.0 } else { 0.0 });
    }
    let t = (newest.value - m) / (sd * (1.0 + 1.0 / n).sqrt());
    Some(two_sided_p(t, n - 1.0))
}

/// Judge every point of `s` against the points before it.
pub fn judge(s: &mut Series, rules: &Rules) {
    for i in 1..s.points.len() {
        let earlier: Vec<&Point> = s.points[i.saturating_sub(BASELINE)..i].iter().collect();
        let newest = &s.points[i];
        let base = mean(&earlier.iter().map(|p| p.value).collect::<Vec<_>>());
        let change = (base != 0.0).then(|| (newest.value - base) / base * 100.0);
        let p = p_value(&earlier, newest);
        let verdict = rules.judge(
            &s.metric,
            (Some(base), Some(newest.value)),
            change,
            p,
            s.higher_is_better,
        );
        let flag = match verdict {
            Verdict::Regression => Some(Flag::Regression),
            Verdict::Improvement => Some(Flag::Improvement),
            _ => None,
        };
        let point = &mut s.points[i];
        point.flag = flag;
        point.change_pct = change.map(|c| (c * 100.0).round() / 100.0);
        point.p_value = p.map(|p| (p * 1e4).round() / 1e4);
    }
}

/// One row of the store's metrics, with its run.
#[derive(Debug, Clone)]
pub struct Row0 {
    pub(super) spec: String,
    pub(super) cell: String,
    pub(super) metric: String,
    pub(super) point: Point,
}

/// The series `q` asks for, from `rows`, judged.
pub fn series(rows: Vec<Row0>, q: &TrendQuery) -> Vec<Series> {
    let mut by_key: BTreeMap<(String, String, String), Vec<Point>> = BTreeMap::new();
    for r in rows {
        if q.spec.as_ref().is_some_and(|s| *s != r.spec)
            || q.cells.as_ref().is_some_and(|g| !glob(g, &r.cell))
            || (!q.metrics.is_empty() && !q.metrics.contains(&r.metric))
        {
            continue;
        }
        by_key
            .entry((r.spec, r.cell, r.metric))
            .or_default()
            .push(r.point);
    }
    let mut out = Vec::new();
    for ((spec, cell, metric), mut points) in by_key {
        points.sort_by(|a, b| {
            let label = |p: &Point| {
                q.by.as_ref()
                    .and_then(|k| p.labels.get(k))
                    .map(|v| version_key(v))
            };
            label(a)
                .cmp(&label(b))
                .then_with(|| a.started_at.cmp(&b.started_at))
                .then_with(|| a.run.cmp(&b.run))
        });
        let higher_is_better = RATES.iter().any(|m| m.0 == metric);
        let mut s = Series {
            spec,
            cell,
            metric,
            higher_is_better,
            points,
        };
        judge(&mut s, &q.rules);
        if let Some(n) = q.last {
            let drop = s.points.len().saturating_sub(n);
            s.points.drain(..drop);
        }
        out.push(s);
    }
    out
}

/// The series of a history, and the predicted runs left out of them. As JSON,
/// `{"series": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    /// The series, judged.
    pub series: Vec<Series>,
    /// The runs `benchspec predict` made (of the spec asked for): never a baseline, never
    /// judged.
    #[serde(skip)]
    pub predicted: Vec<String>,
}

/// Read the store's points and make the series `q` asks for, leaving predicted runs out.
pub async fn trend(store: &Store, q: &TrendQuery) -> Result<Trend, HistoryError> {
    q.check()?;
    let predicted: BTreeSet<String> = super::list::list(store, None)
        .await?
        .into_iter()
        .filter(|r| r.predicted_by.is_some() && q.spec.as_ref().is_none_or(|s| *s == r.spec))
        .map(|r| r.run)
        .collect();
    let rows = points(store, Some(q)).await?;
    let measured = rows
        .into_iter()
        .filter(|r| !predicted.contains(&r.point.run))
        .collect();
    Ok(Trend {
        series: series(measured, q),
        predicted: predicted.into_iter().collect(),
    })
}

/// The store's metric rows of measured and predicted runs alike: those `q` asks for (its spec
/// and metrics filtered by the database, its cell glob by [`series`]), or all of them.
pub(super) async fn points(
    store: &Store,
    q: Option<&TrendQuery>,
) -> Result<Vec<Row0>, HistoryError> {
    let mut statement = format!("{} WHERE 1 = 1", super::sql::POINTS);
    let mut binds = Vec::new();
    if let Some(spec) = q.and_then(|q| q.spec.as_ref()) {
        binds.push(spec.clone());
        statement.push_str(&format!(" AND r.spec = ${}", binds.len()));
    }
    if let Some(metrics) = q.map(|q| &q.metrics).filter(|m| !m.is_empty()) {
        let mut marks = Vec::new();
        for m in metrics {
            binds.push(m.clone());
            marks.push(format!("${}", binds.len()));
        }
        statement.push_str(&format!(" AND m.metric IN ({})", marks.join(", ")));
    }
    let rows = store.rows(&statement, &binds).await?;
    Ok(rows.iter().filter_map(row0).collect())
}

/// A metric row of the store, with its run.
fn row0(row: &sqlx::any::AnyRow) -> Option<Row0> {
    let text = |c: &str| row.try_get::<Option<String>, _>(c).ok().flatten();
    let mut labels: BTreeMap<String, String> =
        serde_json::from_str(&text("labels")?).unwrap_or_default();
    if let Some(v) = text("engine_version") {
        labels.insert("engine_version".into(), v);
    }
    Some(Row0 {
        spec: text("spec")?,
        cell: text("cell")?,
        metric: text("metric")?,
        point: Point {
            run: text("run_id")?,
            started_at: text("started_at")?,
            value: row.try_get("value").ok()?,
            ci95: row.try_get::<Option<f64>, _>("ci95").ok().flatten(),
            labels,
            flag: None,
            change_pct: None,
            p_value: None,
            repeats: text("repeats")
                .and_then(|r| serde_json::from_str(&r).ok())
                .unwrap_or_default(),
        },
    })
}

#[cfg(test)]
#[path = "trend_tests.rs"]
mod tests;
