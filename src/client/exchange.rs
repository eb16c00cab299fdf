//! An HTTP server in this process, reached without a socket: a request goes in as an
//! `http::Request`, its response comes back with a streamed body. A [`Client`](super::Client)
//! given one ([`Client::in_process`](super::Client::in_process)) sends everything through it
//! — generation requests (read by the same SSE parser, with the same failure handling) and
//! the informational endpoints alike — so that a run against the embedded simulator can be
//! driven on tokio's clock, where a test pauses time and every measured interval is exact.

use axum::body::Body;
use axum::http::{Method, Request, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;

/// A boxed future of one response.
pub type Responding = Pin<Box<dyn Future<Output = Response<Body>> + Send>>;

/// Answers HTTP requests in this process.
pub trait Exchange: Send + Sync + std::fmt::Debug {
    /// Answer `req`.
    fn exchange(&self, req: Request<Body>) -> Responding;

    /// Wait until the server has no request of an earlier cell in flight (the simulator
    /// in this process: the requests a cell dropped leave its engine at the end of a step);
    /// at once by default.
    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
}

/// A request to `path` of an in-process server, with `body` (JSON) when it has one.
pub(super) fn request(method: Method, path: &str, body: Bytes) -> Request<Body> {
    let mut req = Request::new(Body::from(body));
    *req.method_mut() = method;
    *req.uri_mut() = path.parse().unwrap_or_default();
    req.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    req
}

/// A response body being read, with the bytes of its last read.
pub(super) struct Reading {
    pub(super) status: u16,
    pub(super) retry_after: Option<std::time::Duration>,
    body: axum::body::BodyDataStream,
    pub(super) last: Option<Bytes>,
}

impl Reading {
    pub(super) fn new(r: Response<Body>) -> Reading {
        let h = r.headers();
        let retry_after = ["retry-after-ms", "retry-after"].iter().find_map(|name| {
            let v = h.get(*name)?.to_str().ok()?;
            super::h1::retry_after_of(name, v)
        });
        Reading {
            status: r.status().as_u16(),
            retry_after,
            body: r.into_body().into_data_stream(),
            last: None,
        }
    }

    /// Wait for body bytes; `Ok(false)` at the end, `Err(())` when the body broke.
    pub(super) async fn read(&mut self) -> Result<bool, ()> {
        match self.body.next().await {
            None => Ok(false),
            Some(Err(_)) => Err(()),
            Some(Ok(b)) => {
                self.last = Some(b);
                Ok(true)
            }
        }
    }

    /// The whole body, as text.
    pub(super) async fn text(mut self) -> Result<String, ()> {
        let mut all = Vec::new();
        while self.read().await? {
            if let Some(b) = self.last.take() {
                all.extend_from_slice(&b);
            }
        }
        String::from_utf8(all).map_err(|_| ())
    }
}
