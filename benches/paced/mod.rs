//! A paced OpenAI-compatible server for the client benchmarks (`load`, `arrivals`): it
//! streams vLLM-shaped completions chunks of one token each, flushed one by one every `gap`
//! (or as fast as it can with no gap), answers `/tokenize` with the simulator's tokenizer, and
//! records its own TTFT for every measured request (`GET /bench/ttft`).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::routing::{get, post};
use benchspec::sim::tokenizer;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The model the paced server serves.
pub const MODEL: &str = "paced";

/// The paced server's state.
#[derive(Default)]
struct Server {
    gap: Duration,
    /// Server-side TTFT (µs) of measured requests (`max_tokens` > 1).
    ttft_us: Mutex<Vec<u64>>,
}

// ---------------------------------------------------------------- the paced server

/// Serve on 127.0.0.1 (a free port, printed on stdout), one token per chunk every `gap`.
pub fn serve(gap: Duration) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
            return;
        };
        let Ok(addr) = listener.local_addr() else {
            return;
        };
        println!("http://{addr}");
        let state = Arc::new(Server {
            gap,
            ..Server::default()
        });
        let app = Router::new()
            .route("/health", get(|| async { "" }))
            .route(
                "/version",
                get(|| async { axum::Json(json!({"version": "paced"})) }),
            )
            .route("/v1/models", get(models))
            .route("/tokenize", post(tokenize))
            .route("/v1/completions", post(completions))
            .route("/bench/ttft", get(ttft))
            .with_state(state);
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, app).await;
    });
}

async fn models() -> axum::Json<Value> {
    axum::Json(
        json!({"object": "list", "data": [{"id": MODEL, "object": "model", "max_model_len": 131072}]}),
    )
}

async fn tokenize(body: Bytes) -> axum::Json<Value> {
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = v.get("prompt").and_then(Value::as_str).unwrap_or_default();
    axum::Json(json!({"count": tokenizer::count(text)}))
}

/// TTFT percentiles of the measured requests so far, then forget them.
async fn ttft(State(s): State<Arc<Server>>) -> axum::Json<Value> {
    let mut v = s
        .ttft_us
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    v.sort_unstable();
    let q = |p: f64| {
        v.get(((v.len() as f64 - 1.0) * p) as usize)
            .map(|us| *us as f64 / 1e3)
    };
    axum::Json(json!({"n": v.len(), "p50_ms": q(0.5), "p99_ms": q(0.99)}))
}

struct Stream {
    s: Arc<Server>,
    arrived: Instant,
    i: u64,
    n: u64,
    prompt: u64,
    done: bool,
}

fn chunk(i: u64, n: u64, prompt: u64) -> Bytes {
    let finish = if i == n { "\"length\"" } else { "null" };
    Bytes::from(format!(
        "data: {{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"text\":\" tok\",\"logprobs\":null,\"finish_reason\":{finish},\"stop_reason\":null}}],\"usage\":{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\"completion_tokens\":{i}}}}}\n\n",
        prompt + i
    ))
}

async fn completions(State(s): State<Arc<Server>>, body: Bytes) -> axum::response::Response {
    let arrived = Instant::now();
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    let prompt = v.get("prompt").and_then(Value::as_str).unwrap_or_default();
    let n = v
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(16)
        .max(1);
    let st = Stream {
        prompt: tokenizer::count(prompt) as u64,
        s,
        arrived,
        i: 0,
        n,
        done: false,
    };
    let stream = futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        if st.i == st.n {
            st.done = true;
            let usage = json!({"prompt_tokens": st.prompt, "total_tokens": st.prompt + st.n, "completion_tokens": st.n});
            let tail = format!(
                "data: {}\n\ndata: [DONE]\n\n",
                json!({"id": "cmpl-1", "object": "text_completion", "created": 0, "model": MODEL, "choices": [], "usage": usage})
            );
            return Some((Ok::<Bytes, std::convert::Infallible>(Bytes::from(tail)), st));
        }
        st.i += 1;
        if !st.s.gap.is_zero() {
            tokio::time::sleep_until(st.arrived + st.s.gap * st.i as u32).await;
        }
        if st.i == 1 && st.n > 1 {
            let us = st.arrived.elapsed().as_micros() as u64;
            if let Ok(mut v) = st.s.ttft_us.lock() {
                v.push(us);
            }
        }
        Some((Ok(chunk(st.i, st.n, st.prompt)), st))
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

/// This bench binary re-run as the paced server (`--serve GAP_US`) pinned to core 0, and
/// its URL; killed when dropped.
pub struct Spawned {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Spawned {
    /// Start it with `gap_us` between tokens.
    pub fn start(gap_us: u64) -> Option<Spawned> {
        use std::io::{BufRead, BufReader};
        let me = std::env::current_exe().ok()?;
        let mut child = std::process::Command::new("taskset")
            .args(["-c", "0"])
            .arg(me)
            .args(["--serve", &gap_us.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take()?)
            .read_line(&mut line)
            .ok()?;
        Some(Spawned {
            child,
            url: line.trim().to_string(),
        })
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
