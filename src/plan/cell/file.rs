//! The flat form of a cell in `plan.json`: the mode beside the optional data of each mode
//! (`duration_s`, `requests`, `repeats`, a load cell's `rate` and arrivals, a search's
//! bracket), converted at the serialization boundary and nowhere else.

use super::{Cell, Decode, Measure, Mode, Phase, Prefill};
use crate::plan::load_cells::{Bound, OpenLoad, Search};
use crate::plan::sessions::SessionLoad;
use crate::spec::{Arrivals, Rate, SearchAxis, Spread};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A cell as `plan.json` writes it.
#[derive(Serialize, Deserialize)]
pub(super) struct CellFile {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    arrivals: Option<Arrivals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    burstiness: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    search: Option<SearchAxis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    precision: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sessions: Option<SessionLoad>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay: Option<crate::plan::replay::ReplayLoad>,
    #[serde(default)]
    skip: Option<String>,
    #[serde(default)]
    estimate_s: f64,
}

impl From<Cell> for CellFile {
    fn from(c: Cell) -> CellFile {
        let mut f = CellFile {
            phase: c.phase(),
            mode: c.mode(),
            id: c.id,
            variant: c.variant,
            context: c.context,
            concurrency: c.concurrency,
            prompt_tokens: c.prompt_tokens,
            clamped: c.clamped,
            duration_s: None,
            requests: None,
            repeats: None,
            rate: None,
            arrivals: None,
            burstiness: None,
            max_concurrency: None,
            input: None,
            output: None,
            search: None,
            min: None,
            max: None,
            precision: None,
            sessions: None,
            replay: None,
            skip: c.skip,
            estimate_s: c.estimate_s,
        };
        match c.measure {
            Measure::Prefill(Prefill::DecodeWarmup) => {}
            Measure::Prefill(Prefill::Standalone { repeats: r }) => f.repeats = Some(r),
            Measure::Decode(Decode::FixedDuration(d)) => f.duration_s = Some(d.as_secs_f64()),
            Measure::Decode(Decode::RequestCount(n)) => f.requests = Some(n),
            Measure::Load(l) => {
                match l.bound {
                    Bound::Duration(d) => f.duration_s = Some(d.as_secs_f64()),
                    Bound::Requests(n) => f.requests = Some(n),
                }
                f.rate = Some(l.rate);
                f.arrivals = Some(l.arrivals);
                f.burstiness = Some(l.burstiness);
                f.max_concurrency = l.max_concurrency;
                (f.input, f.output) = (l.input, l.output);
            }
            Measure::Capacity(s) => {
                f.search = Some(s.axis);
                (f.min, f.max, f.precision) = (Some(s.min), Some(s.max), Some(s.precision));
                f.duration_s = Some(s.window.as_secs_f64());
                f.arrivals = Some(s.arrivals);
                f.burstiness = Some(s.burstiness);
            }
            Measure::Sessions(s) => f.sessions = Some(s),
            Measure::Replay(r) => f.replay = Some(r),
        }
        if c.repeats > 1 {
            f.repeats = Some(c.repeats);
        }
        f
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
    /// A load or capacity cell without the field it needs.
    #[error("cell `{id}`: `{field}` is missing")]
    Missing {
        /// The cell.
        id: String,
        /// The field.
        field: &'static str,
    },
}

impl CellFile {
    fn window(&self) -> Result<Duration, CellFileError> {
        Duration::try_from_secs_f64(self.duration_s.unwrap_or(0.0))
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| CellFileError::Duration {
                id: self.id.clone(),
            })
    }

    fn need<T>(&self, v: Option<T>, field: &'static str) -> Result<T, CellFileError> {
        v.ok_or_else(|| CellFileError::Missing {
            id: self.id.clone(),
            field,
        })
    }

    fn measure(&self) -> Result<Measure, CellFileError> {
        Ok(match (self.phase, self.mode) {
            (Phase::Prefill, Mode::DecodeWarmup) => Measure::Prefill(Prefill::DecodeWarmup),
            (Phase::Prefill, Mode::Standalone) => Measure::Prefill(Prefill::Standalone {
                repeats: self.repeats.unwrap_or(1).max(1),
            }),
            (Phase::Decode, Mode::FixedDuration) => {
                Measure::Decode(Decode::FixedDuration(self.window()?))
            }
            (Phase::Decode, Mode::RequestCount) => {
                Measure::Decode(Decode::RequestCount(self.requests.unwrap_or(0)))
            }
            (Phase::Load, Mode::OpenLoop) => Measure::Load(OpenLoad {
                rate: self.need(self.rate, "rate")?,
                arrivals: self.arrivals.unwrap_or_default(),
                burstiness: self.burstiness.unwrap_or(1.0),
                max_concurrency: self.max_concurrency,
                bound: match self.requests {
                    Some(n) => Bound::Requests(n),
                    None => Bound::Duration(self.window()?),
                },
                input: self.input,
                output: self.output,
            }),
            (Phase::Capacity, Mode::Search) => Measure::Capacity(Search {
                axis: self.need(self.search, "search")?,
                min: self.need(self.min, "min")?,
                max: self.need(self.max, "max")?,
                precision: self.need(self.precision, "precision")?,
                window: self.window()?,
                arrivals: self.arrivals.unwrap_or_default(),
                burstiness: self.burstiness.unwrap_or(1.0),
            }),
            (Phase::Sessions, Mode::Sessions) => {
                Measure::Sessions(self.need(self.sessions, "sessions")?)
            }
            (Phase::Replay, Mode::Replay) => Measure::Replay(self.need(self.replay, "replay")?),
            (phase, mode) => {
                return Err(CellFileError::ModeOfPhase {
                    id: self.id.clone(),
                    mode,
                    phase: phase.as_str(),
                });
            }
        })
    }
}

impl TryFrom<CellFile> for Cell {
    type Error = CellFileError;

    fn try_from(f: CellFile) -> Result<Cell, CellFileError> {
        let measure = f.measure()?;
        Ok(Cell {
            id: f.id,
            variant: f.variant,
            context: f.context,
            concurrency: f.concurrency,
            prompt_tokens: f.prompt_tokens,
            clamped: f.clamped,
            skip: f.skip,
            estimate_s: f.estimate_s,
            repeats: match measure {
                Measure::Decode(_) | Measure::Load(_) => f.repeats.unwrap_or(1).max(1),
                _ => 1,
            },
            measure,
        })
    }
}
