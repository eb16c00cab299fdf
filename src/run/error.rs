//! Why a run, or the engine under it, could not go on: typed until they are shown.

use crate::client::ApiError;
use crate::plan::ConfigError;
use crate::plan::vocab::{DatasetError, Span};
use crate::rundir::{RESULTS, RunDirError};
use std::path::PathBuf;
use std::process::ExitStatus;

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run directory could not be made, read or written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The caller asked the run to stop.
    #[error(
        "interrupted during {cell}; the finished cells ({kept}) are kept in {}; go on with `{resume}`",
        out.join(RESULTS).display()
    )]
    Interrupted {
        /// The command that goes on where the run stopped.
        resume: String,
        /// The cell that was being measured.
        cell: String,
        /// The run directory.
        out: PathBuf,
        /// Records written.
        kept: usize,
    },
    /// The caller asked the run to stop before its first cell.
    #[error("interrupted while {during}; nothing was measured")]
    InterruptedEarly {
        /// What the run was doing.
        during: String,
    },
    /// The engine stopped answering during a cell, and the run cannot go on.
    #[error(
        "{why} ({cell}); the finished cells are kept in {}; {resume}",
        out.join(RESULTS).display()
    )]
    EngineLost {
        /// What happened.
        why: String,
        /// The cell it happened in.
        cell: String,
        /// The run directory.
        out: PathBuf,
        /// How to go on.
        resume: String,
    },
    /// The engine could not be started or reached, or does not serve the model.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A LoRA adapter of `workload.adapters` is not among the models the server lists.
    #[error(
        "{at}: the engine{which} at {base} does not serve adapter `{adapter}` (its /v1/models lists {there}); name a listed adapter, or serve it (vLLM: `--enable-lora --lora-modules {adapter}=PATH`; the simulator: `engine.sim.lora.adapters`)"
    )]
    AdapterNotServed {
        /// Where the spec names it (`FILE:LINE:COL`).
        at: String,
        /// ` of variant `NAME`` for an engine variant's server; empty for the spec's engine.
        which: String,
        /// The server.
        base: String,
        /// The adapter.
        adapter: String,
        /// What the server lists, worded.
        there: String,
    },
    /// The engine's settings could not be read from the environment (the API key, `${VAR}`
    /// in the launch command), or name what does not exist.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The load phase's dataset could not be read (it changed since it was checked).
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// The replay phase's trace could not be read.
    #[error(transparent)]
    Trace(#[from] crate::plan::vocab::TraceError),
    /// `--start-at +…` without a duration after the `+`.
    #[error("`{0}`: give a duration after `+`, like +30s or +2m")]
    StartAtSpan(String),
    /// `--start-at` is neither an RFC 3339 instant nor `+DURATION`.
    #[error(
        "`{0}` is not an RFC 3339 instant like 2026-12-07T10:00:00Z (with `Z` or an offset such as +02:00), nor `+DURATION` like +30s"
    )]
    StartAtInstant(String),
    /// `--start-at` is more than `LATE_OK_S` in the past.
    #[error("`{text}` is {ago_s:.0} s in the past (now is {now}); give a later time")]
    StartAtPast {
        /// The value given.
        text: String,
        /// How far in the past, in seconds.
        ago_s: f64,
        /// Now, as RFC 3339.
        now: String,
    },
    /// The local tokenizer (`workload.tokenizer`) could not be loaded.
    #[error(transparent)]
    Tokenizer(#[from] crate::client::local::TokenizerError),
}

impl RunError {
    /// Whether the caller asked the run to stop (a signal), rather than something failing.
    pub fn is_interrupt(&self) -> bool {
        matches!(
            self,
            RunError::Interrupted { .. } | RunError::InterruptedEarly { .. }
        )
    }

    /// The run directory that holds what was measured before the run stopped, when known.
    pub fn run_dir(&self) -> Option<&std::path::Path> {
        match self {
            RunError::Interrupted { out, .. } | RunError::EngineLost { out, .. } => Some(out),
            _ => None,
        }
    }
}

/// Why the engine could not be started, reached, or kept alive (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The in-process simulator could not listen or start.
    #[error("cannot start the simulator on 127.0.0.1: {0}")]
    SimStart(std::io::Error),
    /// An in-process run was asked of an engine other than the simulator.
    #[error(
        "the {engine} engine is not the simulator: only `kind: sim` engines answer in this process"
    )]
    NotInProcess {
        /// The engine (or variant).
        engine: String,
    },
    /// The HTTP client could not be made, or the server answered wrongly.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The launch command could not be started.
    #[error("cannot start the engine `{program}`: {source}{}", spawn_hint(source))]
    Spawn {
        /// The program.
        program: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Another process listens on the port the launched engine is to serve on.
    #[error(
        "port {port} is already in use by another process (something answers at {url}); stop it or change the port in `engine.launch.command` and `engine.base_url`"
    )]
    PortInUse {
        /// The port.
        port: u16,
        /// The engine's URL.
        url: String,
    },
    /// The engine exited before it answered.
    #[error("the engine exited ({status}) before it was ready; the last lines of {}:\n{tail}", log.display())]
    ExitedEarly {
        /// How it exited.
        status: ExitStatus,
        /// Its log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// The engine did not become ready in time.
    #[error(
        "the engine was not ready within {timeout}: `/health` and `/v1/models` listing `{served}` did not both answer; the last lines of {}:\n{tail}",
        log.display()
    )]
    NotReady {
        /// `ready_timeout`.
        timeout: Span,
        /// The model expected.
        served: String,
        /// Its log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// A launched engine died during a cell and is not to be relaunched.
    #[error("the engine{which} exited ({status}) during {cell}; the last lines of {log}:\n{tail}")]
    Exited {
        /// ` (replica i)` when several are launched, else empty.
        which: String,
        /// Its log's file name.
        log: String,
        /// How it exited.
        status: ExitStatus,
        /// The cell.
        cell: String,
        /// The log's last lines.
        tail: String,
    },
    /// The server cannot be reached.
    #[error("the engine at {base} cannot be reached: {source}")]
    Unreachable {
        /// Its URL.
        base: String,
        /// What failed.
        source: ApiError,
    },
    /// The server does not serve the model.
    #[error(
        "the engine at {base} serves {there}, not `{served}`; fix `model.served_name` or the server"
    )]
    NotServed {
        /// Its URL.
        base: String,
        /// What it lists, worded.
        there: String,
        /// The model asked for.
        served: String,
    },
}

fn spawn_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::NotFound {
        " (is it installed and on PATH?)"
    } else {
        ""
    }
}
