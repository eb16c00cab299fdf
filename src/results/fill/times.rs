//! One open-loop request's times as the driver measured them ([`Done`]) and a cell's
//! requests once every one has ended ([`Finished`]): the plain data the load and replay
//! records are filled from ([`super::open_loop`]).

use crate::client::Failure;
use tokio::time::Instant;

/// What one request of an open-loop cell saw.
#[derive(Debug, Clone)]
pub struct Done {
    /// Its scheduled arrival.
    pub due: Instant,
    /// When a `max_concurrency` slot was free (`due` when uncapped, or later).
    pub admitted: Instant,
    /// Just before the request was written.
    pub sent: Instant,
    /// Its first token-bearing chunk.
    pub first: Option<Instant>,
    /// Its last token-bearing chunk.
    pub last: Option<Instant>,
    /// When it ended (finished, failed or cut).
    pub end: Instant,
    /// Output tokens: the server's count, else one per chunk.
    pub tokens: u64,
    /// Whether every chunk carried the server's usage.
    pub all_usage: bool,
    /// Gaps between chunks, µs, each divided by the tokens of the later chunk.
    pub gaps: Vec<u32>,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
    /// `usage.prompt_tokens` as the server counted it.
    pub usage_prompt: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, where the server gives it.
    pub usage_cached: Option<u64>,
    /// The exact prompt length sent.
    pub prompt_target: u64,
    /// The server it went to (its place in the client's list).
    pub endpoint: usize,
    /// The LoRA adapter it went to (its place in the mix).
    pub adapter: Option<usize>,
}

/// The requests of a cell once every one has ended.
#[derive(Debug)]
pub struct Finished {
    /// Every request, in the order they ended.
    pub done: Vec<Done>,
    /// Most requests in flight at once.
    pub peak: u32,
    /// When the first arrival was due.
    pub start: Instant,
}
