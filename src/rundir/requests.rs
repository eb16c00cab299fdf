//! `requests.jsonl` (`--save-requests`): one line per request of a measured window, typed.
//! Closed-loop (decode) windows, open-loop (load, capacity probe, replay) cells and session
//! turns keep different times, so a line is one of three shapes, each stamped with the cell,
//! the repeat and the run attempt. Times are seconds from the window's start (decode,
//! sessions) or the first arrival (open loop); the failure is its `error_kinds` key. `schemas/requests-v1.schema.json` is the
//! schema (`benchspec schema --requests`).

use crate::client::Failure;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of `requests.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "benchspec requests.jsonl line v1")]
pub struct RequestLine {
    /// The cell's id.
    pub cell: String,
    /// Which repeat of the cell, from 1.
    pub repeat: u32,
    /// The run attempt it was measured in: 1, then one more for each `--resume`.
    pub attempt: u32,
    /// The request's times and counts.
    #[serde(flatten)]
    pub request: Request,
}

/// A request of a closed-loop window or of an open-loop cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Request {
    /// A request of a decode window.
    Window(WindowRequest),
    /// A turn of a session cell.
    Turn(TurnRequest),
    /// A request of an open-loop cell.
    Open(OpenRequest),
}

/// A request of a decode window; times in seconds from the window's start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WindowRequest {
    /// The slot (stream) that sent it, from 0.
    pub slot: usize,
    /// Its number within the slot, from 0.
    pub request: u64,
    /// Just before it was written.
    pub sent_s: f64,
    /// Its first token-bearing chunk.
    pub first_token_s: Option<f64>,
    /// Its last token-bearing chunk.
    pub last_token_s: Option<f64>,
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Its tokens inside the window.
    pub window_tokens: u64,
    /// Token-bearing chunks received (null when cancelled at the close).
    pub chunks: Option<u64>,
    /// The server's `usage.completion_tokens`.
    pub usage_completion_tokens: Option<u64>,
    /// The server's `usage.prompt_tokens`.
    pub usage_prompt_tokens: Option<u64>,
    /// The server's `usage.prompt_tokens_details.cached_tokens`: the prompt's tokens it
    /// found in its prefix cache (where it says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_tokens: Option<u64>,
    /// Its failure, as counted in `error_kinds`.
    #[schemars(with = "Option<String>")]
    pub error: Option<Failure>,
    /// Still in flight when the window closed (cancelled then).
    pub cancelled_at_close: bool,
}

/// A request of an open-loop cell; times in seconds from the cell's first arrival.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenRequest {
    /// Its scheduled arrival.
    pub due_s: f64,
    /// When a `max_concurrency` slot let it go (its arrival when uncapped).
    pub admitted_s: f64,
    /// Just before it was written.
    pub sent_s: f64,
    /// Its first token-bearing chunk.
    pub first_token_s: Option<f64>,
    /// Its last token-bearing chunk.
    pub last_token_s: Option<f64>,
    /// When it ended: finished, failed or cut at the cell's end.
    pub end_s: f64,
    /// The prompt's exact length as sent.
    pub prompt_tokens: u64,
    /// Output tokens: the server's count, else one per chunk.
    pub output_tokens: u64,
    /// The server's `usage.prompt_tokens`.
    pub usage_prompt_tokens: Option<u64>,
    /// The server's `usage.prompt_tokens_details.cached_tokens`: the prompt's tokens it
    /// found in its prefix cache (where it says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_tokens: Option<u64>,
    /// Its failure, as counted in `error_kinds`.
    #[schemars(with = "Option<String>")]
    pub error: Option<Failure>,
    /// The gaps between its token-bearing chunks, µs per token (what ITL is made of), so
    /// that the shards of a split cell merge into the same distributions one client gives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub itl_us: Vec<u32>,
    /// The server it went to, by its place in the run's list (with several servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<usize>,
    /// The LoRA adapter it went to, by its place in the mix (`workload.adapters`, the
    /// order of the record's `by_adapter`), so that split shards merge their `by_adapter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<usize>,
}

/// A turn of a session cell that ended inside its window; times in seconds from the
/// window's start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnRequest {
    /// The session (conversation) it belongs to: a user's number × 2³² + its session count,
    /// or the arrival's number in an open loop.
    pub session: u64,
    /// Its turn in the session, from 1.
    pub turn: u32,
    /// Just before it was written.
    pub sent_s: f64,
    /// Its first token-bearing chunk.
    pub first_token_s: Option<f64>,
    /// Its last token-bearing chunk.
    pub last_token_s: Option<f64>,
    /// When it ended (finished or failed).
    pub end_s: f64,
    /// The prompt's length: the server's count, else the client's.
    pub prompt_tokens: u64,
    /// Output tokens: the server's count, else one per chunk.
    pub output_tokens: u64,
    /// The server's `usage.prompt_tokens`.
    pub usage_prompt_tokens: Option<u64>,
    /// The server's `usage.prompt_tokens_details.cached_tokens` (where it says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_tokens: Option<u64>,
    /// Its failure, as counted in `error_kinds`.
    #[schemars(with = "Option<String>")]
    pub error: Option<Failure>,
    /// The gaps between its token-bearing chunks, µs per token.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub itl_us: Vec<u32>,
    /// The server it went to, by its place in the run's list (with several servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<usize>,
}

impl RequestLine {
    /// A line of `cell`, numbered when its repeat is written.
    pub fn unnumbered(cell: &str, request: Request) -> RequestLine {
        RequestLine {
            cell: cell.to_string(),
            repeat: 0,
            attempt: 0,
            request,
        }
    }
}

/// `schemas/requests-v1.schema.json`.
pub fn request_line_schema_text() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<RequestLine>().to_value();
    // `{:#}` is `to_string_pretty`, and cannot fail.
    format!("{schema:#}\n")
}
