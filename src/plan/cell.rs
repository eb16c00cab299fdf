//! One cell of the plan, fully resolved: what it measures as an enum carrying its data
//! (prefill with its mode and repeats; decode with its window or request count), and the
//! flat form `plan.json` has always had on disk (`mode`, `duration_s`, `requests`,
//! `repeats`), converted at the serialization boundary and nowhere else.

mod file;

pub use file::CellFileError;

use super::load_cells::{OpenLoad, Search};
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
    /// Open-loop load: requests arriving at a rate.
    Load,
    /// A capacity search's summary.
    Capacity,
    /// Multi-turn conversations.
    Sessions,
    /// A trace replayed at its own times.
    Replay,
}

impl Phase {
    /// `prefill`, `decode`, `load` or `capacity`, as records and plan files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Load => "load",
            Phase::Capacity => "capacity",
            Phase::Sessions => "sessions",
            Phase::Replay => "replay",
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
    /// Requests arriving at a rate (a load cell).
    OpenLoop,
    /// Bisection over measured probes (a capacity cell).
    Search,
    /// Multi-turn conversations (a session cell).
    Sessions,
    /// A trace replayed (a replay cell).
    Replay,
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// Prompt processing.
    Prefill(Prefill),
    /// Sustained generation.
    Decode(Decode),
    /// Open-loop load.
    Load(OpenLoad),
    /// A capacity search.
    Capacity(Search),
    /// Multi-turn conversations.
    Sessions(super::sessions::SessionLoad),
    /// A trace replayed.
    Replay(super::replay::ReplayLoad),
}

/// One cell of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "file::CellFile", try_from = "file::CellFile")]
pub struct Cell {
    /// `prefill/8K` or `decode/8K/c4`; `<variant>/decode/8K/c4` in a spec with variants.
    pub id: String,
    /// The engine variant the cell is measured on (`engine.variants`), if any.
    pub variant: Option<String>,
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
    /// Times a decode or load cell is measured, interleaved with the other cells of its
    /// context (a prefill cell's repeats are its cold requests, in `measure`).
    pub repeats: u32,
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
            Measure::Load(_) => Phase::Load,
            Measure::Capacity(_) => Phase::Capacity,
            Measure::Sessions(_) => Phase::Sessions,
            Measure::Replay(_) => Phase::Replay,
        }
    }

    /// How the cell is measured, without its data.
    pub fn mode(&self) -> Mode {
        match self.measure {
            Measure::Prefill(Prefill::DecodeWarmup) => Mode::DecodeWarmup,
            Measure::Prefill(Prefill::Standalone { .. }) => Mode::Standalone,
            Measure::Decode(Decode::FixedDuration(_)) => Mode::FixedDuration,
            Measure::Decode(Decode::RequestCount(_)) => Mode::RequestCount,
            Measure::Load(_) => Mode::OpenLoop,
            Measure::Capacity(_) => Mode::Search,
            Measure::Sessions(_) => Mode::Sessions,
            Measure::Replay(_) => Mode::Replay,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(measure: Measure) -> Cell {
        Cell {
            id: "x".into(),
            variant: None,
            context: 8192,
            concurrency: 4,
            prompt_tokens: 8192,
            clamped: false,
            measure,
            skip: None,
            estimate_s: 1.5,
            repeats: 1,
        }
    }

    #[test]
    fn every_measure_survives_the_file_form() {
        let cases = [
            Measure::Prefill(Prefill::DecodeWarmup),
            Measure::Prefill(Prefill::Standalone { repeats: 3 }),
            Measure::Decode(Decode::FixedDuration(Duration::from_millis(1500))),
            Measure::Decode(Decode::RequestCount(12)),
            Measure::Load(OpenLoad {
                rate: crate::spec::Rate(2.5),
                arrivals: crate::spec::Arrivals::Gamma,
                burstiness: 0.25,
                max_concurrency: Some(8),
                bound: crate::plan::Bound::Duration(Duration::from_secs(10)),
                input: Some(crate::spec::Spread {
                    distribution: crate::spec::Distribution::Lognormal,
                    spread: 0.5,
                }),
                output: None,
            }),
            Measure::Load(OpenLoad {
                rate: crate::spec::Rate::INF,
                arrivals: crate::spec::Arrivals::Poisson,
                burstiness: 1.0,
                max_concurrency: None,
                bound: crate::plan::Bound::Requests(500),
                input: None,
                output: None,
            }),
            Measure::Capacity(Search {
                axis: crate::spec::SearchAxis::Rate,
                min: 0.5,
                max: 16.0,
                precision: 0.5,
                window: Duration::from_secs(20),
                arrivals: crate::spec::Arrivals::Constant,
                burstiness: 1.0,
            }),
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
