//! The run stage (contract §4–§6): set up the engine (the embedded simulator in-process, or a
//! server to attach to), check that it serves the model, expand the plan with what the server
//! says, measure each cell in order and append its record to `results.jsonl` as it ends. The
//! core reports progress as [`Event`]s and never prints.

pub mod cell;
mod chunk;
pub mod client;
mod dir;
pub use dir::redact as redact_args;
pub mod interrupt;
pub mod launch;
pub mod prompt;
pub mod sse;
pub mod window;

use crate::plan::{self, Phase, Plan, Rates, Shard};
use crate::results::{self, Record, Status};
use crate::spec::{EngineKind, Loaded, Tokens};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    #[error("`{0}` exists and is not empty; choose another `--out`")]
    NotEmpty(String),
    /// Ctrl-C.
    #[error("interrupted during {cell}; the finished cells ({kept}) are kept in {results}")]
    Interrupted {
        /// The cell that was being measured.
        cell: String,
        /// The results file.
        results: String,
        /// Records written.
        kept: usize,
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
            RunError::Dir { .. } | RunError::NotEmpty(_) => 2,
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
    let out = dir::prepare(opts.out.clone(), &loaded.path)?;
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
    dir::write_start(&out, loaded, &plan, &server)?;
    let total = plan.runnable().count();
    on(Event::Started {
        out: out.clone(),
        base_url: engine.client.base.clone(),
        cells: total,
    });
    let cx = Arc::new(cell::Ctx {
        client: engine.client.clone(),
        spec: spec.clone(),
        synth: tokio::sync::Mutex::new(prompt::Synth::new(spec.workload.seed)),
        requests: opts
            .save_requests
            .then(|| std::sync::Mutex::new(Vec::new())),
    });
    let mut summary = Summary {
        out: out.clone(),
        ..Summary::default()
    };
    let mut index = 0;
    for c in &plan.cells {
        let rec = Record::new(c, results::record::utc_now(), &spec.labels);
        let rec = if c.runs() {
            index += 1;
            on(Event::Cell {
                index,
                total,
                id: c.id.clone(),
            });
            tokio::select! {
                rec = measure(&cx, c, rec, on) => rec,
                () = interrupt::requested() => {
                    // The cell in flight is dropped (its requests cancelled); the cells already
                    // on disk stay; the engine is stopped.
                    engine.down().await;
                    dir::write_end(&out, loaded, &server)?;
                    return Err(RunError::Interrupted { cell: c.id.clone(), results: out.join("results.jsonl").display().to_string(), kept: summary.recorded() });
                }
            }
        } else {
            Record {
                status: Status::Skipped,
                reasons: c.skip.iter().cloned().collect(),
                ..rec
            }
        };
        if let Some(lines) = &cx.requests {
            let lines: Vec<serde_json::Value> = lines
                .lock()
                .map(|mut l| std::mem::take(&mut *l))
                .unwrap_or_default();
            dir::append_lines(&out.join("requests.jsonl"), &lines)?;
        }
        // A launched engine that died during the cell fails it, whatever was measured.
        let mut rec = rec;
        if let Some(status) = engine.exit_status() {
            rec.status = Status::Failed;
            rec.reasons
                .push(format!("the engine exited ({status}) during the cell"));
        }
        let path = out.join("results.jsonl");
        results::append(&path, &rec).map_err(|source| RunError::Dir {
            path: path.display().to_string(),
            source,
        })?;
        summary.count(rec.status);
        if c.runs() {
            on(Event::Done {
                index,
                total,
                record: Box::new(rec),
            });
            engine.after_cell(&c.id, &spec, on).await?;
        }
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

/// The engine end of a run: the in-process simulator, a launched engine, or a server to
/// attach to, and the client that talks to it.
struct EngineSide {
    client: client::Client,
    sim: Option<crate::sim::Sim>,
    launched: Option<launch::Engine>,
    out: PathBuf,
}

impl EngineSide {
    async fn up(
        spec: &crate::spec::Spec,
        opts: &RunOptions,
        out: &std::path::Path,
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<EngineSide, RunError> {
        let (base_url, sim) = match spec.engine.kind {
            EngineKind::Sim => {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(|e| RunError::Engine(format!("cannot listen on 127.0.0.1: {e}")))?;
                let server = crate::sim::start(listener, crate::sim::options_for(spec)?)
                    .map_err(|e| RunError::Engine(format!("cannot start the simulator: {e}")))?;
                (server.base_url(), Some(server))
            }
            _ => (
                opts.base_url
                    .clone()
                    .unwrap_or_else(|| spec.engine.base_url.clone()),
                None,
            ),
        };
        let key = spec
            .engine
            .api_key_env
            .as_ref()
            .and_then(|name| std::env::var(name).ok());
        let pool = spec.matrix.concurrency.iter().copied().max().unwrap_or(1) as usize;
        let client =
            client::Client::new(&base_url, spec, key, pool + 2).map_err(RunError::Engine)?;
        let mut side = EngineSide {
            client,
            sim,
            launched: None,
            out: out.to_path_buf(),
        };
        if spec.engine.kind != EngineKind::Sim && spec.engine.launch.is_some() {
            side.launch(spec, on).await?;
        }
        Ok(side)
    }

    async fn launch(
        &mut self,
        spec: &crate::spec::Spec,
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<(), RunError> {
        let Some(l) = &spec.engine.launch else {
            return Ok(());
        };
        on(Event::Note(format!(
            "launching the engine (output in {})",
            self.out.join("engine.log").display()
        )));
        let mut engine = launch::Engine::start(l, &self.out)?;
        engine
            .wait_ready(&self.client, &spec.model.served_name, l.ready_timeout.0)
            .await?;
        on(Event::Note("the engine is ready".into()));
        self.launched = Some(engine);
        Ok(())
    }

    /// A launched engine that died during a cell is relaunched (`restart_on_crash`) or ends the run.
    async fn after_cell(
        &mut self,
        cell: &str,
        spec: &crate::spec::Spec,
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<(), RunError> {
        let Some(status) = self.launched.as_mut().and_then(launch::Engine::exited) else {
            return Ok(());
        };
        let tail = launch::log_tail(&self.out.join("engine.log"), 20);
        if let Some(e) = self.launched.take() {
            e.stop().await;
        }
        let restart = spec
            .engine
            .launch
            .as_ref()
            .is_some_and(|l| l.restart_on_crash);
        if !restart {
            return Err(RunError::Engine(format!(
                "the engine exited ({status}) during {cell}; the last lines of engine.log:\n{tail}"
            )));
        }
        on(Event::Note(format!(
            "the engine exited ({status}) during {cell}; relaunching (`restart_on_crash`)"
        )));
        self.launch(spec, on).await
    }

    /// The exit status of a launched engine that is no longer running.
    fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.launched.as_mut().and_then(launch::Engine::exited)
    }

    async fn down(self) {
        if let Some(e) = self.launched {
            e.stop().await;
        }
        if let Some(sim) = self.sim {
            let _ = tokio::time::timeout(Duration::from_secs(5), sim.stop()).await;
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
