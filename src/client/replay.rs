//! Tests only: an in-process server answering with recorded bytes (tests/fixtures/vllm/,
//! real vLLM's), so the client reads them exactly as it reads a live engine. A streamed
//! answer is sent one SSE event per millisecond (event `i` at `i + 1` ms after the request,
//! on tokio's clock), so a test pauses time and reads exact arrival times.

use super::exchange::{Exchange, Responding};
use super::{Api, Client, ClientDialect, Settings};
use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// One recorded answer: to requests on `path` whose body holds `needle`.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// The request path.
    pub path: &'static str,
    /// A substring the request body must hold (empty: any body).
    pub needle: &'static str,
    /// The recorded status.
    pub status: u16,
    /// The recorded body.
    pub body: &'static str,
}

impl Answer {
    /// A 200 with `body` to any request on `path` (a GET).
    pub(crate) fn get(path: &'static str, body: &'static str) -> Answer {
        Answer {
            path,
            needle: "",
            status: 200,
            body,
        }
    }
}

/// Recorded answers; a request none matches gets HTTP 418 (the test then fails on it).
#[derive(Debug, Clone)]
pub(crate) struct Replay(pub Vec<Answer>);

/// The SSE events of `body` with their blank line, in order (a non-SSE body is one piece).
pub(crate) fn events(body: &'static str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find("\n\n") {
        out.push(&rest[..i + 2]);
        rest = &rest[i + 2..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

impl Exchange for Replay {
    fn exchange(&self, req: Request<Body>) -> Responding {
        let answers = self.0.clone();
        Box::pin(async move {
            let path = req.uri().path().to_string();
            let asked = axum::body::to_bytes(req.into_body(), 1 << 20)
                .await
                .unwrap_or_default();
            let asked = String::from_utf8_lossy(&asked).into_owned();
            let Some(a) = answers
                .into_iter()
                .find(|a| a.path == path && asked.contains(a.needle))
            else {
                let mut r = Response::new(Body::from(format!("no recorded answer: {asked}")));
                *r.status_mut() = StatusCode::IM_A_TEAPOT;
                return r;
            };
            let pieces = events(a.body);
            let paced = futures_util::stream::unfold(0usize, move |i| {
                let piece = pieces.get(i).copied();
                async move {
                    let piece = piece?;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Some((Ok::<_, std::io::Error>(Bytes::from(piece)), i + 1))
                }
            });
            let mut r = Response::new(Body::from_stream(paced));
            *r.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::IM_A_TEAPOT);
            r
        })
    }
}

/// A client of model `tiny` (as the fixtures were served) answered by `answers`.
pub(crate) fn replaying(api: Api, answers: Vec<Answer>) -> Client {
    let settings = Settings {
        base: "http://127.0.0.1:9".into(),
        others: Vec::new(),
        balance: Default::default(),
        model: "tiny".into(),
        api,
        dialect: ClientDialect::Serving,
        key: None,
        stall: Duration::from_secs(5),
        ignore_eos: true,
        pool: 1,
        adapters: Vec::new(),
        adapter_seed: 0,
        temperature: 0.0,
    };
    let client = Client::new(settings).expect("a client");
    client.in_process(Arc::new(Replay(answers)))
}
