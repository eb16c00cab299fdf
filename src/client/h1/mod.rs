//! A lean HTTP/1.1 client for the one request the measurement depends on: the streamed
//! generation request over plain `http://`. The connection is read on the task that sent
//! the request — no connection task, no body channel, no hand-off between tasks per chunk —
//! the response head is parsed with `httparse`, and a chunked body is de-framed in place in
//! the read buffer. Idle keep-alive connections wait in a small pool. Everything else (the
//! informational endpoints, https) goes through reqwest.

use bytes::{Buf, BytesMut};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4 * 1024;

/// Why an exchange failed, in the terms the client counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Nothing listens at the address.
    Refused,
    /// The connection could not be made, or failed before a response head.
    Connect,
    /// A reused connection closed before any response byte: send again on another.
    Stale,
    /// The response was not HTTP/1.x as expected.
    Malformed,
    /// The connection failed inside the body.
    Disconnect,
}

/// Where the engine listens: addresses to connect to, the `Host` header and a path prefix.
#[derive(Debug)]
pub struct Endpoint {
    addrs: Vec<SocketAddr>,
    host: String,
    prefix: String,
}

impl Endpoint {
    /// The endpoint of a plain `http://` base URL; `None` for anything else (https).
    pub fn parse(base: &str) -> Option<Endpoint> {
        let url = reqwest::Url::parse(base).ok()?;
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let host = url.host_str()?.to_string();
        let addrs = url.socket_addrs(|| Some(80)).ok()?;
        let host = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        };
        Some(Endpoint {
            addrs,
            host,
            prefix: url.path().trim_end_matches('/').to_string(),
        })
    }
}

/// Idle keep-alive connections to one endpoint.
#[derive(Debug)]
pub struct Pool {
    ep: Endpoint,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
}

/// One connection and the bytes read from it but not yet consumed.
#[derive(Debug)]
pub struct Conn {
    io: TcpStream,
    buf: BytesMut,
    /// Whether it served a request before (and so may have been closed by the server).
    pub reused: bool,
}

impl Pool {
    /// A pool keeping up to `max_idle` idle connections to `ep`.
    pub fn new(ep: Endpoint, max_idle: usize) -> Pool {
        Pool {
            ep,
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
        }
    }

    /// An idle connection the server has not closed, or a new one.
    pub async fn take(&self) -> Result<Conn, WireError> {
        while let Some(c) = self.idle.lock().ok().and_then(|mut v| v.pop()) {
            // An idle connection has nothing to read: end of stream (or bytes nobody asked
            // for) means the server is done with it.
            let mut probe = [0u8; 1];
            if matches!(c.io.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            {
                return Ok(c);
            }
        }
        let connect = TcpStream::connect(&self.ep.addrs[..]);
        let io = match tokio::time::timeout(Duration::from_secs(10), connect).await {
            Err(_) => return Err(WireError::Connect),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(WireError::Refused);
            }
            Ok(Err(_)) => return Err(WireError::Connect),
            Ok(Ok(io)) => io,
        };
        let _ = io.set_nodelay(true);
        Ok(Conn {
            io,
            buf: BytesMut::with_capacity(16 * 1024),
            reused: false,
        })
    }

    /// Keep a connection whose response ended cleanly for the next request.
    fn give_back(&self, mut conn: Conn) {
        conn.reused = true;
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.max_idle
        {
            idle.push(conn);
        }
    }

    /// The request head of a POST of `len` JSON bytes to `path`.
    pub fn post_head(&self, path: &str, len: usize, key: Option<&str>) -> Vec<u8> {
        let mut head = format!(
            "POST {}{path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: text/event-stream\r\nContent-Length: {len}\r\n",
            self.ep.prefix, self.ep.host
        );
        if let Some(key) = key {
            head.push_str("Authorization: Bearer ");
            head.push_str(key);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `Transfer-Encoding: chunked`, in this state.
    Chunked(Chunked),
    /// This many bytes still to come (`Content-Length`).
    Length(u64),
    /// Until the server closes the connection.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// A response being read: its status and the body still to come.
#[derive(Debug)]
pub struct Response {
    conn: Conn,
    /// The HTTP status.
    pub status: u16,
    /// `retry-after-ms` or `retry-after` (seconds), when the server sent one.
    pub retry_after: Option<std::time::Duration>,
    framing: Framing,
    keep_alive: bool,
}

impl Conn {
    /// Write the request and read the response head.
    pub async fn exchange(
        mut self,
        head: &[u8],
        body: [&bytes::Bytes; 4],
    ) -> Result<Response, WireError> {
        let lost = if self.reused {
            WireError::Stale
        } else {
            WireError::Connect
        };
        let [a, b, c, d] = body.map(|p| &p[..]);
        let mut out = Buf::chain(head, a).chain(b).chain(c).chain(d);
        if self.io.write_all_buf(&mut out).await.is_err() {
            return Err(lost);
        }
        loop {
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) if self.buf.is_empty() => return Err(lost),
                Ok(0) | Err(_) => return Err(WireError::Connect),
                Ok(_) => {}
            }
            if let Some(h) = parse_head(&mut self.buf)? {
                return Ok(Response {
                    conn: self,
                    status: h.status,
                    retry_after: h.retry_after,
                    framing: h.framing,
                    keep_alive: h.keep_alive,
                });
            }
            if self.buf.len() > MAX_HEAD {
                return Err(WireError::Malformed);
            }
        }
    }
}

impl Response {
    /// Whether the whole body has been read.
    pub fn ended(&self) -> bool {
        matches!(
            self.framing,
            Framing::Chunked(Chunked::Done) | Framing::Length(0)
        )
    }

    /// Hand the body bytes already read to `on_body`, de-framed; the connection goes back
    /// to `pool` once the body has ended cleanly.
    pub fn drain(&mut self, on_body: &mut impl FnMut(&[u8])) -> Result<(), WireError> {
        self.framing = match self.framing {
            Framing::Close => {
                on_body(&self.conn.buf);
                self.conn.buf.clear();
                Framing::Close
            }
            Framing::Length(n) => {
                let take = (self.conn.buf.len() as u64).min(n) as usize;
                on_body(&self.conn.buf[..take]);
                self.conn.buf.advance(take);
                Framing::Length(n - take as u64)
            }
            Framing::Chunked(state) => {
                Framing::Chunked(dechunk(&mut self.conn.buf, state, on_body)?)
            }
        };
        Ok(())
    }

    /// Wait for more body bytes; `false` when the server closed the connection.
    pub async fn read(&mut self) -> Result<bool, WireError> {
        if self.conn.buf.capacity() - self.conn.buf.len() < 4096 {
            self.conn.buf.reserve(16 * 1024);
        }
        match self.conn.io.read_buf(&mut self.conn.buf).await {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(_) => Err(WireError::Disconnect),
        }
    }

    /// Return the connection to `pool` if the body ended cleanly and it may be reused.
    pub fn finish(self, pool: &Pool) {
        if self.keep_alive && self.ended() && self.conn.buf.is_empty() {
            pool.give_back(self.conn);
        }
    }
}

/// De-frame a chunked body in place: payload to `on_body`, framing consumed, a partial
/// size line or chunk end left in `buf` for the next read.
fn dechunk(
    buf: &mut BytesMut,
    mut state: Chunked,
    on_body: &mut impl FnMut(&[u8]),
) -> Result<Chunked, WireError> {
    loop {
        state = match state {
            Chunked::Done => return Ok(state),
            Chunked::Size | Chunked::Trailer => {
                let Some(i) = buf.windows(2).position(|w| w == b"\r\n") else {
                    if buf.len() > MAX_LINE {
                        return Err(WireError::Malformed);
                    }
                    return Ok(state);
                };
                let next = if state == Chunked::Trailer {
                    if i == 0 {
                        Chunked::Done
                    } else {
                        Chunked::Trailer
                    }
                } else {
                    chunk_size(&buf[..i])?
                };
                buf.advance(i + 2);
                next
            }
            Chunked::Data(n) => {
                if buf.is_empty() {
                    return Ok(state);
                }
                let take = (buf.len() as u64).min(n) as usize;
                on_body(&buf[..take]);
                buf.advance(take);
                match n - take as u64 {
                    0 => Chunked::DataEnd,
                    left => Chunked::Data(left),
                }
            }
            Chunked::DataEnd => {
                if buf.len() < 2 {
                    return Ok(state);
                }
                if &buf[..2] != b"\r\n" {
                    return Err(WireError::Malformed);
                }
                buf.advance(2);
                Chunked::Size
            }
        };
    }
}

/// The state after a chunk-size line (hex, optional `;extensions`).
fn chunk_size(line: &[u8]) -> Result<Chunked, WireError> {
    let hex = line.split(|&b| b == b';').next().unwrap_or_default();
    let hex = std::str::from_utf8(hex).map_err(|_| WireError::Malformed)?;
    let n = u64::from_str_radix(hex.trim(), 16).map_err(|_| WireError::Malformed)?;
    Ok(if n == 0 {
        Chunked::Trailer
    } else {
        Chunked::Data(n)
    })
}

mod head;
use head::parse_head;
pub use head::retry_after_of;

#[cfg(test)]
mod socket_tests;
#[cfg(test)]
mod tests;
