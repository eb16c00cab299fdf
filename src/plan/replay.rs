//! The trace replay cell of the plan (docs/spec.md): `replay/<trace file stem>`, the trace's
//! requests sent at their timestamps ÷ `speedup`, prompts built so that equal `hash_ids` are
//! equal token blocks.

use super::{Cell, Measure};
use crate::spec::Spec;
use serde::{Deserialize, Serialize};

/// How a replay cell sends its trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReplayLoad {
    /// Tokens per `hash_ids` block.
    pub block_tokens: u64,
    /// Timestamps are divided by this.
    pub speedup: f64,
    /// Only the first this many requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u32>,
    /// The trace's length at `speedup`, seconds (after `max_requests`), when the plan was
    /// made with the trace at hand (for the estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_s: Option<f64>,
}

impl super::Plan {
    /// Replay cells timed by their trace (`entries`, in time order): each cell's span at
    /// its speed, and its estimate with it.
    pub fn with_trace(&mut self, entries: &[crate::spec::trace::TraceEntry]) {
        let mut total = 0.0;
        for c in &mut self.cells {
            if let Measure::Replay(r) = &mut c.measure {
                let n = r
                    .max_requests
                    .map_or(entries.len(), |m| (m as usize).min(entries.len()));
                let first = entries.first().map_or(0.0, |e| e.timestamp);
                let last = entries
                    .get(n.saturating_sub(1))
                    .map_or(first, |e| e.timestamp);
                let span = (last - first) / 1000.0 / r.speedup.max(f64::MIN_POSITIVE);
                r.span_s = Some(span);
                if c.skip.is_none() {
                    c.estimate_s = span + super::estimate::REPLAY_DRAIN_S;
                }
            }
            total += c.estimate_s;
        }
        self.estimate_s = total;
    }
}

/// The id of the replay cell of the trace `file`.
pub fn replay_id(file: &str) -> String {
    let stem = std::path::Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
    format!("replay/{stem}")
}

/// The replay cell, when `phases.replay` names a trace.
pub(super) fn replay_cell(spec: &Spec) -> Option<Cell> {
    let r = spec.phases.replay.as_ref()?;
    Some(Cell {
        id: replay_id(&r.trace),
        variant: None,
        context: 0,
        concurrency: 0,
        prompt_tokens: 0,
        clamped: false,
        measure: Measure::Replay(ReplayLoad {
            block_tokens: r.block_tokens.0.max(1),
            speedup: r.speedup,
            max_requests: r.max_requests,
            span_s: None,
        }),
        skip: (!r.enabled).then(|| "`phases.replay.enabled` is false".to_string()),
        estimate_s: 0.0,
        repeats: 1,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_id_is_the_traces_stem() {
        assert_eq!(super::replay_id("traces/day-1.jsonl"), "replay/day-1");
        assert_eq!(super::replay_id("t"), "replay/t");
    }
}
