//! One cell as a report shows it: the leaf type every report section reads, so that the
//! sections and the context that assembles them import it from here, not from each other.

use crate::plan::Phase;
use crate::results::Record;
use schemars::JsonSchema;
use serde::Serialize;

/// One cell as a report shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CellView {
    /// `decode/8K/c4` (`<variant>/decode/8K/c4` in a run of engine variants).
    pub id: String,
    /// The engine variant the cell belongs to; `null` without variants.
    pub variant: Option<String>,
    /// `prefill`, `decode`, `load` or `capacity`.
    pub phase: Phase,
    /// `Prefill`, `Sustained decode`, `Open-loop load`, `Capacity probe` or `Capacity search`.
    pub phase_label: String,
    /// A probe of a capacity search (a decode or load cell under `capacity/`).
    pub probe: bool,
    /// The cell's load: `4` (requests at once), `2 req/s` (offered), `unlimited`, `—`.
    pub level_label: String,
    /// Context tokens.
    pub context: u64,
    /// `8K`.
    pub context_label: String,
    /// Simultaneous requests.
    pub concurrency: u32,
    /// `valid`, `invalid`, `failed`, `skipped`, or `missing` (planned, no record yet).
    pub status: CellStatus,
    /// `Valid`, `Invalid`, `Failed`, `Skipped`, `Not run`; a measured load cell that
    /// saturated the server adds ` · saturated` (`Valid · saturated`).
    pub status_label: String,
    /// Why a measured load cell saturated the server (the record's `saturated`); `null`
    /// when it did not.
    pub saturated: Option<String>,
    /// The prompt was clamped to max_model_len − 1.
    pub clamped: bool,
    /// Why the cell is skipped, invalid or failed (the record's reasons, else the plan's).
    pub reasons: Vec<String>,
    /// The engine's mean running requests where it differs from `concurrency` (decode).
    pub effective_concurrency: Option<f64>,
    /// The measured value at each SLO term's own percentile (decode and load cells with an
    /// SLO; empty otherwise).
    pub slo: Vec<SloValue>,
    /// Total tok/s / `hardware.gpu_count` (1 when unset) of a measured decode or load
    /// cell; `null` otherwise.
    pub tok_s_per_gpu: Option<f64>,
    /// On its context's frontier of tok/s per GPU against per-user tok/s (`frontier`);
    /// `null` for a cell that is no point of it (not a valid decode or load cell).
    pub on_frontier: Option<bool>,
    /// On its context's frontier of $/Mtok against per-user tok/s; `null` without
    /// `hardware.cost_per_hour` or for a cell that is no point.
    pub on_cost_frontier: Option<bool>,
    /// The result record; `null` for a missing cell.
    pub record: Option<Record>,
}

/// A cell's state in a report: its record's status, or `missing` (planned, no record yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Measured and within the validity thresholds.
    Valid,
    /// Measured, but a threshold was missed.
    Invalid,
    /// Could not be measured.
    Failed,
    /// In the plan, never sent.
    Skipped,
    /// Planned, no record yet.
    Missing,
}

impl CellStatus {
    /// As the context and CSV write it.
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Valid => "valid",
            CellStatus::Invalid => "invalid",
            CellStatus::Failed => "failed",
            CellStatus::Skipped => "skipped",
            CellStatus::Missing => "missing",
        }
    }

    /// Whether the cell was measured (valid or invalid).
    pub fn measured(self) -> bool {
        matches!(self, CellStatus::Valid | CellStatus::Invalid)
    }
}

/// A measured cell's value at one SLO term's own percentile.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SloValue {
    /// `TTFT p90`.
    pub head: String,
    /// The value, milliseconds; `null` when the record does not have the metric.
    pub value_ms: Option<f64>,
    /// The value is within the term's threshold.
    pub met: bool,
}
