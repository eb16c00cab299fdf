//! The search's state — each configuration measured (why, at what engine cost) or
//! predicted — shared by the search and the summary written from it.

use super::objective::Estimate;
use super::space::Config;

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
