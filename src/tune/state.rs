//! What tune is asked (the spec, the run directory, the objective, the budget) and the
//! search's state — each configuration measured (why, at what engine cost) or
//! predicted — shared by the search and the summary written from it.

use super::objective::{Estimate, TuneObjective};
use super::space::Config;
use crate::spec::Loaded;
use std::path::Path;

/// A measured configuration: why, and the engine seconds it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// `extreme`, `promising`, `uncertain`.
    pub why: String,
    /// Engine seconds.
    pub seconds: f64,
}

/// The search's state: each configuration measured or predicted.
#[derive(Debug, Clone)]
pub struct State {
    /// The configurations.
    pub configs: Vec<Config>,
    /// Measured ones.
    pub measured: Vec<Option<Measured>>,
    /// Each measured configuration's objective.
    pub values: Vec<Option<f64>>,
    /// Each unmeasured configuration's prediction (`None`: not predicted).
    pub predicted: Vec<Option<Estimate>>,
    /// Why it stopped.
    pub stopped: String,
    /// The measured cells' frontier per context.
    pub frontier: Vec<super::TuneFrontier>,
}

/// How much `tune` may measure; `None`: no limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    /// Configurations measured, at most.
    pub configs: Option<usize>,
    /// Engine seconds: no configuration is started once this many were spent.
    pub engine_s: Option<f64>,
}

/// What `tune` was asked.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The spec.
    pub loaded: &'a Loaded,
    /// The run directory.
    pub out: &'a Path,
    /// The objective.
    pub objective: TuneObjective,
    /// The budget.
    pub budget: Budget,
}
