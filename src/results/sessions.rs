//! The fields of a session cell's record — per-turn latencies (`by_turn`) and the sessions'
//! own counts (`sessions`) — and of a replay cell's (`trace`).

use super::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One turn index of a session cell: every session's turn `turn` inside the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStats {
    /// The turn, from 1 (the first prompt).
    pub turn: u32,
    /// Requests of this turn that ended inside the window.
    pub requests: u64,
    /// Their mean prompt length: the server's count, else the client's.
    pub input_tokens_mean: Option<f64>,
    /// Their mean prompt tokens the server found in its prefix cache, where it says
    /// (`usage.prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens_mean: Option<f64>,
    /// Time to first token, ms.
    pub ttft_ms: Option<Summary>,
    /// Time per output token after the first, ms.
    pub tpot_ms: Option<Summary>,
    /// With an `slo`: the fraction of this turn's requests that met every objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_fraction: Option<f64>,
}

/// The sessions of a session cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCounts {
    /// Sessions begun inside the window.
    pub started: u64,
    /// Sessions that ran all their turns inside the window.
    pub completed: u64,
    /// Turns per completed session, on average.
    pub turns_mean: Option<f64>,
    /// Sessions ended early because their next turn would not fit `max_model_len`.
    #[serde(default)]
    pub ended_at_max_len: u64,
}

/// The trace a replay cell sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceInfo {
    /// The trace's file name as the spec gives it.
    pub file: String,
    /// Requests sent.
    pub requests: u64,
    /// Timestamps were divided by this.
    pub speedup: f64,
    /// The trace's length at that speed, seconds.
    pub span_s: f64,
    /// Requests due in each second of the trace.
    pub offered_per_s: Vec<f64>,
    /// Requests that finished in each second from the first send.
    pub achieved_per_s: Vec<f64>,
    /// On `--resume` after a stop: the trace's requests sent before it, not in this record
    /// (the replay goes on from the next one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_after: Option<u64>,
    /// The shortest and longest `input_length` of the requests replayed, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_length: Option<[u64; 2]>,
    /// The shortest and longest `output_length` of the requests replayed, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_length: Option<[u64; 2]>,
}
