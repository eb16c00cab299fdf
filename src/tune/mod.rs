//! `benchspec tune SPEC --out DIR` (docs/cli.md): which engine configuration of the spec's
//! `engine.variants` or `engine.sweep` is best under its SLO, measuring only what it must.
//! A few configurations are measured ([`space::first_picks`]), the twin is fitted per family
//! ([`family`]), every unmeasured configuration predicted with a 90% interval
//! ([`objective`]), the most promising and the most uncertain measured next, until no
//! unmeasured configuration's optimistic end beats the best measured one or the budget is
//! spent ([`search`]). The run directory holds the measured cells and `tune.json` ([`TuneFile`]).

pub mod family;
pub mod objective;
pub mod search;
pub mod space;
pub mod state;
pub mod summary;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `tune.json`'s format version.
pub const TUNE_VERSION: u32 = 1;
/// The file `tune` writes in its run directory.
pub const TUNE_FILE: &str = "tune.json";

/// What can go wrong tuning.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// Bad usage or a spec tune cannot search.
    #[error("{0}")]
    Usage(String),
    /// A signal stopped the search (what was measured is kept).
    #[error("{0}")]
    Interrupted(String),
    /// A configuration could not be measured.
    #[error("measuring {config}: {source}")]
    Run {
        /// The configuration.
        config: String,
        /// Why.
        source: Box<crate::run::RunError>,
    },
    /// The run directory could not be read.
    #[error(transparent)]
    RunDir(#[from] crate::rundir::RunDirError),
    /// A twin could not be fitted or run.
    #[error(transparent)]
    Twin(#[from] crate::twin::TwinError),
    /// `tune.json` could not be read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// One end of an interval, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    /// The pessimistic end (null: no cell surely meets the SLO).
    pub low: Option<f64>,
    /// The optimistic end (null: unbounded, no interval was earned).
    pub high: Option<f64>,
}

/// One configuration in `tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResult {
    /// The variant's name (its cells are `<name>/…` in `results.jsonl`).
    pub name: String,
    /// What it changes from the base engine (`--max-num-seqs 128`, `sim.kv_tokens 64K`).
    pub args: Vec<String>,
    /// What it changes that the twin does not model (its family; empty: the base's).
    pub family: String,
    /// Measured (true) or predicted by the family's twin (false).
    pub measured: bool,
    /// The objective: measured, or the twin's value (null: no cell met the SLO, or none
    /// was predicted).
    pub objective: Option<f64>,
    /// A predicted configuration's 90% interval (null when measured, or not predicted).
    pub interval: Option<Interval>,
    /// Why it was measured: `extreme` (first), `promising`, `uncertain`, or `earlier` (a
    /// resumed run's); null when predicted.
    pub why: Option<String>,
    /// Engine seconds its measurement took (null when predicted).
    pub engine_seconds: Option<f64>,
}

/// The winner: the best measured configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Winner {
    /// Its name.
    pub name: String,
    /// Its measured objective.
    pub objective: f64,
    /// How its engine is started: the launch command, or the simulator settings it changes.
    pub launch: String,
}

/// The frontier at one context of the configurations measured: each point a cell (which
/// variant, how many at once), as the report's frontier (docs/reports.md) draws it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TuneFrontier {
    /// Context tokens.
    pub context: u64,
    /// `8K`.
    pub context_label: String,
    /// The points on the frontier of tok/s per GPU against per-user tok/s, by per-user tok/s
    /// ascending.
    pub points: Vec<crate::report::frontier::FrontierPoint>,
    /// The points on the frontier of $/Mtok against per-user tok/s (empty without
    /// `hardware.cost_per_hour`).
    pub cost_points: Vec<crate::report::frontier::FrontierPoint>,
}

/// `tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TuneFile {
    /// The format version ([`TUNE_VERSION`]).
    pub version: u32,
    /// `goodput` (req/s), `tok-s-per-gpu` or `usd-per-mtok` (lower is better), under the
    /// spec's SLO.
    pub objective: String,
    /// Every configuration, best first (measured and predicted together, by objective).
    pub configs: Vec<ConfigResult>,
    /// The best measured configuration (null: none met the SLO).
    pub winner: Option<Winner>,
    /// Engine seconds spent measuring.
    pub engine_seconds: f64,
    /// What measuring every configuration would have cost: the measured configurations'
    /// mean engine seconds times the number of configurations.
    pub grid_engine_seconds: f64,
    /// Why the search stopped.
    pub stopped: String,
    /// Per context, the frontier of the measured configurations' cells (empty before any
    /// was measured).
    #[serde(default)]
    pub frontier: Vec<TuneFrontier>,
}

/// The JSON Schema of `tune.json`, as committed in `schemas/tune-v1.schema.json`.
pub fn tune_schema_text() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<TuneFile>().to_value();
    if let serde_json::Value::Object(map) = &mut schema {
        map.insert(
            "description".into(),
            "tune.json: benchspec tune's search over a spec's engine configurations — each measured or predicted by the twin with its interval, the winner, and the engine time spent against the full grid's.".into(),
        );
    }
    format!("{schema:#}\n")
}
