//! One cell of the plan, fully resolved: what it measures as an enum carrying its data
//! (prefill with its mode and repeats; decode with its window or request count), and the
//! flat form `plan.json` has always had on disk (`mode`, `duration_s`, `requests`,
//! `repeats`), converted at the serialization boundary and nowhere else.

use crate::spec::Tokens;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which phase a cell belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Prompt processing at concurrency 1.
    Prefill,
    /// Sustained generation.
    Decode,
}

impl Phase {
    /// `prefill` or `decode`, as records and plan files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// How a cell is measured, without its data (for display and for the file form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Prefill from the first warm-up request of the context's first decode cell.
    DecodeWarmup,
    /// Prefill from `repeats` cold requests with max_tokens 1.
    Standalone,
    /// Decode over a window of fixed length.
    FixedDuration,
    /// Decode until a number of requests have finished.
    RequestCount,
}

/// How a prefill cell is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefill {
    /// The first, still cold, warm-up request of the context's first decode cell.
    DecodeWarmup,
    /// The median of `repeats` cold requests with max_tokens 1.
    Standalone {
        /// Cold requests sent (at least 1).
        repeats: u32,
    },
}

/// The load of a decode cell: C closed-loop streams, measured over a window or a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    /// The window opens when all C streams produce and closes exactly this much later.
    FixedDuration(Duration),
    /// Slots issue requests until this many have finished.
    RequestCount(u32),
}

/// What a cell measures, with the data that needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Prompt processing.
    Prefill(Prefill),
    /// Sustained generation.
    Decode(Decode),
}

/// One cell of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "CellFile", try_from = "CellFile")]
pub struct Cell {
    /// `prefill/8K` or `decode/8K/c4`.
    pub id: String,
    /// The context length the matrix names, in tokens.
    pub context: u64,
    /// Simultaneous requests (1 for prefill).
    pub concurrency: u32,
    /// The exact prompt length sent.
    pub prompt_tokens: u64,
    /// The prompt was shortened to max_model_len − 1.
    pub clamped: bool,
    /// What is measured, and how.
    pub measure: Measure,
    /// Why the cell is not run; `None` for a runnable cell.
    pub skip: Option<String>,
    /// Estimated wall time in seconds (0 for a skipped cell).
    pub estimate_s: f64,
}

impl Cell {
    /// Whether the cell will be run.
    pub fn runs(&self) -> bool {
        self.skip.is_none()
    }

    /// Prefill or decode.
    pub fn phase(&self) -> Phase {
        match self.measure {
            Measure::Prefill(_) => Phase::Prefill,
            Measure::Decode(_) => Phase::Decode,
        }
    }

    /// How the cell is measured, without its data.
    pub fn mode(&self) -> Mode {
        match self.measure {
            Measure::Prefill(Prefill::DecodeWarmup) => Mode::DecodeWarmup,
            Measure::Prefill(Prefill::Standalone { .. }) => Mode::Standalone,
            Measure::Decode(Decode::FixedDuration(_)) => Mode::FixedDuration,
            Measure::Decode(Decode::RequestCount(_)) => Mode::RequestCount,
        }
    }
}

/// The id of a prefill cell.
pub fn prefill_id(context: u64) -> String {
    format!("prefill/{}", Tokens(context))
}

/// The id of a decode cell.
pub fn decode_id(context: u64, concurrency: u32) -> String {
    format!("decode/{}/c{concurrency}", Tokens(context))
}

/// A cell as `plan.json` writes it: flat, the mode beside the optional data of each mode.
#[derive(Serialize, Deserialize)]
struct CellFile {
    id: String,
    phase: Phase,
    context: u64,
    concurrency: u32,
    prompt_tokens: u64,
    #[serde(default)]
    clamped: bool,
    mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repeats: Option<u32>,
    #[serde(default)]
    skip: Option<String>,
    #[serde(default)]
    estimate_s: f64,
}

impl From<Cell> for CellFile {
    fn from(c: Cell) -> CellFile {
        let (mut duration_s, mut requests, mut repeats) = (None, None, None);
        match c.measure {
            Measure::Prefill(Prefill::DecodeWarmup) => {}
            Measure::Prefill(Prefill::Standalone { repeats: r }) => repeats = Some(r),
            Measure::Decode(Decode::FixedDuration(d)) => duration_s = Some(d.as_secs_f64()),
            Measure::Decode(Decode::RequestCount(n)) => requests = Some(n),
        }
        CellFile {
            phase: c.phase(),
            mode: c.mode(),
            id: c.id,
            context: c.context,
            concurrency: c.concurrency,
            prompt_tokens: c.prompt_tokens,
            clamped: c.clamped,
            duration_s,
            requests,
            repeats,
            skip: c.skip,
            estimate_s: c.estimate_s,
        }
    }
}

/// Why a cell of `plan.json` cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum CellFileError {
    /// The mode does not belong to the phase.
    #[error("cell `{id}`: mode `{mode:?}` is not a {phase} mode")]
    ModeOfPhase {
        /// The cell.
        id: String,
        /// Its mode.
        mode: Mode,
        /// Its phase.
        phase: &'static str,
    },
    /// A fixed-duration window that is not a duration.
    #[error("cell `{id}`: `duration_s` must be a positive number of seconds")]
    Duration {
        /// The cell.
        id: String,
    },
}

impl TryFrom<CellFile> for Cell {
    type Error = CellFileError;

    fn try_from(f: CellFile) -> Result<Cell, CellFileError> {
        let measure = match (f.phase, f.mode) {
            (Phase::Prefill, Mode::DecodeWarmup) => Measure::Prefill(Prefill::DecodeWarmup),
            (Phase::Prefill, Mode::Standalone) => Measure::Prefill(Prefill::Standalone {
                repeats: f.repeats.unwrap_or(1).max(1),
            }),
            (Phase::Decode, Mode::FixedDuration) => {
                let secs = f.duration_s.unwrap_or(0.0);
                let d = Duration::try_from_secs_f64(secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| CellFileError::Duration { id: f.id.clone() })?;
                Measure::Decode(Decode::FixedDuration(d))
            }
            (Phase::Decode, Mode::RequestCount) => {
                Measure::Decode(Decode::RequestCount(f.requests.unwrap_or(0)))
            }
            (phase, mode) => {
                return Err(CellFileError::ModeOfPhase {
                    id: f.id,
                    mode,
                    phase: phase.as_str(),
                });
            }
        };
        Ok(Cell {
            id: f.id,
            context: f.context,
            concurrency: f.concurrency,
            prompt_tokens: f.prompt_tokens,
            clamped: f.clamped,
            measure,
            skip: f.skip,
            estimate_s: f.estimate_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(measure: Measure) -> Cell {
        Cell {
            id: "x".into(),
            context: 8192,
            concurrency: 4,
            prompt_tokens: 8192,
            clamped: false,
            measure,
            skip: None,
            estimate_s: 1.5,
        }
    }

    #[test]
    fn every_measure_survives_the_file_form() {
        let cases = [
            Measure::Prefill(Prefill::DecodeWarmup),
            Measure::Prefill(Prefill::Standalone { repeats: 3 }),
            Measure::Decode(Decode::FixedDuration(Duration::from_millis(1500))),
            Measure::Decode(Decode::RequestCount(12)),
        ];
        for m in cases {
            let c = cell(m);
            let text = serde_json::to_string(&c).unwrap_or_default();
            let back: Cell = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(back, c, "{text}");
        }
    }

    #[test]
    fn the_file_form_is_flat() {
        let c = cell(Measure::Decode(Decode::FixedDuration(Duration::from_secs(
            30,
        ))));
        let v = serde_json::to_value(&c).unwrap_or_default();
        assert_eq!(v["phase"], "decode");
        assert_eq!(v["mode"], "fixed-duration");
        assert_eq!(v["duration_s"], 30.0);
        assert!(v.get("requests").is_none() && v.get("repeats").is_none());
    }

    #[test]
    fn a_mode_of_the_other_phase_is_refused() {
        let text = r#"{"id":"prefill/8K","phase":"prefill","context":8192,"concurrency":1,
            "prompt_tokens":8192,"mode":"fixed-duration","duration_s":30}"#;
        let err = serde_json::from_str::<Cell>(text)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("not a prefill mode")),
            "{err:?}"
        );
    }
}
