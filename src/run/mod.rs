//! The run stage (docs/cli.md, run): set up the engine (the embedded simulator in-process, or a
//! server to attach to), check that it serves the model, expand the plan with what the server
//! says, measure each cell in order and append its record to `results.jsonl` as it ends. The
//! core reports progress as [`Event`]s and never prints.
//!
//! This file is the entry point ([`run`], [`run_in_process`]) and the module list; the types
//! the modules share are in files of their own (`event.rs`, `options.rs`, `start.rs`), so that
//! no module here imports from this one.

mod capacity;
mod cell;
mod cells;
mod engine;
mod error;
mod event;
pub use error::{EngineError, RunError};
pub use event::Event;
mod interrupt;
pub use interrupt::Interrupt;
mod limits;
mod measure;
mod options;
pub use options::{RunOptions, RunSummary};
mod pacer;
mod select;
mod session;
mod start;
mod start_at;
pub use start_at::{LATE_OK_S, StartAt, parse_start_at};
mod variants;
pub use cell::{Step, Tick};

use crate::footprint::Probe;
use crate::plan::RunConfig;
use crate::rundir::{Resumed, RunDir};
pub use select::{check_only, glob_match, parse_only};
use std::sync::Arc;

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
    let probe = Probe::new(threads);
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
    let probe = Probe::new(1);
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
    (probe, in_process): (Probe, bool),
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
    (probe, in_process): (Probe, bool),
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
    let summary = if variants.is_empty() {
        session.single(earlier).await
    } else {
        session.variants(&variants, earlier).await
    }?;
    limits::fill(config, dir)?;
    Ok(summary)
}
