//! The run stage (docs/cli.md, run): set up the engine (the embedded simulator in-process, or a
//! server to attach to), check that it serves the model, expand the plan with what the server
//! says, measure each cell in order and append its record to `results.jsonl` as it ends. The
//! core reports progress as [`Event`]s and never prints.

mod capacity;
mod cell;
mod cells;
mod engine;
mod error;
pub use error::{EngineError, RunError};
mod interrupt;
pub use interrupt::Interrupt;
mod measure;
pub mod observe;
mod open;
mod probe;
mod prompt;
mod select;
mod session;
mod start_at;
pub use start_at::{LATE_OK_S, StartAt, parse_start_at};
mod variants;
pub use cell::{Step, Tick};

use crate::plan::vocab::{DatasetError, Entry};
use crate::plan::{EngineConfig, RunConfig};
use crate::plan::{Plan, Shard};
use crate::results::{Record, Status};
use crate::rundir::{Resumed, RunDir};
use engine::manifest;
use measure::measure;
use select::select;
pub use select::{check_only, glob_match, parse_only};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// How `benchspec run` was asked to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run directory; a fresh one under `runs/` by default.
    pub out: Option<PathBuf>,
    /// Only cells whose id matches this glob (`decode/8K/*`).
    pub only: Option<String>,
    /// Only this shard of the runnable cells.
    pub shard: Option<Shard>,
    /// With `shard`: the load cells in every shard, each offering its part of the rate
    /// (`--split-load`).
    pub split_load: bool,
    /// Write per-request detail to `requests.jsonl`.
    pub save_requests: bool,
    /// Go on with the run directory `out`: run only the cells without a record.
    pub resume: bool,
    /// Worker threads of the measuring client (one per core when `None`).
    pub client_threads: Option<u32>,
    /// Wait until this instant, once the engine answers, before the first cell
    /// (`--start-at`): the shards of a split load start together.
    pub start_at: Option<StartAt>,
}

/// What the run reports as it goes.
#[derive(Debug, Clone)]
pub enum Event {
    /// The run directory is ready and the engine answers.
    Started {
        /// The run directory.
        out: PathBuf,
        /// The engine's URL.
        base_url: String,
        /// Cells to run.
        cells: usize,
    },
    /// Something worth saying that is not an error.
    Note(String),
    /// A cell begins.
    Cell {
        /// From 1.
        index: usize,
        /// Cells to run.
        total: usize,
        /// Its id.
        id: String,
    },
    /// A decode or load cell's live state (a few times a second).
    Tick {
        /// The cell.
        id: String,
        /// Its state.
        tick: cell::Tick,
    },
    /// A cell's record was written.
    Done {
        /// From 1.
        index: usize,
        /// Cells to run.
        total: usize,
        /// The record.
        record: Box<Record>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The run directory.
    pub out: PathBuf,
    /// Records by status.
    pub valid: usize,
    /// Invalid cells.
    pub invalid: usize,
    /// Failed cells.
    pub failed: usize,
    /// Skipped cells.
    pub skipped: usize,
}

impl RunSummary {
    /// 0 when every measured cell is valid, else 1 (docs/cli.md).
    pub fn exit_code(&self) -> i32 {
        if self.invalid + self.failed > 0 { 1 } else { 0 }
    }
}

/// Run `config` to the end, or until `interrupt` is requested.
pub fn run(
    config: &RunConfig,
    opts: &RunOptions,
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
) -> Result<RunSummary, RunError> {
    let threads = opts.client_threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    );
    let probe = probe::Probe::new(threads);
    let on_start = probe.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .on_thread_start(move || on_start.register_current())
        .enable_all()
        .build()
        .map_err(EngineError::Runtime)?;
    probe.register_current();
    rt.block_on(run_async(config, opts, (probe, false), interrupt, on))
}

/// [`run`] on the caller's runtime, every engine (and variant) the embedded simulator
/// answering in this process: no socket, its model stepping on tokio's clock. Under paused
/// time (`#[tokio::test(start_paused = true)]`) a spec's cells run in milliseconds, every
/// interval exactly what the model says, the same each time; the cells, the verdicts, the
/// records and the run directory are those of [`run`]. An engine that is not `kind: sim`
/// is an error ([`EngineError::NotInProcess`]).
pub async fn run_in_process(
    config: &RunConfig,
    opts: &RunOptions,
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
) -> Result<RunSummary, RunError> {
    let probe = probe::Probe::new(1);
    probe.register_current();
    run_async(config, opts, (probe, true), interrupt, on).await
}

/// The spec's local tokenizer (`workload.tokenizer`, beside the spec or kept in the run
/// directory), loaded once; `None` for `server`.
fn local_tokenizer(
    config: &RunConfig,
) -> Result<Option<Arc<crate::client::local::LocalTokenizer>>, RunError> {
    let Some(file) = &config.tokenizer else {
        return Ok(None);
    };
    let t = crate::client::local::LocalTokenizer::load(&file.path)?;
    if file.chat && !t.has_chat_template() {
        return Err(crate::client::local::TokenizerError::NoTemplate {
            path: crate::client::local::tokenizer_file(&file.path),
        }
        .into());
    }
    Ok(Some(Arc::new(t)))
}

/// The run directory: a new one, or the one `--resume` goes on with (with its records).
fn open_dir(
    config: &RunConfig,
    opts: &RunOptions,
    on: &(dyn Fn(Event) + Sync),
) -> Result<(RunDir, Option<Resumed>), RunError> {
    match (&opts.out, opts.resume) {
        (Some(out), true)
            if !out.join(crate::rundir::MANIFEST).is_file() && RunDir::is_leftover(out) =>
        {
            on(Event::Note(format!(
                "nothing was measured in {} yet; the run starts there afresh",
                out.display()
            )));
            Ok((RunDir::create(Some(out.clone()), &config.spec_path)?, None))
        }
        (Some(out), true) => {
            let dir = RunDir::open(out)?;
            let resumed = dir.resume(&config.spec_source)?;
            if resumed.repaired_bytes > 0 {
                on(Event::Note(format!(
                    "the last line of results.jsonl was cut short ({} bytes, a run killed while writing); it was removed",
                    resumed.repaired_bytes
                )));
            }
            Ok((dir, Some(resumed)))
        }
        _ => Ok((RunDir::create(opts.out.clone(), &config.spec_path)?, None)),
    }
}

async fn run_async(
    config: &RunConfig,
    opts: &RunOptions,
    (probe, in_process): (probe::Probe, bool),
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
) -> Result<RunSummary, RunError> {
    let tokenizer = local_tokenizer(config)?;
    let fresh = opts.out.as_ref().is_none_or(|out| !out.exists());
    let (dir, earlier) = open_dir(config, opts, on)?;
    let result = measure_into(
        config,
        opts,
        (probe, in_process),
        interrupt,
        on,
        (&dir, earlier),
        tokenizer.as_ref(),
    )
    .await;
    // A refused run leaves the folder as it was: one it made and left empty (a port in use)
    // is removed.
    if result.is_err() && fresh {
        let _ = std::fs::remove_dir(dir.path());
    }
    result
}

/// The run's cells into `dir` (`earlier`: what a resumed run recorded already).
async fn measure_into(
    config: &RunConfig,
    opts: &RunOptions,
    (probe, in_process): (probe::Probe, bool),
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
    (dir, earlier): (&RunDir, Option<Resumed>),
    tokenizer: Option<&Arc<crate::client::local::LocalTokenizer>>,
) -> Result<RunSummary, RunError> {
    let session = session::Session {
        config,
        opts,
        probe,
        interrupt,
        on,
        dir,
        tokenizer,
        in_process,
    };
    let variants = config.variants();
    if variants.is_empty() {
        session.single(earlier).await
    } else {
        session.variants(&variants, earlier).await
    }
}

/// What the start of a run writes and says.
struct Start<'a> {
    gpu_warnings: Vec<String>,
    client_threads: u32,
    config: &'a RunConfig,
    /// The engine the manifest describes (the spec's own, with variants too).
    engine: &'a EngineConfig,
    dir: &'a RunDir,
    server: &'a manifest::ServerInfo,
    on: &'a (dyn Fn(Event) + Sync),
}

impl Start<'_> {
    /// Write the run directory's start (a new run: the spec copy, the plan and the manifest;
    /// a resumed one: its manifest) and return the manifest and the cells still to run.
    fn begin(
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
fn dataset(config: &RunConfig, dir: &RunDir) -> Result<Option<Arc<[Entry]>>, RunError> {
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
fn keep_twin(config: &RunConfig, dir: &RunDir) -> Result<(), RunError> {
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
fn trace(config: &RunConfig, dir: &RunDir) -> Result<Option<cell::Trace>, RunError> {
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

impl RunSummary {
    fn recorded(&self) -> usize {
        self.valid + self.invalid + self.failed + self.skipped
    }

    fn count(&mut self, status: Status) {
        match status {
            Status::Valid => self.valid += 1,
            Status::Invalid => self.invalid += 1,
            Status::Failed => self.failed += 1,
            Status::Skipped => self.skipped += 1,
        }
    }
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
fn shard_flags(plan: &Plan) -> String {
    match (plan.shard, plan.split) {
        (Some(k), true) => format!(" --shard {k} --split-load"),
        (Some(k), false) => format!(" --shard {k}"),
        (None, _) => String::new(),
    }
}
