//! The capacity searches of the report context (docs/reports.md): one line per searched context,
//! written from the probe that set it ("Capacity at 16K: 24 requests at once — TTFT p90
//! 412 ms < 500 ms"), and the probes themselves in the order of the searched value, each
//! with its values at the SLO's own percentiles and whether it met the SLO.

use super::format::{ctx, grouped};
use super::slo_terms::{SloTerm, against, slo_terms, verdict};
use super::view::CellView;
use crate::plan::Phase;
use crate::results::{CapacityBound, Record, Status};
use crate::spec::Slo;
use schemars::JsonSchema;
use serde::Serialize;

/// The capacity a search found at one context, and its probes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CapacityView {
    /// Context tokens.
    pub context: u64,
    /// `16K`.
    pub context_label: String,
    /// `concurrency` or `rate`.
    pub search: String,
    /// `Requests at once` or `Offered req/s`: what the probes' values are.
    pub axis_label: String,
    /// The highest value that met the SLO; `null` when none did.
    pub capacity: Option<f64>,
    /// `exact`, `at_least` (the search's `max` met the SLO: the capacity is that or more) or
    /// `below_min` (not even its `min` did).
    pub bound: CapacityBound,
    /// `Capacity at 16K: 24 requests at once — TTFT p90 412 ms < 500 ms`.
    pub line: String,
    /// The probes, by the searched value.
    pub probes: Vec<ProbeView>,
}

/// One probe of a capacity search.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProbeView {
    /// The searched value probed.
    pub value: f64,
    /// `24` or `2.5 req/s`.
    pub value_label: String,
    /// The probe met the SLO (measured validly, every objective held).
    pub meets_slo: bool,
    /// `meets SLO` or `misses: TTFT p90 307 ms > 40 ms`.
    pub verdict: String,
    /// The probe's cell, with its record and SLO values.
    pub cell: CellView,
}

/// The searched value of a probe id (`capacity/1K/c24` → 24).
pub(super) fn probe_value(id: &str) -> Option<f64> {
    id.rsplit('/').next()?.get(1..)?.parse().ok()
}

/// `24 requests at once`, `1 request at once`, `2.5 requests/s`.
fn unit(search: &str, v: f64) -> String {
    match search {
        "rate" => format!("{} requests/s", grouped(v, 2).trim_end_matches(".00")),
        _ if v == 1.0 => "1 request at once".to_string(),
        _ => format!("{v} requests at once"),
    }
}

/// One view per capacity summary record, with the probes of its search.
pub fn capacity(records: &[Record], cells: &[CellView], slo: &Slo) -> Vec<CapacityView> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Capacity)
        .map(|r| {
            let search = r.open.search.clone().unwrap_or_default();
            let probes = probes(r, cells, slo);
            let bound = bound(r, &probes);
            let line = line(r, &search, &probes, slo, bound);
            CapacityView {
                context: r.context,
                context_label: ctx(r.context),
                axis_label: match search.as_str() {
                    "rate" => "Offered req/s",
                    _ => "Requests at once",
                }
                .into(),
                search,
                capacity: r.open.capacity,
                bound,
                line,
                probes,
            }
        })
        .collect()
}

/// The measured probes of the search `summary` ended, by value.
fn probes(summary: &Record, cells: &[CellView], slo: &Slo) -> Vec<ProbeView> {
    let prefix = format!("{}/", summary.cell);
    let mut probes: Vec<ProbeView> = cells
        .iter()
        .filter(|c| c.probe && c.id.starts_with(&prefix))
        .filter_map(|c| {
            let r = c.record.as_ref().filter(|_| c.status.measured())?;
            let value = probe_value(&c.id)?;
            Some(ProbeView {
                value,
                value_label: c.level_label.clone(),
                meets_slo: r.status == Status::Valid
                    && r.open.slo_met == Some(true)
                    && r.open.saturated.is_none(),
                verdict: verdict(r, slo),
                cell: c.clone(),
            })
        })
        .collect();
    probes.sort_by(|a, b| a.value.total_cmp(&b.value));
    probes
}

/// The record's bound, or (a record of an older run) what its probes say: no capacity is
/// below the lowest probe, a capacity with no probe above it is at least that.
fn bound(r: &Record, probes: &[ProbeView]) -> CapacityBound {
    match (r.open.capacity_bound, r.open.capacity) {
        (Some(b), _) => b,
        (None, None) => CapacityBound::BelowMin,
        (None, Some(v)) if probes.iter().all(|p| p.value <= v) => CapacityBound::AtLeast,
        (None, Some(_)) => CapacityBound::Exact,
    }
}

/// `Capacity at 16K: 24 requests at once — TTFT p90 412 ms < 500 ms; at 25: …`; `at least
/// 4 …` when the search's `max` met the SLO, `below 1 …` when not even its `min` did.
fn line(r: &Record, search: &str, probes: &[ProbeView], slo: &Slo, bound: CapacityBound) -> String {
    let label = ctx(r.context);
    let why = |p: &ProbeView| p.cell.record.as_ref().map(|r| against(r, slo));
    match r.open.capacity {
        Some(v) => {
            let at = probes.iter().find(|p| p.value == v).and_then(why);
            let next = probes
                .iter()
                .find(|p| p.value > v)
                .and_then(|p| Some(format!("; at {}: {}", p.value, why(p)?)))
                .unwrap_or_default();
            let cost = probes
                .iter()
                .find(|p| p.value == v)
                .and_then(|p| p.cell.record.as_ref()?.usd_per_mtok)
                .map(|u| {
                    format!(
                        " · {} per million output tokens at capacity",
                        super::format::usd(u)
                    )
                })
                .unwrap_or_default();
            let (least, max) = match bound {
                CapacityBound::AtLeast => (
                    "at least ",
                    " (the search's `max` still meets the SLO: raise it to find the limit)",
                ),
                _ => ("", ""),
            };
            format!(
                "Capacity at {label}: {least}{} — {}{max}{next}{cost}",
                unit(search, v),
                at.unwrap_or_default()
            )
        }
        None => {
            let first = probes.first();
            let below = first
                .map(|p| format!("below {}", unit(search, p.value)))
                .unwrap_or_else(|| "none".into());
            let why = first.and_then(why).unwrap_or_default();
            format!(
                "Capacity at {label}: {below} — the lowest load tried (the search's `min`) misses the SLO ({why})"
            )
        }
    }
}

/// The run's closing line for a capacity summary record: `capacity at 1K: 34 concurrent
/// (SLO: TTFT p90 ≤ 40 ms)`, or `capacity at 1K: none, not even concurrency 1 meets the SLO
/// (…)`.
pub fn summary(r: &Record, slo: &Slo) -> String {
    let terms: Vec<String> = slo_terms(slo)
        .into_iter()
        .map(|t: SloTerm| t.label)
        .collect();
    let search = r.open.search.as_deref().unwrap_or("concurrency");
    let least = match r.open.capacity_bound {
        Some(CapacityBound::AtLeast) => "at least ",
        _ => "",
    };
    let found = match (r.open.capacity, search) {
        (Some(v), "rate") => format!("{least}{} req/s", grouped(v, 2).trim_end_matches(".00")),
        (Some(v), _) => format!("{least}{v} concurrent"),
        (None, _) => {
            let reason = r
                .reasons
                .first()
                .map_or("no probe met the SLO", String::as_str);
            format!("below the search's min ({reason})")
        }
    };
    format!(
        "capacity at {}: {found} (SLO: {})",
        ctx(r.context),
        terms.join(", ")
    )
}

/// What the open-loop phases of a run hold, for the header line: `open loop at 8K: 2, 8,
/// 16, 32 req/s`, `capacity search at 1K: concurrency 1–96`.
pub(super) fn open_line(load: &[CellView], capacity: &[CapacityView]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut contexts: Vec<&str> = load.iter().map(|c| c.context_label.as_str()).collect();
    contexts.dedup();
    for label in contexts {
        let rates: Vec<&str> = load
            .iter()
            .filter(|c| c.context_label == label)
            .map(|c| c.level_label.trim_end_matches(" req/s"))
            .collect();
        parts.push(format!("open loop at {label}: {} req/s", rates.join(", ")));
    }
    for c in capacity {
        let (first, last) = (c.probes.first(), c.probes.last());
        let range = match (first, last) {
            (Some(a), Some(b)) => format!(" {}–{}", a.value, b.value),
            _ => String::new(),
        };
        parts.push(format!(
            "capacity search at {}: {}{range}",
            c.context_label, c.search
        ));
    }
    parts
}
