//! The run as the report context shows it ([`RunInfo`]: where, when, by what, how far it
//! got), in its own file so that the context and the facts it is read into both stand on it.

use super::view::{CellStatus, CellView};
use schemars::JsonSchema;
use serde::Serialize;

/// The run: where, when, by what, and how far it got.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunInfo {
    /// The run directory.
    pub dir: String,
    /// When the run started (UTC).
    pub started_at: Option<String>,
    /// When it ended; `null` for an unfinished run.
    pub ended_at: Option<String>,
    /// Every planned cell has a record.
    pub finished: bool,
    /// The host it ran on.
    pub host: Option<String>,
    /// The spec's sha256.
    pub spec_sha256: Option<String>,
    /// The benchspec version that measured.
    pub tool_version: Option<String>,
    /// The version the server reported.
    pub engine_reported_version: Option<String>,
    /// Cells by status: `valid`, `invalid`, `failed`, `skipped`, `missing`.
    pub counts: Counts,
    /// For a run `benchspec predict --out` made: what predicted it (nothing was measured).
    pub predicted: Option<String>,
    /// For a run `benchspec import` made: the peer that measured it (`AIPerf 0.13.0`).
    pub imported: Option<String>,
}

/// Cells by status.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Counts {
    /// Valid cells.
    pub valid: usize,
    /// Invalid cells.
    pub invalid: usize,
    /// Failed cells.
    pub failed: usize,
    /// Skipped cells.
    pub skipped: usize,
    /// Planned cells without a record (an unfinished run).
    pub missing: usize,
}

impl Counts {
    /// The cells of `cells` by status.
    pub(super) fn of(cells: &[CellView]) -> Counts {
        let mut counts = Counts::default();
        for c in cells {
            match c.status {
                CellStatus::Valid => counts.valid += 1,
                CellStatus::Invalid => counts.invalid += 1,
                CellStatus::Failed => counts.failed += 1,
                CellStatus::Skipped => counts.skipped += 1,
                CellStatus::Missing => counts.missing += 1,
            }
        }
        counts
    }
}
