//! The body of a streamed response as the client reads it: on the lean HTTP/1.1 path
//! (`h1`, plain `http://` engines), through reqwest (https) or from a server in this process
//! (the simulator on tokio's clock), the same two steps any
//! way — wait for bytes, then hand what was read to the SSE parser ([`Events`]), which
//! passes each token-bearing chunk on with its arrival time.

use super::chunk::ChunkState;
use super::h1;
use super::outcome::{Chunk, Failure, Outcome};
use super::sse::SseParser;
use bytes::Bytes;
use tokio::time::Instant;

/// A response body being read: on the lean HTTP/1.1 path, or through reqwest (with the
/// bytes of its last read).
pub(super) enum Wire<'a> {
    Lean(h1::Response, &'a h1::Pool),
    Reqwest(reqwest::Response, Option<Bytes>),
    /// A server in this process ([`Exchange`](super::exchange::Exchange)).
    InProcess(super::exchange::Reading),
}

impl Wire<'_> {
    pub(super) fn status(&self) -> u16 {
        match self {
            Wire::Lean(r, _) => r.status,
            Wire::Reqwest(r, _) => r.status().as_u16(),
            Wire::InProcess(r) => r.status,
        }
    }

    /// The wait a 429's `retry-after-ms` or `retry-after` asks for.
    pub(super) fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Wire::Lean(r, _) => r.retry_after,
            Wire::Reqwest(r, _) => {
                let h = r.headers();
                ["retry-after-ms", "retry-after"].iter().find_map(|name| {
                    let v = h.get(*name)?.to_str().ok()?;
                    h1::retry_after_of(name, v)
                })
            }
            Wire::InProcess(r) => r.retry_after,
        }
    }

    /// Wait for body bytes; `false` at the end of the body.
    pub(super) async fn read(&mut self) -> Result<bool, Failure> {
        match self {
            Wire::Lean(r, _) if r.ended() => Ok(false),
            Wire::Lean(r, _) => r.read().await.map_err(|_| Failure::Disconnect),
            Wire::Reqwest(r, last) => match r.chunk().await {
                Err(_) => Err(Failure::Disconnect),
                Ok(None) => Ok(false),
                Ok(Some(b)) => {
                    *last = Some(b);
                    Ok(true)
                }
            },
            Wire::InProcess(r) => r.read().await.map_err(|()| Failure::Disconnect),
        }
    }

    /// Hand the body bytes read so far to `on_body`.
    pub(super) fn drain(&mut self, on_body: &mut impl FnMut(&[u8])) -> Result<(), Failure> {
        match self {
            Wire::Lean(r, _) => r.drain(on_body).map_err(|_| Failure::Disconnect),
            Wire::Reqwest(_, last) | Wire::InProcess(super::exchange::Reading { last, .. }) => {
                if let Some(b) = last.take() {
                    on_body(&b);
                }
                Ok(())
            }
        }
    }

    /// The body was read to its end: keep the connection for the next request.
    pub(super) fn finish(self) {
        if let Wire::Lean(r, pool) = self {
            r.finish(pool);
        }
    }
}

/// The events of one response body: SSE parsed, chunks read, whether `[DONE]` came. Public
/// so that another HTTP client (the `client` bench's hyper arm) reads bodies with the same
/// parser as this one.
#[derive(Default)]
pub struct Events {
    parser: SseParser,
    state: ChunkState,
    done: bool,
}

/// What went wrong while feeding: an SSE error wins over a chunk's.
#[derive(Default)]
struct Faults {
    chunk: Option<Failure>,
    sse: bool,
}

impl Events {
    /// Events of a response whose generated text is kept (`keep`) or skipped.
    pub fn keeping_text(keep: bool) -> Events {
        let mut e = Events::default();
        e.state.keep_text = keep;
        e
    }

    /// Parse `bytes` of the body, arrived `at`; every token-bearing chunk to `on_chunk`.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        at: Instant,
        out: &mut Outcome,
        on_chunk: &mut impl FnMut(Chunk),
    ) -> Result<(), Failure> {
        let mut faults = Faults::default();
        self.feed_part(bytes, at, out, on_chunk, &mut faults);
        match faults {
            Faults { sse: true, .. } => Err(Failure::Sse),
            Faults { chunk, .. } => chunk.map_or(Ok(()), Err),
        }
    }

    fn feed_part(
        &mut self,
        bytes: &[u8],
        at: Instant,
        out: &mut Outcome,
        on_chunk: &mut impl FnMut(Chunk),
        faults: &mut Faults,
    ) {
        let Events {
            parser,
            state,
            done,
        } = self;
        let bad = &mut faults.chunk;
        let fed = parser.feed(bytes, |data| {
            if bad.is_none() {
                match state.event(data, at, out) {
                    Ok(Some(c)) => on_chunk(c),
                    Ok(None) => {}
                    Err(f) => *bad = Some(f),
                }
            }
            *done |= data == "[DONE]";
        });
        faults.sse |= fed.is_err();
    }

    /// Parse what the last read of `wire` brought, arrived `at`; every token-bearing chunk
    /// to `on_chunk`.
    pub(super) fn take(
        &mut self,
        wire: &mut Wire<'_>,
        at: Instant,
        out: &mut Outcome,
        on_chunk: &mut impl FnMut(Chunk),
    ) -> Result<(), Failure> {
        let mut faults = Faults::default();
        let drained =
            wire.drain(&mut |bytes| self.feed_part(bytes, at, out, on_chunk, &mut faults));
        if faults.sse {
            return Err(Failure::Sse);
        }
        faults.chunk.or(drained.err()).map_or(Ok(()), Err)
    }

    /// The stream ended: whether the response was whole (`[DONE]` or a finish reason).
    pub fn complete(&mut self) -> bool {
        let done = &mut self.done;
        let _ = self.parser.finish(|data| *done |= data == "[DONE]");
        self.done || self.state.finished
    }
}
