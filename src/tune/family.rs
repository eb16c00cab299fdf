//! One twin per configuration family, fitted (`twin::fit_runs`) on the cells measured of its
//! configurations, and the family's unmeasured configurations predicted with it — the spec
//! run against the twin (`twin::simulate`), each with its modelled settings, and the
//! prediction's intervals (`twin::predict`, `twin::answer`).
//!
//! A closed-loop cell runs fewer requests than its concurrency when its configuration caps
//! them (max_num_seqs, the KV cache): it is fitted as a step of the requests that ran — the
//! engine's own mean count where its metrics were read, else the twin's cap — without its
//! TTFT, which holds the queue.

use super::TuneError;
use super::space::Config;
use crate::plan::Phase;
use crate::results::Record;
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
/// that did (its TTFT, which holds the wait, left out).
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
    let ran = x
        .server
        .as_ref()
        .and_then(|s| s.running_mean)
        .filter(|m| *m >= 1.0)
        .unwrap_or(model);
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
