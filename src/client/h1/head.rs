//! A response head: its status, the framing of the body that follows, whether the
//! connection stays open, and a rate limit's `retry-after`.

use super::{Chunked, Framing, WireError};
use bytes::{Buf, BytesMut};

/// What a response head says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) retry_after: Option<std::time::Duration>,
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
}

/// The complete head at the start of `buf` (consumed), interim 1xx answers skipped; `None`
/// while the head is incomplete.
pub(super) fn parse_head(buf: &mut BytesMut) -> Result<Option<Head>, WireError> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut headers);
        let used = match r.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(WireError::Malformed),
        };
        let status = r.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            buf.advance(used);
            continue;
        }
        let mut framing = Framing::Close;
        let mut keep_alive = r.version == Some(1);
        let mut retry_after = None;
        for h in r.headers.iter() {
            let value = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            if let Some(wait) = retry_after_of(h.name, &value) {
                // `retry-after-ms` is the finer of the two.
                if h.name.eq_ignore_ascii_case("retry-after-ms") || retry_after.is_none() {
                    retry_after = Some(wait);
                }
            }
            if h.name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                framing = Framing::Chunked(Chunked::Size);
            } else if h.name.eq_ignore_ascii_case("content-length")
                && !matches!(framing, Framing::Chunked(_))
            {
                let n = value.trim().parse().map_err(|_| WireError::Malformed)?;
                framing = Framing::Length(n);
            } else if h.name.eq_ignore_ascii_case("connection") {
                keep_alive = match value.trim() {
                    "close" => false,
                    "keep-alive" => true,
                    _ => keep_alive,
                };
            }
        }
        // 204 and 304 never have a body, whatever their framing headers say (RFC 9112 §6.3).
        if status == 204 || status == 304 {
            framing = Framing::Length(0);
        }
        buf.advance(used);
        return Ok(Some(Head {
            status,
            retry_after,
            framing,
            keep_alive: keep_alive && framing != Framing::Close,
        }));
    }
}

/// The wait a `retry-after` (seconds) or `retry-after-ms` header asks for; an HTTP-date
/// `retry-after` is not read.
pub fn retry_after_of(name: &str, value: &str) -> Option<std::time::Duration> {
    let n: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
    let secs = if name.eq_ignore_ascii_case("retry-after-ms") {
        n / 1e3
    } else if name.eq_ignore_ascii_case("retry-after") {
        n
    } else {
        return None;
    };
    std::time::Duration::try_from_secs_f64(secs.min(3600.0)).ok()
}
