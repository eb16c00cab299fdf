//! One twin per configuration family, fitted (`twin::fit_runs`) on the cells measured of its
//! configurations, and the family's unmeasured configurations predicted with it — the spec
//! run against the twin (`twin::simulate`), each with its modelled settings, and the
//! prediction's intervals (`twin::predict`, `twin::answer`).
//!
//! A closed-loop cell runs fewer requests than its concurrency when its configuration caps
//! them (max_num_seqs, the KV cache): it is fitted as a step of the requests that ran — the
//! configuration's cap, or the most the engine's metrics saw running — without its TTFT,
//! which holds the queue.

use super::TuneError;
use super::objective::{Missed, PredictionRules, TuneObjective};
use super::space::Config;
use super::state::Ask;
use crate::plan::Phase;
use crate::results::{Record, Status};
use crate::rundir::Run;
use crate::spec::Loaded;
use crate::twin::describe::Identity;
use crate::twin::model::Params;
use crate::twin::predict::{PredictedCell, predict};
use crate::twin::settings::SpecSettings;
use crate::twin::{Twin, answer, simulate};
use std::path::Path;

/// `run` keeping only the records of `members` (measured configurations of one family), each
/// capped cell fitted as the requests that ran, and the base limits cleared (each
/// configuration sets its own).
fn family_run(run: &Run, members: &[&Config]) -> Run {
    let mut r = run.clone();
    r.records.retain(|x| {
        x.variant
            .as_deref()
            .is_some_and(|v| members.iter().any(|c| c.name == v))
    });
    let output = r.plan.max_output_tokens as f64;
    for x in &mut r.records {
        if let Some(c) = members
            .iter()
            .find(|c| Some(c.name.as_str()) == x.variant.as_deref())
        {
            cap(x, c, output);
        }
    }
    let e = &mut r.spec.engine;
    if let Some(sim) = e.sim.as_mut() {
        (sim.max_num_seqs, sim.kv_tokens) = (None, None);
    }
    if let Some(l) = e.launch.as_mut()
        && let Ok(mut words) = l.command.args()
    {
        crate::spec::variant::set_arg(&mut words, "--max-num-seqs", None);
        l.command = crate::spec::LaunchCommand::Args(words);
    }
    r.spec.model.kv_tokens = None;
    r.manifest.engine.kv_tokens = None;
    r
}

/// A closed-loop cell of `c` whose requests did not all run at once, as the cell of those
/// that did (its TTFT, which holds the wait, left out): the configuration's own cap (its
/// max_num_seqs, its KV cache) where it sets one below the concurrency, else the most the
/// engine ran at once where its metrics say that was fewer. Not the engine's mean count: over
/// a short window it is a few scrapes, which caught an uncapped m16 at 16 requests running
/// 9.5, 15.5 or 16 on three runs of one spec — and each gave the family another twin.
fn cap(x: &mut Record, c: &Config, output: f64) {
    let closed =
        x.phase == Phase::Decode || (x.phase == Phase::Capacity && x.open.rate_offered.is_none());
    if !closed {
        return;
    }
    let n = f64::from(x.concurrency.max(1));
    let model = c
        .settings
        .apply(unlimited())
        .running(n, x.prompt_tokens as f64, output);
    let seen = x
        .server
        .as_ref()
        .and_then(|s| s.running_max)
        .filter(|m| *m >= 1.0)
        .unwrap_or(n);
    let ran = model.min(seen);
    if ran < n - 0.5 {
        x.concurrency = ran.round().max(1.0) as u32;
        x.ttft_ms = None;
    }
}

/// A fitted cell the model misses by more than this (percent, tok/s or TBT) is left out of
/// the family's fit (`fit` names those beyond 25%).
const MISSED_PCT: f64 = 25.0;

/// No cost and no limit: what a configuration's settings are applied to for its cap.
fn unlimited() -> Params {
    crate::twin::build::costless(u64::MAX, u64::MAX, u64::MAX, u64::MAX)
}

/// The twin of the measured configurations `members` (one family) of `run`, written to `path`.
pub fn fit(run: &Run, members: &[&Config], path: &Path) -> Result<Twin, TuneError> {
    let r = family_run(run, members);
    let id = Identity {
        kind: r.manifest.engine.kind.clone(),
        version: None,
        model: r.spec.model.served_name.clone(),
        hardware: None,
        variant: None,
    };
    let mut r = r;
    let mut twin = crate::twin::fit_runs(std::slice::from_ref(&r), None, &id)?;
    // Cells the model cannot describe (an engine thrashing its prefix cache, say: `fit` names
    // them) are not fitted: they would widen every interval of the family. Their
    // configurations are measured, not predicted from them.
    let missed: Vec<String> = twin
        .residuals
        .iter()
        .filter(|x| x.metric != "ttft_ms_p50" && x.error_pct.abs() > MISSED_PCT)
        .map(|x| x.cell.clone())
        .collect();
    if !missed.is_empty() && r.records.iter().any(|x| !missed.contains(&x.cell)) {
        r.records.retain(|x| !missed.contains(&x.cell));
        twin = crate::twin::fit_runs(&[r], None, &id)?;
    }
    crate::twin::write_twin(&twin, path)?;
    Ok(twin)
}

/// The records and predicted cells of `names` (configurations of the family `twin` describes)
/// with the spec `loaded` run against `twin` (at `path`) in `scratch`, removed after.
pub fn predict_configs(
    loaded: &Loaded,
    (path, twin): (&Path, &Twin),
    names: &[&str],
    scratch: &Path,
) -> Result<(Vec<Record>, Vec<PredictedCell>), TuneError> {
    let only = format!(
        "{{{}}}",
        names
            .iter()
            .map(|n| format!("{n}/*"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let plan = crate::plan::expand_with(
        &loaded.spec,
        &crate::plan::sim::rates_for,
        &crate::plan::sim::limits_for,
    );
    let mut p = predict(&plan, twin, &SpecSettings::of(&loaded.spec));
    let _ = std::fs::remove_dir_all(scratch);
    let records = simulate::simulate(loaded, (path, twin), scratch, Some(only));
    let _ = std::fs::remove_dir_all(scratch);
    let records = records?;
    answer::add_simulated(&mut p, &records, twin);
    Ok((records, p.cells))
}

/// What the family's predicted configurations are judged by: the spec's SLO and validity as a
/// measured one's, and the floor of their intervals — how far the twin missed the measured
/// `members` (in `run`) in its `predicted` records.
pub fn rules<'a>(
    ask: &Ask<'a>,
    gpus: f64,
    (run, predicted): (&Run, &[Record]),
    members: &[&Config],
) -> PredictionRules<'a> {
    let spec = &ask.loaded.spec;
    let mut rules = PredictionRules {
        slo: &spec.slo,
        gpus,
        min_active: spec.validity.min_active_fraction,
        missed: Missed::NONE,
    };
    rules.missed = missed(ask.objective, run, predicted, members, &rules);
    rules
}

/// How far the family's twin missed its measured configurations `members`: each one's
/// `predicted` records (the spec run against the twin) against its measured ones in `run` —
/// its objective, judged by `rules` as a measured one's (one measured and not predicted, or
/// the other way round: unbounded), and each cell valid in both by total tok/s and TTFT p90.
/// Doubled when the family has two measured configurations: the twin was fitted on exactly
/// those, so its miss on them is all in-sample.
pub fn missed(
    obj: TuneObjective,
    run: &Run,
    predicted: &[Record],
    members: &[&Config],
    rules: &PredictionRules,
) -> Missed {
    let rel = |p: f64, m: f64| (m.abs() > 0.0).then(|| (p - m).abs() / m.abs());
    let worse = |acc: Option<f64>, x: Option<f64>| match x {
        Some(x) => acc.map(|a| a.max(x)),
        None => acc,
    };
    let exact = PredictionRules {
        missed: Missed::NONE,
        ..*rules
    };
    let mut out = Missed::NONE;
    for c in members {
        let of = |rs: &[Record]| -> Vec<Record> {
            rs.iter()
                .filter(|r| r.variant.as_deref() == Some(c.name.as_str()))
                .cloned()
                .collect()
        };
        let (meas, pred) = (of(&run.records), of(predicted));
        let m = obj.measured(meas.iter(), rules.gpus);
        match (m, obj.predicted(pred.iter(), &[], &exact).value) {
            (Some(m), Some(p)) => out.tok_s = worse(out.tok_s, rel(p, m)),
            (None, None) => {}
            _ => out.tok_s = None,
        }
        for x in meas.iter().filter(|r| r.status == Status::Valid) {
            let Some(y) = pred
                .iter()
                .find(|r| r.cell == x.cell && r.status == Status::Valid)
            else {
                continue;
            };
            if let (Some(p), Some(m)) = (y.total_tok_s, x.total_tok_s) {
                out.tok_s = worse(out.tok_s, rel(p, m));
            }
            if let (Some(p), Some(m)) = (y.ttft_ms, x.ttft_ms) {
                out.ttft = worse(out.ttft, rel(p.p90, m.p90));
            }
        }
    }
    if members.len() <= 2 {
        (out.tok_s, out.ttft) = (out.tok_s.map(|f| 2.0 * f), out.ttft.map(|f| 2.0 * f));
    }
    out
}
