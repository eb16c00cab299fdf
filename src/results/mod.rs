//! The results stage: the record of each cell (contract §6), its statistics, and the JSONL
//! sink that appends each record whole — write, flush, fsync — as its cell ends, so a crash
//! loses nothing already measured.

pub mod merge;
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

/// Cut a last line that has no newline (a run killed while writing it) off `path`; returns
/// the bytes removed. Whole records end in a newline, as [`append`] writes them.
pub fn repair(path: &Path) -> std::io::Result<u64> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let cut = (bytes.len() - keep) as u64;
    if cut > 0 {
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.set_len(keep as u64)?;
        f.sync_data()?;
    }
    Ok(cut)
}

/// The records of a results file; a truncated last line (a killed run) is left out.
pub fn read(path: &Path) -> std::io::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
