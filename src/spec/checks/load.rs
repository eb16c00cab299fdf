//! Meaning checks of the open-loop keys (docs/spec.md): load rates and arrivals, the capacity
//! search's bounds, and the SLO it is judged against.

use super::{Checker, ascending, subset};
use crate::spec::diag::Problem;
use crate::spec::load::{Arrivals, Distribution, Rate, SearchAxis, Slo, Spread};
use crate::spec::units::{Span, Tokens};

/// Every problem of `phases.load`, `phases.capacity` and `slo`.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let contexts: Option<Vec<Tokens>> = cx.field("/matrix/contexts").ok().flatten();
    for phase in ["load", "capacity"] {
        let ptr = format!("/phases/{phase}/contexts");
        if let Ok(Some(list)) = cx.field::<Vec<Tokens>>(&ptr) {
            subset(&list, contexts.as_deref(), &ptr, "matrix.contexts", out);
        }
    }
    if cx.json.pointer("/phases/load").is_some() {
        load(cx, out);
    }
    if cx.json.pointer("/phases/capacity").is_some() {
        capacity(cx, out);
    }
    slo(cx, out);
}

fn load(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let requests: Option<u32> = cx.field("/phases/load/requests").ok().flatten();
    let duration: Option<Span> = cx.field("/phases/load/duration").ok().flatten();
    if requests.is_some() && duration.is_some() {
        out.push(Problem::error(
            "/phases/load/requests",
            "give `duration` or `requests`, not both",
        ));
    }
    if duration.is_some_and(|d| d.0.is_zero()) {
        out.push(Problem::error(
            "/phases/load/duration",
            "requests must keep arriving for longer than 0s",
        ));
    }
    rates(cx, requests.is_some(), out);
    for key in ["input", "output"] {
        let ptr = format!("/phases/load/{key}");
        if let Ok(Some(sp)) = cx.field::<Spread>(&ptr)
            && sp.distribution == Distribution::Uniform
            && sp.spread >= 1.0
        {
            out.push(Problem::error(
                &format!("{ptr}/spread"),
                format!(
                    "a uniform spread of {} reaches lengths of 0 or less; use a value below 1",
                    sp.spread
                ),
            ));
        }
    }
    let arrivals = cx.or("/phases/load/arrivals", Arrivals::Poisson);
    if let Ok(Some(k)) = cx.field::<f64>("/phases/load/burstiness") {
        if k <= 0.0 {
            out.push(Problem::error(
                "/phases/load/burstiness",
                format!("burstiness {k} is not a gamma shape; use a number above 0 (1 is Poisson, below 1 burstier)"),
            ));
        } else if arrivals.is_some_and(|a| a != Arrivals::Gamma) {
            out.push(Problem::warning(
                "/phases/load/burstiness",
                "`burstiness` applies to `arrivals: gamma` only",
            ));
        }
    }
}

/// The rates: ascending, and `inf` only with a request count.
fn rates(cx: &Checker<'_>, has_requests: bool, out: &mut Vec<Problem>) {
    let rates: Vec<Option<Rate>> = match cx.json.pointer("/phases/load/rates") {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| serde_json::from_value(v.clone()).ok())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(all) = rates.iter().copied().collect::<Option<Vec<Rate>>>() {
        ascending(&all, "/phases/load/rates", out);
    }
    if !has_requests && cx.json.pointer("/phases/load/requests").is_none() {
        for (i, _) in rates
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_some_and(Rate::is_inf))
        {
            out.push(Problem::error(
                &format!("/phases/load/rates/{i}"),
                "rate `inf` sends every request at once, so it needs a count: set `phases.load.requests` (instead of `duration`)",
            ));
        }
    }
}

fn capacity(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let axis = cx.or("/phases/capacity/search", SearchAxis::Concurrency);
    let min = cx.or("/phases/capacity/min", 1.0f64);
    let max: Option<f64> = cx.field("/phases/capacity/max").ok().flatten();
    let precision = cx.or("/phases/capacity/precision", 1.0f64);
    if let Some(min) = min.filter(|m| *m <= 0.0) {
        out.push(Problem::error(
            "/phases/capacity/min",
            format!("a search from {min} measures nothing; start at a value above 0"),
        ));
    }
    if let (Some(min), Some(max)) = (min, max)
        && min >= max
    {
        out.push(Problem::error(
            "/phases/capacity/max",
            format!("the bounds are the wrong way round: `max` {max} must be above `min` {min}"),
        ));
    }
    if let Some(p) = precision.filter(|p| *p <= 0.0) {
        out.push(Problem::error(
            "/phases/capacity/precision",
            format!("precision {p} would never stop the search; use a value above 0"),
        ));
    }
    if axis == Some(SearchAxis::Concurrency) {
        for (key, v) in [("min", min), ("max", max), ("precision", precision)] {
            if let Some(v) = v.filter(|v| v.fract() != 0.0) {
                out.push(Problem::error(
                    &format!("/phases/capacity/{key}"),
                    format!(
                        "{v} is not a whole number of requests; a concurrency search needs integers"
                    ),
                ));
            }
        }
    }
    if let Ok(Some(d)) = cx.field::<Span>("/phases/capacity/duration")
        && d.0.is_zero()
    {
        out.push(Problem::error(
            "/phases/capacity/duration",
            "a probe's window must be longer than 0s",
        ));
    }
    let enabled = cx.or("/phases/capacity/enabled", true) == Some(true);
    let slo: Option<Slo> = cx.field("/slo").ok().flatten();
    if enabled && slo.is_none_or(|s| s.is_empty()) && cx.json.pointer("/slo").is_none() {
        out.push(Problem::error(
            "/phases/capacity",
            "a capacity search looks for the highest load that meets the SLO: add `slo:` (e.g. `slo: {ttft: {p90: 500ms}}`)",
        ));
    }
}

fn slo(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    if let Ok(Some(slo)) = cx.field::<Slo>("/slo")
        && slo.is_empty()
    {
        out.push(Problem::error(
            "/slo",
            "an empty `slo` judges nothing; set e.g. `ttft: {p90: 500ms}` or remove it",
        ));
    }
    // Each threshold on its own, so that one unknown key does not hide the others.
    for metric in ["ttft", "tpot", "itl", "e2e"] {
        for p in ["p50", "p90", "p95", "p99"] {
            let ptr = format!("/slo/{metric}/{p}");
            if let Ok(Some(limit)) = cx.field::<Span>(&ptr)
                && limit.0.is_zero()
            {
                out.push(Problem::error(
                    &ptr,
                    "an objective of 0s can never be met; use a positive duration",
                ));
            }
        }
    }
}
