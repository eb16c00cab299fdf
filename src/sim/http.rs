//! What the simulator's handlers share: the options, the channel to the engine's driver, the
//! metrics snapshot, request keys; and vLLM-shaped JSON and error responses.

use super::api;
use super::driver::{Msg, Snapshot};
use super::options::Options;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What every handler of one simulator shares.
pub(super) struct Shared {
    pub opts: Options,
    pub tx: mpsc::UnboundedSender<Msg>,
    pub metrics: Arc<Mutex<Snapshot>>,
    pub next_key: AtomicU64,
    /// When the API server's one tokenizer is next free.
    pub tokenizer: Mutex<tokio::time::Instant>,
    /// The queue into the engine: requests enter it in arrival order.
    pub entry: super::entry::EntryQueue,
    /// Images admitted and refused (`benchspec_sim:image…` in `/metrics`).
    pub images: super::images::ImageCounts,
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn error(
    status: StatusCode,
    kind: &str,
    message: &str,
    param: Option<&str>,
) -> Response {
    json_response(
        status,
        &api::error_body(kind, message, status.as_u16(), param),
    )
}

/// Seconds since the epoch.
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
