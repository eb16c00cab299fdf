//! The plan as a table for people: cells in run order, then the skipped cells with their
//! reasons, then the estimate and what it assumes.

use super::estimate::human_duration;
use super::{Bound, Cell, Decode, Measure, Phase, Plan, Prefill};
use crate::spec::Rate;
use std::fmt::Write as _;

/// Render `plan` (of the spec at `path`) as text.
pub fn render_table(plan: &Plan, path: &str) -> String {
    let mut out = String::new();
    let run: Vec<&Cell> = plan.runnable().collect();
    let kinds = kinds(&run);
    let shard = plan
        .shard
        .map(|s| format!(", shard {s}"))
        .unwrap_or_default();
    let _ = writeln!(out, "plan of `{}` ({path}{shard})", plan.name);
    let max_len = plan.max_model_len.map_or_else(
        || "read from the server at run time".to_string(),
        |m| m.to_string(),
    );
    let _ = writeln!(
        out,
        "max_model_len {max_len}, max output {} tokens",
        plan.max_output_tokens
    );
    prefixes(&mut out, plan);
    let _ = writeln!(
        out,
        "{} cells to run: {kinds}{}\n",
        run.len(),
        variants(plan)
    );
    changes(&mut out, plan);
    let w = run.iter().map(|c| c.id.len()).max().unwrap_or(0).max(18);
    let _ = writeln!(
        out,
        "{:>4}  {:<w$} {:>7} {:>5}  {:<28} {:>9}",
        "#", "cell", "prompt", "conc", "how", "estimate"
    );
    rows(&mut out, &run, w);
    if run.iter().any(|c| c.clamped) {
        let _ = writeln!(out, "\n* clamped to max_model_len - 1");
    }
    let skipped: Vec<&Cell> = plan.skipped().collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\n{} skipped:", skipped.len());
        for c in skipped {
            let _ = writeln!(
                out,
                "  {} skipped: {}",
                c.id,
                c.skip.as_deref().unwrap_or_default()
            );
        }
    }
    let _ = writeln!(
        out,
        "\nestimated wall time: {} ({}){}",
        human_duration(plan.estimate_s),
        plan.rates.source,
        upper_bound(plan)
    );
    out
}

/// What the estimate is when a load sweep may stop at saturation.
fn upper_bound(plan: &Plan) -> &'static str {
    if sweeps(plan) {
        "; an upper bound: a load sweep skips the rates above the first that saturates the server"
    } else {
        ""
    }
}

/// Whether some context's load cells sweep more than one rate that saturation may cut short.
fn sweeps(plan: &Plan) -> bool {
    let load: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| c.runs() && matches!(c.measure, Measure::Load(_)))
        .collect();
    plan.workload.stop_when_saturated
        && load
            .iter()
            .any(|c| load.iter().any(|o| o.context == c.context && o.id != c.id))
}

/// One line per runnable cell, in run order.
fn rows(out: &mut String, run: &[&Cell], w: usize) {
    for (i, c) in run.iter().enumerate() {
        let prompt = if c.clamped {
            format!("{}*", c.prompt_tokens)
        } else {
            c.prompt_tokens.to_string()
        };
        // An open-loop cell without `max_concurrency` has no bound on requests in flight.
        let conc = match c.concurrency {
            0 => "-".to_string(),
            n => n.to_string(),
        };
        let est = if c.estimate_s > 0.0 {
            human_duration(c.estimate_s)
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<w$} {:>7} {:>5}  {:<28} {:>9}",
            i + 1,
            c.id,
            prompt,
            conc,
            how(c),
            est
        );
    }
}

/// ` on 2 engine variants (mns128, mns256)`, or nothing without variants.
fn variants(plan: &Plan) -> String {
    let mut names: Vec<&str> = Vec::new();
    for v in plan.cells.iter().filter_map(|c| c.variant.as_deref()) {
        if !names.contains(&v) {
            names.push(v);
        }
    }
    if names.is_empty() {
        return String::new();
    }
    format!(" on {} engine variants ({})", names.len(), names.join(", "))
}

/// What each engine variant changes, one line each, then a blank line.
fn changes(out: &mut String, plan: &Plan) {
    if plan.variants.is_empty() {
        return;
    }
    let w = plan
        .variants
        .iter()
        .map(|v| v.name.len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "variants:");
    for v in &plan.variants {
        let what = if v.changes.is_empty() {
            "the spec as written".to_string()
        } else {
            v.changes.join(", ")
        };
        let _ = writeln!(out, "  {:<w$}  {what}", v.name);
    }
    out.push('\n');
}

/// `8 prefill, 40 decode, 4 load`: the runnable cells by phase.
fn kinds(run: &[&Cell]) -> String {
    let count = |p: Phase| run.iter().filter(|c| c.phase() == p).count();
    let mut kinds = format!(
        "{} prefill, {} decode",
        count(Phase::Prefill),
        count(Phase::Decode)
    );
    for p in [Phase::Load, Phase::Capacity, Phase::Sessions, Phase::Replay] {
        let n = count(p);
        if n > 0 {
            let _ = write!(kinds, ", {n} {}", p.as_str());
        }
    }
    kinds
}

fn how(c: &Cell) -> String {
    let once = how_once(c);
    if c.repeats > 1 {
        format!("{once} × {}", c.repeats)
    } else {
        once
    }
}

fn how_once(c: &Cell) -> String {
    match c.measure {
        Measure::Prefill(Prefill::DecodeWarmup) => "during decode warm-up".to_string(),
        Measure::Prefill(Prefill::Standalone { repeats: 1 }) => {
            "standalone, 1 cold request".to_string()
        }
        Measure::Prefill(Prefill::Standalone { repeats }) => {
            format!("standalone, mean of {repeats}")
        }
        Measure::Decode(Decode::FixedDuration(d)) => format!("{} s window", d.as_secs_f64()),
        Measure::Decode(Decode::RequestCount(n)) => format!("{n} requests"),
        Measure::Load(l) => {
            let bound = match l.bound {
                Bound::Duration(d) => format!("{} s", d.as_secs_f64()),
                Bound::Requests(n) => format!("{n} req"),
            };
            let cap = l
                .max_concurrency
                .map(|c| format!(", <={c} in flight"))
                .unwrap_or_default();
            format!("{} {} req/s, {bound}{cap}", l.arrivals.as_str(), l.rate)
        }
        Measure::Capacity(s) => format!(
            "search {} {}..{}, <={} probes",
            s.axis.as_str(),
            s.min,
            s.max,
            s.max_probes()
        ),
        Measure::Replay(r) => {
            let cap = r
                .max_requests
                .map(|n| format!(", first {n} requests"))
                .unwrap_or_default();
            format!("trace at {}× speed{cap}", r.speedup)
        }
        Measure::Sessions(s) => {
            let turns = if s.turns_min == s.turns_max {
                format!("{} turns", s.turns_min)
            } else {
                format!("{}-{} turns", s.turns_min, s.turns_max)
            };
            let bound = match (s.duration_s, s.sessions) {
                (Some(d), _) => format!("{d} s"),
                (None, n) => format!("{} sessions", n.unwrap_or(0)),
            };
            match (s.users, s.rate) {
                (Some(u), _) => format!("{u} users, {turns}, {bound}"),
                (None, r) => format!("{} sessions/s, {turns}, {bound}", r.unwrap_or(Rate(0.0))),
            }
        }
    }
}

/// The line naming the shared prefixes, when prompts have them.
fn prefixes(out: &mut String, plan: &Plan) {
    if let Some(p) = plan.workload.prefix {
        let primed = if p.prime {
            ", each primed before every window"
        } else {
            ", not primed"
        };
        let _ = writeln!(
            out,
            "shared prefixes: {} × {} tokens at the start of every prompt{primed}",
            p.groups, p.tokens
        );
    }
}
