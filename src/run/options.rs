//! How a run is asked to run ([`RunOptions`], from `benchspec run`'s flags) and how it ended
//! ([`RunSummary`], its records counted by status and the exit code they give).

use super::start_at::StartAt;
use crate::plan::Shard;
use crate::results::Status;
use std::path::PathBuf;

/// How `benchspec run` was asked to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run directory; a fresh one under `runs/` by default.
    pub out: Option<PathBuf>,
    /// Only cells whose id matches this glob (`decode/8K/*`).
    pub only: Option<String>,
    /// Only this shard of the runnable cells.
    pub shard: Option<Shard>,
    /// With `shard`: the load cells in every shard, each offering its part of the rate
    /// (`--split-load`).
    pub split_load: bool,
    /// Write per-request detail to `requests.jsonl`.
    pub save_requests: bool,
    /// Go on with the run directory `out`: run only the cells without a record.
    pub resume: bool,
    /// Worker threads of the measuring client (one per core when `None`).
    pub client_threads: Option<u32>,
    /// Wait until this instant, once the engine answers, before the first cell
    /// (`--start-at`): the shards of a split load start together.
    pub start_at: Option<StartAt>,
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The run directory.
    pub out: PathBuf,
    /// Records by status.
    pub valid: usize,
    /// Invalid cells.
    pub invalid: usize,
    /// Failed cells.
    pub failed: usize,
    /// Skipped cells.
    pub skipped: usize,
}

impl RunSummary {
    pub(super) fn recorded(&self) -> usize {
        self.valid + self.invalid + self.failed + self.skipped
    }

    pub(super) fn count(&mut self, status: Status) {
        match status {
            Status::Valid => self.valid += 1,
            Status::Invalid => self.invalid += 1,
            Status::Failed => self.failed += 1,
            Status::Skipped => self.skipped += 1,
        }
    }
}
