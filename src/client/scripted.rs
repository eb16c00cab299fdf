//! A scripted transport: each request is answered by a function of what was asked and how
//! many requests are in flight, on tokio's clock (`tokio::time::sleep`), so a test under
//! `#[tokio::test(start_paused = true)]` measures exact, repeatable times in milliseconds
//! of wall time. The measuring code above the client cannot tell it from a server.

use super::generate::{Generate, Pending};
use super::{Chunk, Failure, Outcome, Prepared};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// What a scripted request asked for, as the script sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// The request's number, from 0, in the order they were sent.
    pub n: u64,
    /// `max_tokens` (or `max_completion_tokens`).
    pub max_tokens: u64,
    /// The prompt's tokens, counted as [`Scripted`] counts them (words).
    pub prompt_tokens: u64,
    /// Requests in flight, this one included.
    pub in_flight: usize,
}

/// How a scripted request is answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// From the send to the first token.
    pub ttft: Duration,
    /// Between tokens after the first.
    pub tbt: Duration,
    /// Tokens streamed, one a chunk.
    pub tokens: u64,
    /// A failure the request ends with after its tokens, if any.
    pub failure: Option<Failure>,
    /// The server's words for that failure (an error body's message).
    pub message: Option<&'static str>,
}

type Script = dyn Fn(Asked) -> Reply + Send + Sync;

/// A transport whose answers a function gives.
#[derive(Clone)]
pub struct Scripted {
    script: Arc<Script>,
    sent: Arc<AtomicU64>,
    in_flight: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scripted({} sent)", self.sent())
    }
}

impl Scripted {
    /// A transport answering every request with `script`.
    pub fn new(script: impl Fn(Asked) -> Reply + Send + Sync + 'static) -> Scripted {
        Scripted {
            script: Arc::new(script),
            sent: Arc::default(),
            in_flight: Arc::default(),
        }
    }

    /// Requests sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    async fn answer(&self, req: &Prepared, on_chunk: &mut (dyn FnMut(Chunk) + Send)) -> Outcome {
        let in_flight = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        // A request cancelled at a window's close is dropped mid-stream: it leaves then too.
        let _leaves = Leaves(&self.in_flight);
        let asked = Asked {
            n: self.sent.fetch_add(1, Ordering::Relaxed),
            max_tokens: req.max_tokens,
            prompt_tokens: words(&req.prompt),
            in_flight,
        };
        let reply = (self.script)(asked);
        let sent = Instant::now();
        let mut out = Outcome::started(sent);
        out.usage_prompt = Some(asked.prompt_tokens);
        let mut next = sent + reply.ttft;
        for _ in 0..reply.tokens {
            tokio::time::sleep_until(next).await;
            out.chunks += 1;
            out.counted += 1;
            on_chunk(Chunk {
                sent,
                at: Instant::now(),
                tokens: 1,
                from_usage: true,
            });
            next += reply.tbt;
        }
        out.usage_completion = Some(out.counted);
        out.failure = reply.failure;
        out.message = reply.message.map(str::to_string);
        out
    }
}

/// Counts a request out of flight when it ends or is dropped.
struct Leaves<'a>(&'a AtomicUsize);

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whitespace-separated words of a JSON-escaped prompt: the scripted token count.
fn words(prompt: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(prompt);
    text.split_whitespace().count() as u64
}

impl Generate for Scripted {
    fn generate<'a>(
        &'a self,
        req: &'a Prepared,
        on_chunk: &'a mut (dyn FnMut(Chunk) + Send),
    ) -> Pending<'a> {
        Box::pin(self.answer(req, on_chunk))
    }

    fn count_tokens(&self, text: &str) -> Option<u64> {
        Some(text.split_whitespace().count() as u64)
    }
}
