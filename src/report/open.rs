//! The open-loop parts of the report context (contract §8): the SLO as readable terms, the
//! load cells in the order of their rates, and one capacity line per searched context,
//! written from the probe that set it ("Capacity at 16K: 24 requests at once — TTFT p90
//! 412 ms < 500 ms").

use super::context::CellView;
use super::format::{ctx, grouped};
use crate::plan::Phase;
use crate::results::Record;
use crate::results::slo::at;
use crate::spec::{Metric, Slo};
use schemars::JsonSchema;
use serde::Serialize;

/// One objective of the SLO.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SloTerm {
    /// `ttft`, `tpot`, `itl` or `e2e`.
    pub metric: String,
    /// 50, 90, 95 or 99.
    pub percentile: u8,
    /// The threshold, milliseconds.
    pub limit_ms: f64,
    /// `TTFT p90 ≤ 500 ms`.
    pub label: String,
}

/// The capacity a search found at one context.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CapacityView {
    /// Context tokens.
    pub context: u64,
    /// `16K`.
    pub context_label: String,
    /// `concurrency` or `rate`.
    pub search: String,
    /// The highest value that met the SLO; `null` when none did.
    pub capacity: Option<f64>,
    /// `Capacity at 16K: 24 requests at once — TTFT p90 412 ms < 500 ms`.
    pub line: String,
}

fn name(m: Metric) -> &'static str {
    match m {
        Metric::Ttft => "TTFT",
        Metric::Tpot => "TPOT",
        Metric::Itl => "ITL",
        Metric::E2e => "E2E",
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{} ms", grouped(v, 0))
    } else {
        format!("{} ms", grouped(v, 1))
    }
}

/// The SLO's terms, in the order metrics are listed.
pub fn slo_terms(slo: &Slo) -> Vec<SloTerm> {
    slo.terms()
        .map(|(m, p, limit)| {
            let limit_ms = limit.as_secs_f64() * 1e3;
            SloTerm {
                metric: m.as_str().into(),
                percentile: p,
                limit_ms,
                label: format!("{} p{p} ≤ {}", name(m), ms(limit_ms)),
            }
        })
        .collect()
}

/// A record's value of `m` at `p`, milliseconds.
fn value(r: &Record, m: Metric, p: u8) -> Option<f64> {
    let s = match m {
        Metric::Ttft => r.ttft_ms,
        Metric::Tpot => r.open.tpot_ms,
        Metric::Itl => r.open.itl_ms.or(r.tbt_ms),
        Metric::E2e => r.open.e2e_ms,
    };
    s.map(|s| at(&s, p))
}

/// `TTFT p90 412 ms < 500 ms, TPOT p90 38 ms < 50 ms` for a probe's record.
fn against(r: &Record, slo: &Slo) -> String {
    slo.terms()
        .map(|(m, p, limit)| {
            let limit = limit.as_secs_f64() * 1e3;
            match value(r, m, p) {
                Some(v) => {
                    let cmp = if v <= limit { "<" } else { ">" };
                    format!("{} p{p} {} {cmp} {}", name(m), ms(v), ms(limit))
                }
                None => format!("{} p{p} not measured", name(m)),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The probe id of `value` in the search at `context`.
fn probe_id(context: u64, search: &str, value: f64) -> String {
    let tag = if search == "rate" { "r" } else { "c" };
    format!("capacity/{}/{tag}{value}", crate::spec::Tokens(context))
}

/// The probe just above `value` in the search at `label` (the one that bounded it).
fn next_probe<'a>(records: &'a [Record], label: &str, value: f64) -> Option<(f64, &'a Record)> {
    let prefix = format!("capacity/{label}/");
    records
        .iter()
        .filter_map(|r| {
            let v: f64 = r.cell.strip_prefix(&prefix)?.get(1..)?.parse().ok()?;
            (v > value).then_some((v, r))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// One line per capacity summary record.
pub fn capacity(records: &[Record], slo: &Slo) -> Vec<CapacityView> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Capacity)
        .map(|r| {
            let search = r.open.search.clone().unwrap_or_default();
            let label = ctx(r.context);
            let unit = |v: f64| match search.as_str() {
                "rate" => format!("{} requests/s", grouped(v, 2).trim_end_matches(".00")),
                _ if v == 1.0 => "1 request at once".to_string(),
                _ => format!("{v} requests at once"),
            };
            let line = match r.open.capacity {
                Some(v) => {
                    let probe = records
                        .iter()
                        .find(|p| p.cell == probe_id(r.context, &search, v));
                    let why = probe.map(|p| against(p, slo)).unwrap_or_default();
                    let next = next_probe(records, &label, v)
                        .map(|(n, p)| format!("; at {n}: {}", against(p, slo)))
                        .unwrap_or_default();
                    format!("Capacity at {label}: {} — {why}{next}", unit(v))
                }
                None => {
                    let first = records
                        .iter()
                        .find(|p| p.cell.starts_with(&format!("capacity/{label}/")));
                    let why = first.map(|p| against(p, slo)).unwrap_or_default();
                    format!(
                        "Capacity at {label}: none — the lowest load tried misses the SLO ({why})"
                    )
                }
            };
            CapacityView {
                context: r.context,
                context_label: label,
                search,
                capacity: r.open.capacity,
                line,
            }
        })
        .collect()
}

/// The load cells, by context and then by rate (`inf` last).
pub fn load_cells(cells: &[CellView]) -> Vec<CellView> {
    let mut load: Vec<CellView> = cells
        .iter()
        .filter(|c| c.phase == Phase::Load)
        .cloned()
        .collect();
    let rate = |c: &CellView| {
        c.record
            .as_ref()
            .and_then(|r| r.open.rate_offered)
            .map_or(f64::INFINITY, |r| r.0)
    };
    load.sort_by(|a, b| a.context.cmp(&b.context).then(rate(a).total_cmp(&rate(b))));
    load
}
