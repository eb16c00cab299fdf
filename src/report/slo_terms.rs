//! The open-loop parts of the report context (docs/reports.md): the SLO as readable terms, each
//! measured cell's value at every term's own percentile, the verdict of a cell against the
//! SLO (`meets SLO`, `misses: TTFT p90 307 ms > 40 ms`), and the load cells in the order of
//! their rates.

use super::format::grouped;
use super::view::{CellView, SloValue};
use crate::plan::Phase;
use crate::results::Record;
use crate::results::slo::at;
use crate::spec::{Slo, SloMetric};
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
    /// `TTFT p90`: the column head of the measured value.
    pub head: String,
}

/// `TTFT`, `TPOT`, `ITL` or `E2E`.
pub(super) fn name(m: SloMetric) -> &'static str {
    match m {
        SloMetric::Ttft => "TTFT",
        SloMetric::Tpot => "TPOT",
        SloMetric::Itl => "ITL",
        SloMetric::E2e => "E2E",
    }
}

/// `412 ms`, `38.5 ms`.
pub(super) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{} ms", grouped(v, 0))
    } else {
        format!("{} ms", grouped(v, 1))
    }
}

/// A threshold: `40 ms`, `2.5 ms`, `1,000 ms`.
pub(super) fn threshold(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{} ms", grouped(v, 0))
    } else {
        ms(v)
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
                label: format!("{} p{p} ≤ {}", name(m), threshold(limit_ms)),
                head: format!("{} p{p}", name(m)),
            }
        })
        .collect()
}

/// A record's value of `m` at `p`, milliseconds.
pub(super) fn value(r: &Record, m: SloMetric, p: u8) -> Option<f64> {
    let s = match m {
        SloMetric::Ttft => r.ttft_ms,
        SloMetric::Tpot => r.open.tpot_ms,
        SloMetric::Itl => r.open.itl_ms.or(r.tbt_ms),
        SloMetric::E2e => r.open.e2e_ms,
    };
    s.map(|s| at(&s, p))
}

/// The values of a measured decode or load record at each SLO term's percentile; empty for
/// other records or without an SLO.
pub(super) fn slo_values(r: Option<&Record>, slo: &Slo) -> Vec<SloValue> {
    let Some(r) = r.filter(|r| matches!(r.phase, Phase::Decode | Phase::Load)) else {
        return Vec::new();
    };
    slo.terms()
        .map(|(m, p, limit)| {
            let v = value(r, m, p);
            SloValue {
                head: format!("{} p{p}", name(m)),
                value_ms: v,
                met: v.is_some_and(|v| v <= limit.as_secs_f64() * 1e3),
            }
        })
        .collect()
}

/// `TTFT p90 412 ms < 500 ms, TPOT p90 38 ms < 50 ms` for a probe's record.
pub(super) fn against(r: &Record, slo: &Slo) -> String {
    slo.terms()
        .map(|(m, p, limit)| {
            let limit = limit.as_secs_f64() * 1e3;
            match value(r, m, p) {
                Some(v) => {
                    let cmp = if v <= limit { "<" } else { ">" };
                    format!("{} p{p} {} {cmp} {}", name(m), ms(v), threshold(limit))
                }
                None => format!("{} p{p} not measured", name(m)),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a measured cell met the SLO: `meets SLO`, or what it missed (`misses: TTFT p90
/// 307 ms > 40 ms`; an invalid cell misses for being invalid).
pub fn verdict(r: &Record, slo: &Slo) -> String {
    let over: Vec<String> = slo
        .terms()
        .filter_map(|(m, p, limit)| {
            let limit = limit.as_secs_f64() * 1e3;
            match value(r, m, p) {
                Some(v) if v <= limit => None,
                Some(v) => Some(format!("{} p{p} {} > {}", name(m), ms(v), threshold(limit))),
                None => Some(format!("{} p{p} not measured", name(m))),
            }
        })
        .collect();
    let invalid = r.status != crate::results::Status::Valid;
    if let (true, false, Some(why)) = (over.is_empty(), invalid, &r.open.saturated) {
        return format!("misses: saturated ({why})");
    }
    match (over.is_empty(), invalid) {
        (true, false) if r.open.slo_met != Some(false) => "meets SLO".into(),
        (true, _) => format!("misses: the cell is {}", r.status.as_str()),
        (false, _) => format!("misses: {}", over.join(", ")),
    }
}

/// The load cells, by context and then by rate (`inf` last).
pub fn load_cells(cells: &[CellView]) -> Vec<CellView> {
    let mut load: Vec<CellView> = cells
        .iter()
        .filter(|c| c.phase == Phase::Load && !c.probe)
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
