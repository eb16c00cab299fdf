//! The results stage: the record of each cell (contract §6), its statistics, and the JSONL
//! sink that appends each record whole — write, flush, fsync — as its cell ends, so a crash
//! loses nothing already measured.

pub mod record;
pub mod stats;

pub use record::{Record, Status, TokenSource};

use std::io::Write;
use std::path::Path;

/// Append `record` as one line to `path` and make it durable before returning.
pub fn append(path: &Path, record: &Record) -> std::io::Result<()> {
    let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(line.as_bytes())?;
    f.flush()?;
    f.sync_data()
}

/// The records of a results file; a truncated last line (a killed run) is left out.
pub fn read(path: &Path) -> std::io::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
