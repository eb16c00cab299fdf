//! JSON-lines files of a run directory: whole lines appended and made durable, a torn last
//! line (a run killed while writing it) repaired, and reading that refuses a damaged line
//! anywhere but at the end.

use super::{Result, RunDirError};
use crate::results::Record;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Append `items` as one line each to `path` in one write, flushed and synced.
pub(super) fn append<T: Serialize>(path: &Path, items: &[T]) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let err = |source| RunDirError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut text = String::new();
    for item in items {
        let line = serde_json::to_string(item).map_err(|e| err(std::io::Error::other(e)))?;
        text.push_str(&line);
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.flush().map_err(err)?;
    f.sync_data().map_err(err)
}

/// Replace `path` with `items`, one line each, whole: written beside it, synced, then renamed
/// over it, so that a run killed meanwhile leaves the old file or the new one.
pub(super) fn rewrite<T: Serialize>(path: &Path, items: &[T]) -> Result<()> {
    let err = |source| RunDirError::Write {
        path: path.to_path_buf(),
        source,
    };
    let staging = path.with_extension("jsonl.rewrite");
    std::fs::write(&staging, b"").map_err(err)?;
    append(&staging, items)?;
    std::fs::rename(&staging, path).map_err(err)
}

/// Cut a last line that has no newline off `path`; returns the bytes removed.
pub(super) fn repair(path: &Path) -> Result<u64> {
    let err = |source| RunDirError::Write {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    };
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let cut = (bytes.len() - keep) as u64;
    if cut > 0 {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(err)?;
        f.set_len(keep as u64).map_err(err)?;
        f.sync_data().map_err(err)?;
    }
    Ok(cut)
}

/// The records of a results file (none when it does not exist). A last line without its
/// newline is a record being written when the run was killed: it is left out. Any other
/// line that is not a record is an error naming the file and the line.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    read_lines(path)
}

/// The lines of a JSON-lines file of `T` (none when it does not exist), as
/// [`read_records`] reads records.
pub(super) fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RunDirError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    parse(path, &text)
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<Vec<T>> {
    let torn = !text.is_empty() && !text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(r) => records.push(r),
            Err(_) if torn && i + 1 == lines.len() => {}
            Err(e) => {
                return Err(RunDirError::Damaged {
                    path: path.to_path_buf(),
                    line: Some(i + 1),
                    message: format!(
                        "not a result record ({e}); only a last line cut short is repaired, so fix or remove this line"
                    ),
                });
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::parse;
    use std::path::Path;

    const LINE: &str = r#"{"schema":"benchspec.result.v1","cell":"decode/8K/c1","phase":"decode","context":8192,"concurrency":1,"status":"valid","reasons":[],"started_at":"2026-12-02T10:00:00Z","measured_s":30.0,"prompt_tokens":8192,"output_tokens":1,"token_source":"usage","total_tok_s":1.0,"per_request_tok_s":1.0,"avg_active":1.0,"requests_started":1,"completed":1,"errors":0,"error_kinds":{},"ttft_ms":null,"tbt_ms":null,"prefill_tok_s":null,"labels":{},"server_prompt_tokens":null}"#;

    #[test]
    fn only_a_torn_last_line_is_forgiven() {
        let p = Path::new("r.jsonl");
        let cases: [(String, Result<usize, Option<usize>>); 5] = [
            (String::new(), Ok(0)),
            (format!("{LINE}\n{LINE}\n"), Ok(2)),
            (format!("{LINE}\n{}", &LINE[..40]), Ok(1)),
            (format!("{}\n{LINE}\n", &LINE[..40]), Err(Some(1))),
            (format!("{LINE}\n{}\n", &LINE[..40]), Err(Some(2))),
        ];
        for (text, want) in cases {
            let got = parse::<crate::results::Record>(p, &text)
                .map(|r| r.len())
                .map_err(|e| match e {
                    super::RunDirError::Damaged { line, .. } => line,
                    _ => None,
                });
            assert_eq!(got, want, "{text:?}");
        }
    }
}
