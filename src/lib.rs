//! benchspec: benchmark LLM serving engines from a checked-in spec.
//!
//! The pipeline reads top to bottom: [`cli`] parses the command line; [`spec`] reads and checks a
//! spec; [`plan`] expands it into cells; [`run`] measures them (with [`telemetry`] watching the
//! engine and GPUs) and [`results`] keeps the records; [`report`] renders them; [`history`] keeps
//! runs for trends; [`sim`] is the embedded simulated engine; [`init`] writes a first spec. Each
//! stage has its own error type; [`Error`] joins them, and `cli::exit` maps each to the exit code docs/cli.md
//! gives it.
//!
//! Beside [`run`], what it drives but is a subsystem of its own: [`prompt`] makes a cell's
//! prompts to exact token counts with the engine's tokenizer, [`footprint`] reads the client's
//! own CPU and memory, and the arrival schedules of open-loop cells are drawn ahead in
//! [`plan::arrivals`].

/// A recorded real-vLLM file of `tests/fixtures/vllm/`, for the tests that hold the client and
/// the simulator to the engine's own bytes.
#[cfg(test)]
macro_rules! vllm_fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/vllm/",
            $name
        ))
    };
}

pub mod cli;
pub mod client;
pub mod footprint;
pub mod history;
pub mod images;
pub mod init;
pub mod interop;
pub mod plan;
pub mod prompt;
pub mod report;
pub mod results;
pub mod rng;
pub mod run;
pub mod rundir;
pub mod sim;
pub mod spec;
pub mod telemetry;
pub mod text;
pub mod tune;
pub mod twin;

/// Any error that ends a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A spec could not be read or is invalid.
    #[error(transparent)]
    Spec(#[from] spec::SpecError),
    /// The plan could not be made (a bad `--shard`, say).
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// A run could not go on.
    #[error(transparent)]
    Run(#[from] run::RunError),
    /// The simulator could not start.
    #[error(transparent)]
    Sim(#[from] sim::SimError),
    /// A run directory could not be read, written or merged.
    #[error(transparent)]
    RunDir(#[from] rundir::RunDirError),
    /// A report could not be rendered.
    #[error(transparent)]
    Report(#[from] report::ReportError),
    /// The history database failed.
    #[error(transparent)]
    History(#[from] history::HistoryError),
    /// A peer's file could not be imported, or a run exported.
    #[error(transparent)]
    Interop(#[from] interop::InteropError),
    /// A twin could not be fitted, read or written.
    #[error(transparent)]
    Twin(#[from] twin::TwinError),
    /// `tune` could not search.
    #[error(transparent)]
    Tune(#[from] tune::TuneError),
    /// `init` wrote no spec.
    #[error(transparent)]
    Init(#[from] init::InitError),
    /// Output could not be serialized as JSON.
    #[error("cannot write JSON: {0}")]
    Json(serde_json::Error),
    /// Writing output failed.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// What was being written.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}
