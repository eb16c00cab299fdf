//! A digital twin of the user's own engine (docs/twin.md): `benchspec fit RUN_DIR… --out
//! TWIN.toml` fits the simulator's step-cost model ([`model`]) to measured prefill and decode
//! cells ([`fit`]), `--holdout F` predicts the cells it left out, and `benchspec predict SPEC
//! --twin TWIN.toml` gives every prefill and decode cell of a plan a predicted value with a 90%
//! interval, saying where it extrapolates ([`predict`]).

pub mod answer;
pub mod describe;
pub mod fit;
pub mod identify;
pub mod interval;
pub mod lsq;
pub mod model;
pub mod predict;
pub mod scored;
pub mod settings;
pub mod simulate;
pub mod suggest;
pub mod table;

use fit::Obs;
use model::{Params, Predicted};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The twin file's format version.
pub const TWIN_VERSION: u32 = 3;

/// What can go wrong fitting or predicting.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    /// A run directory could not be read.
    #[error("{0}")]
    RunDir(#[from] crate::rundir::RunDirError),
    /// Nothing to fit.
    #[error(
        "no measured prefill, decode, load or session cell with a TBT, TTFT or per-request tok/s in {0}: a twin is fitted to those"
    )]
    Nothing(String),
    /// The twin file cannot be read.
    #[error("cannot read the twin {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The twin file cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A bad argument.
    #[error("{0}")]
    Usage(String),
    /// The spec could not be run against the twin.
    #[error("running the spec against the twin: {0}")]
    Simulate(String),
}

/// One cell's prediction against its measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// The cell id.
    pub cell: String,
    /// `per_request_tok_s`, `tbt_ms_p50` or `ttft_ms_p50`.
    pub metric: String,
    /// Measured.
    pub measured: f64,
    /// Predicted.
    pub predicted: f64,
    /// (predicted − measured) / measured, percent.
    pub error_pct: f64,
}

/// Held-out cells: fitted without them, then predicted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holdout {
    /// The fraction of cells held out (0 for leave-one-out).
    pub fraction: f64,
    /// How: `every k-th cell` or `leave-one-out`.
    pub method: String,
    /// Median |error| over the held-out cells' tok/s, percent.
    pub median_pct: f64,
    /// Largest |error| of their tok/s, percent.
    pub max_pct: f64,
    /// Median |error| of their TTFT, percent, where measured.
    pub ttft_median_pct: Option<f64>,
    /// Held-out cells whose tok/s falls inside its interval, fraction (`None`: no held-out
    /// tok/s was judged — all unknown, or no interval earned).
    pub covered: Option<f64>,
    /// Held-out measured values left out of these figures: the fitted cells do not fix them
    /// (`predict` says `unknown`).
    #[serde(default)]
    pub unknown: usize,
    /// Held-out cells whose TTFT falls inside its 90% interval, fraction (`None`: none has a
    /// TTFT).
    pub ttft_covered: Option<f64>,
    /// What `predict` itself (the simulation) gives the held-out cells, against the measured
    /// values and its intervals (absent when the run's spec could not be simulated).
    #[serde(default)]
    pub predicted: Option<scored::Scored>,
    /// Each held-out cell's errors.
    pub cells: Vec<Residual>,
}

/// The range the twin was fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    /// Smallest and largest prompt tokens.
    pub contexts: [f64; 2],
    /// Smallest and largest concurrency.
    pub concurrency: [f64; 2],
}

/// A twin file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Twin {
    /// The format version ([`TWIN_VERSION`]).
    pub version: u32,
    /// The benchspec that fitted it.
    pub fitted_by: String,
    /// The engine: kind and reported version.
    pub engine: String,
    /// The engine's kind (`vllm`, `llama-cpp`, `sim`…).
    pub engine_kind: String,
    /// The version the engine reported, when it did.
    pub engine_version: Option<String>,
    /// The model served.
    pub model: String,
    /// The hardware the runs' spec names (`H200 NVL linux`), when it names any.
    pub hardware: Option<String>,
    /// The engine variant fitted (`fit --variant`), when the runs had variants.
    pub variant: Option<String>,
    /// The runs fitted.
    pub runs: Vec<String>,
    /// The fitted parameters.
    pub params: Params,
    /// The parameters the fitted cells do not fix (their values in `params` are one of many
    /// the cells allow:
    /// `predict` marks what depends on them unknown).
    pub not_identified: Vec<identify::NotIdentified>,
    /// What the fitted cells constrain, group by group: `predict` gives a value only where
    /// they fix it.
    pub designs: identify::Designs,
    /// The half-width of a 90% interval inside the fitted range, percent of the value (absent:
    /// none was earned).
    pub interval_pct: Option<f64>,
    /// The same for decode cells' TTFT, percent.
    pub ttft_interval_pct: Option<f64>,
    /// What `interval_pct` and `ttft_interval_pct` rest on: the fitted cells left out in
    /// turn.
    pub intervals: interval::Intervals,
    /// The range of the fitted cells.
    pub range: Range,
    /// The cells fitted on.
    pub fitted_on: Vec<String>,
    /// Each fitted cell's residuals.
    pub residuals: Vec<Residual>,
    /// The held-out cells, with `--holdout`.
    pub holdout: Option<Holdout>,
}

/// The model's value of `o`'s metrics.
pub fn predicted(p: &Params, o: &Obs) -> Predicted {
    match o.phase {
        crate::plan::Phase::Prefill => p.prefill(o.context),
        _ => p.decode(o.context, o.n, o.output, o.window_s),
    }
}

/// `o`'s residuals under `p`: tok/s per request and TBT for decode cells, TTFT for all.
pub fn residuals(p: &Params, o: &Obs) -> Vec<Residual> {
    let pr = predicted(p, o);
    let pairs = [
        (
            "per_request_tok_s",
            o.per_request_tok_s,
            pr.per_request_tok_s,
        ),
        ("tbt_ms_p50", o.tbt_s.map(|t| t * 1e3), pr.tbt_ms_p50),
        ("ttft_ms_p50", o.ttft_s.map(|t| t * 1e3), pr.ttft_ms_p50),
    ];
    pairs
        .into_iter()
        .filter_map(|(metric, m, q)| {
            let (m, q) = (m?, q?);
            (m > 0.0).then(|| Residual {
                cell: o.cell.clone(),
                metric: metric.into(),
                measured: m,
                predicted: q,
                error_pct: ((q - m) / m * 1e4).round() / 100.0,
            })
        })
        .collect()
}

pub mod build;
pub use build::{fit_runs, read_twin, write_twin};
