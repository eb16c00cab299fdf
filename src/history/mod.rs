//! The history database (docs/history.md): every run added once, by its identity, with its
//! cells and their metrics, in an embedded SQLite file or a team's PostgreSQL — one schema,
//! one code path ([`store`]) — and what is read back from it: the runs ([`list`]), and series
//! of one metric of one cell over the runs of one spec, each point judged against the points
//! before it ([`trend`]), rendered as Markdown, HTML, CSV or JSON ([`render`]) and as a static
//! dashboard ([`site`]).

mod chart;
pub mod facts;
pub mod list;
pub mod nomatch;
mod page;
pub mod render;
pub mod site;
mod sql;
pub mod store;
mod target;
pub mod trend;

pub use list::HistoryRun;
pub use store::{Added, Store, Target};
pub use trend::{Flag, Point, Series, Trend, TrendQuery};

use std::path::PathBuf;

/// The history file used when neither `--db` nor `BENCHSPEC_HISTORY` names one.
pub const DEFAULT_DB: &str = "benchspec-history.sqlite";

/// The environment variable naming the history database.
pub const DB_ENV: &str = "BENCHSPEC_HISTORY";

/// What can go wrong with the history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database could not be opened or created.
    #[error("cannot open the history database {target}: {message}")]
    Open {
        /// The database, its password hidden.
        target: String,
        /// What the driver said.
        message: String,
    },
    /// A statement failed.
    #[error("the history database {target}: {message}")]
    Query {
        /// The database, its password hidden.
        target: String,
        /// What the driver said.
        message: String,
    },
    /// The database was written by a newer benchspec.
    #[error(
        "the history database {target} has schema version {found}, newer than this benchspec's \
         {known}: use a newer benchspec, or another --db"
    )]
    Newer {
        /// The database.
        target: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// A read command (`list`, `trend`, `site`) named an SQLite file that does not exist:
    /// reading never creates a database.
    #[error(
        "no history database at {target}: check --db (or BENCHSPEC_HISTORY); `history add` \
         or `run --history` creates one"
    )]
    Missing {
        /// The file named.
        target: String,
    },
    /// `history add` was given a run that `benchspec predict` made, without
    /// `--allow-predicted`.
    #[error(
        "{dir} was predicted by the twin {twin} (`benchspec predict`), not measured: a history \
         judges measured runs; add it with --allow-predicted to keep it there, marked as \
         predicted and left out of every trend"
    )]
    Predicted {
        /// The run directory.
        dir: PathBuf,
        /// The twin file that predicted it.
        twin: String,
    },
    /// The filters match nothing in the history; the message names what is there.
    #[error("{0}")]
    NoMatch(String),
    /// A run directory could not be read.
    #[error("{0}")]
    RunDir(#[from] crate::rundir::RunDirError),
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A template failed.
    #[error("{0}")]
    Render(String),
    /// A bad argument.
    #[error("{0}")]
    Usage(String),
}
