//! The start of a run in its directory: the spec copy, the plan and the manifest written (or a
//! resumed run's records counted and its repeats sorted out), and the copies of the files the
//! spec names (dataset, trace, twin) kept beside them so that the run directory stands alone.

use super::cell;
use super::engine::manifest;
use super::error::RunError;
use super::event::Event;
use super::options::RunSummary;
use crate::plan::vocab::{DatasetError, Entry};
use crate::plan::{EngineConfig, Plan, RunConfig};
use crate::rundir::{Resumed, RunDir};
use std::collections::HashSet;
use std::sync::Arc;

/// What the start of a run writes and says.
pub(super) struct Start<'a> {
    pub(super) gpu_warnings: Vec<String>,
    pub(super) client_threads: u32,
    pub(super) config: &'a RunConfig,
    /// The engine the manifest describes (the spec's own, with variants too).
    pub(super) engine: &'a EngineConfig,
    pub(super) dir: &'a RunDir,
    pub(super) server: &'a manifest::ServerInfo,
    pub(super) on: &'a (dyn Fn(Event) + Sync),
}

impl Start<'_> {
    /// Write the run directory's start (a new run: the spec copy, the plan and the manifest;
    /// a resumed one: its manifest) and return the manifest and the cells still to run.
    pub(super) fn begin(
        &self,
        plan: Plan,
        earlier: Option<Resumed>,
        summary: &mut RunSummary,
    ) -> Result<(crate::rundir::Manifest, Plan), RunError> {
        let mut manifest = manifest::manifest(self.config, self.engine, self.server);
        manifest.client_threads = Some(self.client_threads);
        manifest.warnings.extend(self.gpu_warnings.iter().cloned());
        manifest.warnings.extend(manifest::limit_warning(
            plan.max_model_len,
            self.server.max_model_len,
        ));
        for w in &manifest.warnings {
            (self.on)(Event::Note(w.clone()));
        }
        // Copies of the files the spec names, so that the run directory stands alone (kept
        // copies are never replaced; a run made before copies were kept gets them now).
        self.dir.keep_files(
            self.config.tokenizer.as_ref().map(|t| t.path.as_path()),
            &self.config.templates,
        )?;
        let (manifest, done) = match earlier {
            Some(e) => {
                same_shard(self.dir, &plan)?;
                for r in &e.records {
                    summary.count(r.status);
                }
                let done: HashSet<String> = e.records.iter().map(|r| r.cell.clone()).collect();
                (self.on)(Event::Note(format!(
                    "resuming: {} cell(s) recorded already, {} to run",
                    done.len(),
                    plan.runnable().filter(|c| !done.contains(&c.id)).count()
                )));
                self.sort_out_repeats(&plan, &done)?;
                (manifest::resumed(manifest, &e.manifest), done)
            }
            None => {
                self.dir
                    .write_spec_copy(&self.config.spec_path, &self.config.spec_source)?;
                self.dir.write_plan(&plan)?;
                (manifest, HashSet::new())
            }
        };
        self.dir.write_manifest(&manifest)?;
        let todo = Plan {
            cells: plan
                .cells
                .into_iter()
                .filter(|c| !done.contains(&c.id))
                .collect(),
            ..plan
        };
        Ok((manifest, todo))
    }
}

impl Start<'_> {
    /// At `--resume`: the repeats of the cells still to run that an earlier attempt wrote
    /// whole are kept (or superseded, with `resume_repeats: fresh`), and said.
    fn sort_out_repeats(&self, plan: &Plan, done: &HashSet<String>) -> Result<(), RunError> {
        let todo: std::collections::HashMap<String, u32> = plan
            .runnable()
            .filter(|c| c.repeats > 1 && !done.contains(&c.id))
            .map(|c| (c.id.clone(), c.repeats))
            .collect();
        let mode = self.config.resume_repeats;
        let (kept, superseded) = self.dir.sort_out_repeats(&todo, mode)?;
        if kept + superseded > 0 {
            (self.on)(Event::Note(format!(
                "resuming: {kept} repeat(s) of unfinished cells kept, not measured again; {superseded} line(s) of repeats.jsonl marked superseded"
            )));
        }
        Ok(())
    }
}

/// The load phase's dataset, read whole, when the spec names one: from the spec's file the
/// first time (a copy kept in the run directory), from that copy after (`--resume`, the
/// next engine variant).
pub(super) fn dataset(config: &RunConfig, dir: &RunDir) -> Result<Option<Arc<[Entry]>>, RunError> {
    let Some(file) = &config.dataset else {
        return Ok(None);
    };
    let copy = dir.file(crate::rundir::DATASET);
    let kept = copy.is_file();
    let path = if kept { copy } else { file.path.clone() };
    let entries = file.read(&path)?;
    if !kept {
        let bytes = std::fs::read(&path).map_err(|e| DatasetError::Read {
            file: file.name.clone(),
            why: e.to_string(),
        })?;
        dir.write_dataset(&bytes)?;
    }
    Ok(Some(entries.into()))
}

/// A copy of the simulated engine's twin in the run directory (`twin.toml`), so that
/// `--resume` and reports find it when the spec's file has moved.
pub(super) fn keep_twin(config: &RunConfig, dir: &RunDir) -> Result<(), RunError> {
    let Some(path) = &config.twin else {
        return Ok(());
    };
    if dir.file(crate::plan::vocab::KEPT_TWIN).is_file() {
        return Ok(());
    }
    // Readable: the spec's check read it before the run began.
    let bytes = std::fs::read(path).unwrap_or_default();
    Ok(dir.write_kept(crate::plan::vocab::KEPT_TWIN, &bytes)?)
}

/// The replay phase's trace, read whole, when the spec names one: from the spec's file the
/// first time (a copy kept in the run directory as `trace.jsonl`), from that copy after.
pub(super) fn trace(config: &RunConfig, dir: &RunDir) -> Result<Option<cell::Trace>, RunError> {
    let Some(file) = &config.trace else {
        return Ok(None);
    };
    let copy = dir.file(crate::plan::vocab::KEPT_TRACE);
    let kept = copy.is_file();
    let path = if kept { copy } else { file.path.clone() };
    let entries = crate::plan::vocab::read_trace(&path, &file.name)?;
    if !kept {
        let bytes = std::fs::read(&path).map_err(|e| crate::plan::vocab::TraceError::Read {
            file: file.name.clone(),
            why: e.to_string(),
        })?;
        dir.write_kept(crate::plan::vocab::KEPT_TRACE, &bytes)?;
    }
    Ok(Some((file.name.clone(), entries.into())))
}

/// A resumed run directory's plan was made with the same `--shard` and `--split-load` as
/// this one: a split shard resumed whole would send its load cells at the whole rate.
fn same_shard(dir: &RunDir, plan: &Plan) -> Result<(), RunError> {
    let Ok(before) = dir.plan() else {
        return Ok(());
    };
    let (was, now) = (shard_flags(&before), shard_flags(plan));
    if was == now {
        return Ok(());
    }
    let said = |f: &str| match f.trim() {
        "" => "the whole plan".to_string(),
        f => format!("`{f}`"),
    };
    Err(crate::rundir::RunDirError::ShardChanged {
        dir: dir.path().to_path_buf(),
        was: said(&was),
        now: said(&now),
        flags: was,
    }
    .into())
}

/// The flags that made `plan` a shard, as a command repeats them (` --shard 2/3
/// --split-load`), or nothing for the whole plan.
pub(super) fn shard_flags(plan: &Plan) -> String {
    match (plan.shard, plan.split) {
        (Some(k), true) => format!(" --shard {k} --split-load"),
        (Some(k), false) => format!(" --shard {k}"),
        (None, _) => String::new(),
    }
}
