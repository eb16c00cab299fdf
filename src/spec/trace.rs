//! Trace replay (`phases.replay`): a Mooncake-format JSONL trace beside the spec — one
//! request a line, `{"timestamp": ms, "input_length": N, "output_length": N, "hash_ids":
//! [...]}` — read and checked whole at validate time, so a missing file or a bad line is a
//! located error before anything runs.

use super::diag::Problem;
use super::units::Tokens;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// The replay phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// Whether the trace is replayed.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The trace: Mooncake JSONL (relative to the spec).
    #[schemars(length(min = 1))]
    pub trace: String,
    /// Tokens per `hash_ids` block: equal ids are equal blocks of this many tokens.
    #[serde(default = "default_block")]
    pub block_tokens: Tokens,
    /// Timestamps are divided by this (2: twice as fast).
    #[serde(default = "one")]
    pub speedup: f64,
    /// Replay only the first this many requests (by time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_requests: Option<u32>,
}

fn yes() -> bool {
    true
}
fn one() -> f64 {
    1.0
}
fn default_block() -> Tokens {
    Tokens(512)
}

/// Traces larger than this are refused: they are read whole before the cell starts.
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

/// What is wrong with a trace, naming the file (and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The file cannot be read.
    #[error("cannot read the trace `{file}`: {why}")]
    Read {
        /// The file as the spec names it.
        file: String,
        /// The I/O error.
        why: String,
    },
    /// The file is too large to read whole.
    #[error("the trace `{file}` is {bytes} bytes; at most {MAX_TRACE_BYTES} are read")]
    TooLarge {
        /// The file as the spec names it.
        file: String,
        /// Its size.
        bytes: u64,
    },
    /// A line is not a request.
    #[error("`{file}` line {line}: {why}")]
    Line {
        /// The file as the spec names it.
        file: String,
        /// From 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No line holds a request.
    #[error("the trace `{file}` has no requests")]
    Empty {
        /// The file as the spec names it.
        file: String,
    },
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TraceEntry {
    /// When it arrives, milliseconds from the trace's start.
    pub timestamp: f64,
    /// Its prompt's length in tokens, as the engine counts them.
    pub input_length: u64,
    /// Tokens to generate.
    pub output_length: u64,
    /// One id per block of the prompt: equal ids, equal token blocks.
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// The requests of the trace at `path` in time order, or what is wrong with it.
pub fn read(path: &Path, shown: &str) -> Result<Vec<TraceEntry>, TraceError> {
    let unreadable = |e: std::io::Error| TraceError::Read {
        file: shown.to_string(),
        why: e.to_string(),
    };
    let bytes = std::fs::metadata(path).map_err(unreadable)?.len();
    if bytes > MAX_TRACE_BYTES {
        return Err(TraceError::TooLarge {
            file: shown.to_string(),
            bytes,
        });
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    parse(&text, shown)
}

/// The requests of a trace's text, in time order (a stable sort: ties keep the file's order).
pub fn parse(text: &str, shown: &str) -> Result<Vec<TraceEntry>, TraceError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |why: String| TraceError::Line {
            file: shown.to_string(),
            line: i + 1,
            why,
        };
        let e: TraceEntry = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "not a trace request ({e}); a line is {{\"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}}"
            ))
        })?;
        if !e.timestamp.is_finite() || e.timestamp < 0.0 {
            return Err(at("`timestamp` must be milliseconds, 0 or more".into()));
        }
        if e.input_length == 0 || e.output_length == 0 {
            return Err(at(
                "`input_length` and `output_length` must be above 0".into()
            ));
        }
        out.push(e);
    }
    if out.is_empty() {
        return Err(TraceError::Empty {
            file: shown.to_string(),
        });
    }
    out.sort_by(|a, b| a.timestamp.total_cmp(&b.timestamp));
    Ok(out)
}

/// The problems of the spec's trace, if it names one.
pub fn check(json: &Value, resolve: &super::files::Resolve) -> Vec<Problem> {
    let ptr = "/phases/replay/trace";
    let Some(name) = json.pointer(ptr).and_then(Value::as_str) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Err(why) = read(&resolve(super::files::FileRef::Trace, name), name) {
        out.push(Problem::error(ptr, why.to_string()));
    }
    if let Some(s) = json
        .pointer("/phases/replay/speedup")
        .and_then(Value::as_f64)
        && !(s.is_finite() && s > 0.0)
    {
        out.push(Problem::error(
            "/phases/replay/speedup",
            format!("a speedup must be above 0 (2 replays twice as fast), not {s}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_checked_and_sorted_by_time() {
        let ok = "{\"timestamp\": 30, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [1, 2]}\n\n{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n";
        let got = parse(ok, "t.jsonl").unwrap_or_default();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].timestamp, 0.0);
        assert_eq!(got[1].hash_ids, vec![1, 2]);
        let cases = [
            ("nope\n", "line 1: not a trace request"),
            (
                "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 2}\n",
                "line 1: `input_length` and `output_length` must be above 0",
            ),
            (
                "{\"timestamp\": -5, \"input_length\": 3, \"output_length\": 2}\n",
                "`timestamp` must be milliseconds",
            ),
            ("\n", "has no requests"),
        ];
        for (text, want) in cases {
            let e = parse(text, "t.jsonl")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
