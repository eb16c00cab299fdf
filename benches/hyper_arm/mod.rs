//! The `client` bench's other arm: the generation request over hyper's low-level HTTP/1.1
//! client (`hyper::client::conn::http1`) in place of benchspec's own `h1`, plugged in through
//! the client's `Generate` seam so that everything else is the same. The `Connection`
//! future is polled in the request's own task together with the body (no `tokio::spawn` of
//! the connection), the body is read with benchspec's own SSE and chunk code
//! (`client::Events`), and idle connections are kept for the next request, their
//! `Connection` futures with them.

use benchspec::client::{Chunk, Events, Failure, Generate, Outcome, Prepared};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{Connection, SendRequest, handshake};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

type Conn = Pin<Box<Connection<TokioIo<TcpStream>, Full<Bytes>>>>;

/// One keep-alive connection: the request sender and the connection future that drives it.
struct Slot {
    tx: SendRequest<Full<Bytes>>,
    conn: Conn,
}

/// Generation requests over hyper's HTTP/1.1 connections to one `host:port`.
pub struct HyperArm {
    host: String,
    stall: Duration,
    idle: Mutex<Vec<Slot>>,
}

impl std::fmt::Debug for HyperArm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperArm")
            .field("host", &self.host)
            .finish()
    }
}

impl HyperArm {
    /// Requests to `base` (`http://host:port`), failing after `stall` without a byte.
    pub fn new(base: &str, stall: Duration) -> HyperArm {
        HyperArm {
            host: base
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .into(),
            stall,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection still open, or a new one.
    async fn take(&self) -> Option<Slot> {
        while let Some(mut s) = self.idle.lock().ok().and_then(|mut v| v.pop()) {
            let ready = tokio::select! {
                biased;
                r = s.tx.ready() => r.is_ok(),
                _ = &mut s.conn => false,
            };
            if ready {
                return Some(s);
            }
        }
        let io = TcpStream::connect(&self.host).await.ok()?;
        let _ = io.set_nodelay(true);
        let (tx, conn) = handshake(TokioIo::new(io)).await.ok()?;
        Some(Slot {
            tx,
            conn: Box::pin(conn),
        })
    }

    async fn run(&self, req: &Prepared, on_chunk: &mut (dyn FnMut(Chunk) + Send)) -> Outcome {
        let mut out = Outcome::started(Instant::now());
        let Some(mut slot) = self.take().await else {
            return fail(out, Failure::Connect);
        };
        let request = hyper::Request::post(req.path())
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(Full::new(req.whole()));
        let Ok(request) = request else {
            return fail(out, Failure::Connect);
        };
        out.sent = Instant::now();
        let sent = slot.tx.send_request(request);
        let answer = tokio::select! {
            biased;
            _ = &mut slot.conn => return fail(out, Failure::Connect),
            r = sent => r,
        };
        let body = match answer {
            Ok(r) if r.status().is_success() => r.into_body(),
            Ok(r) => return fail(out, Failure::Http(r.status().as_u16())),
            Err(_) => return fail(out, Failure::Connect),
        };
        match self.read_body(&mut slot, body, &mut out, on_chunk).await {
            Err(f) => return fail(out, f),
            Ok(true) => {
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push(slot);
                }
            }
            Ok(false) => {}
        }
        out
    }

    /// Read `body` to its end with benchspec's own parser, polling the connection beside
    /// it; whether the connection is still open for the next request.
    async fn read_body(
        &self,
        slot: &mut Slot,
        mut body: Incoming,
        out: &mut Outcome,
        on_chunk: &mut (dyn FnMut(Chunk) + Send),
    ) -> Result<bool, Failure> {
        let mut events = Events::default();
        let mut on_chunk = |c| on_chunk(c);
        let (mut at, mut open) = (Instant::now(), true);
        let stall = tokio::time::sleep_until(at + self.stall);
        tokio::pin!(stall);
        loop {
            let frame = tokio::select! {
                biased;
                _ = &mut slot.conn, if open => {
                    open = false;
                    continue;
                }
                f = body.frame() => f,
                () = &mut stall => {
                    if at.elapsed() >= self.stall {
                        return Err(Failure::Stall);
                    }
                    stall.as_mut().reset(at + self.stall);
                    continue;
                }
            };
            let data = match frame {
                None => break,
                Some(Err(_)) => return Err(Failure::Disconnect),
                Some(Ok(f)) => f.into_data(),
            };
            if let Ok(data) = data {
                at = Instant::now();
                events.feed(&data, at, out, &mut on_chunk)?;
            }
        }
        if !events.complete() {
            return Err(Failure::Disconnect);
        }
        Ok(open)
    }
}

impl Generate for HyperArm {
    fn generate<'a>(
        &'a self,
        req: &'a Prepared,
        on_chunk: &'a mut (dyn FnMut(Chunk) + Send),
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(self.run(req, on_chunk))
    }
}

fn fail(mut out: Outcome, f: Failure) -> Outcome {
    out.failure = Some(f);
    out
}
