//! What the run reports as it goes: the [`Event`]s `run` and `run_in_process` hand to their
//! caller's sink (the command line prints them; the run itself never prints).

use super::cell;
use crate::results::Record;
use std::path::PathBuf;

/// What the run reports as it goes.
#[derive(Debug, Clone)]
pub enum Event {
    /// The run directory is ready and the engine answers.
    Started {
        /// The run directory.
        out: PathBuf,
        /// The engine's URL.
        base_url: String,
        /// Cells to run.
        cells: usize,
    },
    /// Something worth saying that is not an error.
    Note(String),
    /// A cell begins.
    Cell {
        /// From 1.
        index: usize,
        /// Cells to run.
        total: usize,
        /// Its id.
        id: String,
    },
    /// A decode or load cell's live state (a few times a second).
    Tick {
        /// The cell.
        id: String,
        /// Its state.
        tick: cell::Tick,
    },
    /// A cell's record was written.
    Done {
        /// From 1.
        index: usize,
        /// Cells to run.
        total: usize,
        /// The record.
        record: Box<Record>,
    },
}
