//! The run stage (contract §4–§6): set up the engine (the embedded simulator in-process, or a
//! server to attach to), check that it serves the model, expand the plan with what the server
//! says, measure each cell in order and append its record to `results.jsonl` as it ends. The
//! core reports progress as [`Event`]s and never prints.

pub mod cell;
mod cells;
mod chunk;
pub mod client;
mod dir;
mod engine;
pub use dir::redact as redact_args;
pub mod interrupt;
pub mod launch;
pub mod prompt;
pub mod sse;
pub mod window;

use crate::plan::{self, Phase, Plan, Rates, Shard};
use crate::results::{Record, Status};
use crate::spec::{Loaded, Tokens};
use engine::EngineSide;
use std::path::PathBuf;
use std::sync::Arc;

/// How `benchspec run` was asked to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run directory; a fresh one under `runs/` by default.
    pub out: Option<PathBuf>,
    /// Overrides `engine.base_url`.
    pub base_url: Option<String>,
    /// Only cells whose id matches this glob (`decode/8K/*`).
    pub only: Option<String>,
    /// Only this shard of the runnable cells.
    pub shard: Option<Shard>,
    /// Write per-request detail to `requests.jsonl`.
    pub save_requests: bool,
    /// Go on with the run directory `out`: run only the cells without a record.
    pub resume: bool,
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
    /// A decode cell's live state (a few times a second).
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

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run directory could not be made or written.
    #[error("cannot write the run directory `{path}`: {source}")]
    Dir {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The run directory exists and holds files.
    #[error(
        "`{0}` exists and is not empty; choose another `--out`, or add `--resume` to go on with the run there"
    )]
    NotEmpty(String),
    /// Ctrl-C.
    #[error(
        "interrupted during {cell}; the finished cells ({kept}) are kept in {results}; go on with `{resume}`"
    )]
    Interrupted {
        /// The command that goes on where the run stopped.
        resume: String,
        /// The cell that was being measured.
        cell: String,
        /// The results file.
        results: String,
        /// Records written.
        kept: usize,
    },
    /// `--resume` of a directory that is not a run directory.
    #[error(
        "`{0}` is not a run directory (no manifest.json); `--resume` goes on with the `--out` of an earlier run"
    )]
    NotARun(String),
    /// `--resume` with a spec other than the run's.
    #[error(
        "`{dir}` was run from a different spec (sha256 {was}, this one is {now}); resume with the spec the run began with, or choose another `--out`"
    )]
    SpecChanged {
        /// The run directory.
        dir: String,
        /// The run's spec sha256.
        was: String,
        /// This spec's sha256.
        now: String,
    },
    /// The engine could not be started or reached, or does not serve the model.
    #[error("{0}")]
    Engine(String),
    /// The simulator could not start.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
}

impl RunError {
    /// Exit code: 3 for the engine, 2 for what the user must change first.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Engine(_) | RunError::Sim(_) => 3,
            RunError::Dir { .. }
            | RunError::NotEmpty(_)
            | RunError::NotARun(_)
            | RunError::SpecChanged { .. } => 2,
            RunError::Interrupted { .. } => 1,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct Summary {
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

impl Summary {
    /// 0 when every measured cell is valid, else 1 (contract §1).
    pub fn exit_code(&self) -> i32 {
        if self.invalid + self.failed > 0 { 1 } else { 0 }
    }
}

/// Run `loaded` to the end.
pub fn run(
    loaded: &Loaded,
    opts: &RunOptions,
    on: &(dyn Fn(Event) + Sync),
) -> Result<Summary, RunError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Engine(format!("cannot start the runtime: {e}")))?;
    rt.block_on(run_async(loaded, opts, on))
}

async fn run_async(
    loaded: &Loaded,
    opts: &RunOptions,
    on: &(dyn Fn(Event) + Sync),
) -> Result<Summary, RunError> {
    let mut spec = loaded.spec.clone();
    let (out, earlier) = match (&opts.out, opts.resume) {
        (Some(out), true) => {
            let resumed = dir::resume(out, loaded)?;
            if let Some(note) = &resumed.repaired {
                on(Event::Note(note.clone()));
            }
            (out.clone(), Some(resumed))
        }
        _ => (dir::prepare(opts.out.clone(), &loaded.path)?, None),
    };
    interrupt::listen();
    let mut engine = EngineSide::up(&spec, opts, &out, on).await?;
    let server = dir::ServerInfo::read(&engine.client, &spec.model.served_name)
        .await
        .map_err(RunError::Engine)?;
    if spec.model.max_model_len.is_none() {
        spec.model.max_model_len = server.max_model_len.map(Tokens);
    }
    if let (Some(want), Some(got)) = (&spec.engine.version, &server.version)
        && want != got
    {
        on(Event::Note(format!(
            "the spec says engine version {want}, the server reports {got}"
        )));
    }
    let plan = select(plan::expand(&spec, &Rates::for_spec(&spec)), opts);
    let mut summary = Summary {
        out: out.clone(),
        ..Summary::default()
    };
    let done = match &earlier {
        Some(e) => {
            dir::write_resumed(&out, loaded, &server, &e.manifest)?;
            for r in &e.records {
                summary.count(r.status);
            }
            e.records.iter().map(|r| r.cell.clone()).collect()
        }
        None => {
            dir::write_start(&out, loaded, &plan, &server)?;
            std::collections::HashSet::new()
        }
    };
    let todo = Plan {
        cells: plan
            .cells
            .into_iter()
            .filter(|c| !done.contains(&c.id))
            .collect(),
        ..plan
    };
    if earlier.is_some() {
        on(Event::Note(format!(
            "resuming: {} cell(s) recorded already, {} to run",
            done.len(),
            todo.runnable().count()
        )));
    }
    on(Event::Started {
        out: out.clone(),
        base_url: engine.client.base.clone(),
        cells: todo.runnable().count(),
    });
    let cx = Arc::new(cell::Ctx {
        client: engine.client.clone(),
        spec: spec.clone(),
        synth: tokio::sync::Mutex::new(prompt::Synth::new(spec.workload.seed)),
        requests: opts
            .save_requests
            .then(|| std::sync::Mutex::new(Vec::new())),
    });
    let run = cells::Cells {
        loaded,
        spec: &spec,
        out: &out,
        server: &server,
        cx,
        on,
    };
    let result = run.all(&todo, &mut engine, &mut summary).await;
    if let Err(e) = result {
        engine.down().await;
        return Err(e);
    }
    dir::write_end(&out, loaded, &server)?;
    engine.down().await;
    Ok(summary)
}

/// Measure one runnable cell, forwarding a decode cell's ticks as events.
async fn measure(
    cx: &Arc<cell::Ctx>,
    c: &plan::Cell,
    rec: Record,
    on: &(dyn Fn(Event) + Sync),
) -> Record {
    match c.phase {
        Phase::Prefill => cell::prefill(cx, c, rec).await,
        Phase::Decode => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let measuring = cell::decode(cx.clone(), c, rec, tx);
            tokio::pin!(measuring);
            loop {
                tokio::select! {
                    rec = &mut measuring => break rec,
                    Some(tick) = rx.recv() => on(Event::Tick { id: c.id.clone(), tick }),
                }
            }
        }
    }
}

impl Summary {
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

/// The plan cut to `--only` and `--shard`.
fn select(plan: Plan, opts: &RunOptions) -> Plan {
    let mut plan = match opts.shard {
        Some(s) => plan.shard(s),
        None => plan,
    };
    if let Some(glob) = &opts.only {
        plan.cells.retain(|c| glob_match(glob, &c.id));
    }
    plan
}

/// `*` matches any run of characters, `?` one character.
pub fn glob_match(glob: &str, text: &str) -> bool {
    let (g, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    let (mut gi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if gi < g.len() && (g[gi] == '?' || g[gi] == t[ti]) {
            gi += 1;
            ti += 1;
        } else if gi < g.len() && g[gi] == '*' {
            star = Some(gi);
            mark = ti;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        let cases = [
            ("decode/8K/*", "decode/8K/c4", true),
            ("decode/8K/*", "decode/16K/c4", false),
            ("*/c1", "decode/64K/c1", true),
            ("prefill/?K", "prefill/8K", true),
            ("prefill/?K", "prefill/16K", false),
            ("*", "x", true),
        ];
        for (g, t, want) in cases {
            assert_eq!(glob_match(g, t), want, "{g} {t}");
        }
    }
}
