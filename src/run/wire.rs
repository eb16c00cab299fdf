//! The body of a streamed response as the client reads it: on the lean HTTP/1.1 path
//! (`h1`, plain `http://` engines) or through reqwest (https), the same two steps either
//! way — wait for bytes, then hand what was read to the SSE parser.

use super::h1;
use super::outcome::Failure;
use bytes::Bytes;

/// A response body being read: on the lean HTTP/1.1 path, or through reqwest (with the
/// bytes of its last read).
pub(super) enum Wire<'a> {
    Lean(h1::Response, &'a h1::Pool),
    Reqwest(reqwest::Response, Option<Bytes>),
}

impl Wire<'_> {
    pub(super) fn status(&self) -> u16 {
        match self {
            Wire::Lean(r, _) => r.status,
            Wire::Reqwest(r, _) => r.status().as_u16(),
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
        }
    }

    /// Hand the body bytes read so far to `on_body`.
    pub(super) fn drain(&mut self, on_body: &mut impl FnMut(&[u8])) -> Result<(), Failure> {
        match self {
            Wire::Lean(r, _) => r.drain(on_body).map_err(|_| Failure::Disconnect),
            Wire::Reqwest(_, last) => {
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
