//! The simulator's HTTP surface (vLLM's): `/health`, `/version`, `/v1/models`, `/tokenize`,
//! `/v1/completions`, `/v1/chat/completions` and `/metrics`, with the fault options tests use.
//! [`start`] serves on a listener given by the caller (127.0.0.1, port 0 in tests).

use super::api::{self, GenRequest, Head, Kind};
use super::driver::{self, Msg, Snapshot};
use super::endpoints;
use super::engine::{Engine, NewRequest};
use super::profile::Profile;
use super::stream::{self, Plan};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Faults to inject, for tests of everything that must survive them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Fraction of requests answered with HTTP 500.
    pub failure_rate: f64,
    /// Fraction of streams cut mid-way (the connection drops).
    pub disconnect_rate: f64,
    /// Fraction of streams that go silent mid-way and stay open.
    pub stall_rate: f64,
    /// Stop serving this long after start.
    pub die_after: Option<Duration>,
}

/// Whose streaming dialect the simulator speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dialect {
    /// vLLM: `continuous_usage_stats` honoured, usage in a separate final `choices: []` chunk.
    #[default]
    Vllm,
    /// llama.cpp's server: no per-chunk usage, usage inside the last chunk.
    LlamaCpp,
}

/// How the simulator is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Performance profile.
    pub profile: Profile,
    /// The model name served; the profile's by default.
    pub served_name: String,
    /// Chat: the first this many generated tokens are `reasoning_content`.
    pub reasoning_tokens: usize,
    /// Tokens per streamed chunk (several, as speculative decoding sends them).
    pub tokens_per_chunk: usize,
    /// Faults.
    pub faults: Faults,
    /// Seed of the fault draws and of generated text.
    pub seed: u64,
    /// The streaming dialect.
    pub dialect: Dialect,
}

impl Options {
    /// Plain options for a profile.
    pub fn new(profile: Profile) -> Options {
        Options {
            served_name: profile.served_name.to_string(),
            profile,
            reasoning_tokens: 0,
            tokens_per_chunk: 1,
            faults: Faults::default(),
            seed: 1,
            dialect: Dialect::Vllm,
        }
    }
}

pub(super) struct Shared {
    pub opts: Options,
    pub tx: mpsc::UnboundedSender<Msg>,
    pub metrics: Arc<Mutex<Snapshot>>,
    pub next_key: AtomicU64,
}

/// A running simulator.
pub struct Sim {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sim {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop serving and wait until the server is gone.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    /// Wait until the server stops by itself (`die_after`).
    pub async fn wait(&mut self) {
        let _ = (&mut self.task).await;
    }
}

/// Serve the simulator on `listener` until stopped (or `die_after`).
pub fn start(listener: tokio::net::TcpListener, opts: Options) -> std::io::Result<Sim> {
    let addr = listener.local_addr()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let metrics = Arc::new(Mutex::new(Snapshot::default()));
    let engine = Engine::new(opts.profile.clone());
    let driver_metrics = metrics.clone();
    std::thread::Builder::new()
        .name("sim-engine".into())
        .spawn(move || driver::run(engine, rx, driver_metrics))?;
    let die_after = opts.faults.die_after;
    let shared = Arc::new(Shared {
        opts,
        tx,
        metrics,
        next_key: AtomicU64::new(1),
    });
    let app = Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/version", get(endpoints::version))
        .route("/v1/models", get(endpoints::models))
        .route("/tokenize", post(endpoints::tokenize))
        .route("/apply-template", post(endpoints::apply_template))
        .route(
            "/v1/completions",
            post(|s: State<Arc<Shared>>, b: Bytes| generate(s, b, Kind::Completion)),
        )
        .route(
            "/v1/chat/completions",
            post(|s: State<Arc<Shared>>, b: Bytes| generate(s, b, Kind::Chat)),
        )
        .route("/metrics", get(endpoints::metrics_text))
        .with_state(shared);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // Without TCP_NODELAY small SSE writes wait for delayed ACKs (40 ms on Linux).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = stop_rx.await;
        });
        match die_after {
            Some(d) => {
                let _ = tokio::time::timeout(d, serve).await;
            }
            None => {
                let _ = serve.await;
            }
        }
    });
    Ok(Sim {
        addr,
        stop: Some(stop_tx),
        task,
    })
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn error(
    status: StatusCode,
    kind: &str,
    message: &str,
    param: Option<&str>,
) -> Response {
    json_response(
        status,
        &api::error_body(kind, message, status.as_u16(), param),
    )
}

async fn generate(State(s): State<Arc<Shared>>, body: Bytes, kind: Kind) -> Response {
    let req: GenRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestError",
                &format!("invalid request body: {e}"),
                None,
            );
        }
    };
    let opts = &s.opts;
    if let Some(model) = req.model.as_deref().filter(|m| *m != opts.served_name) {
        return error(
            StatusCode::NOT_FOUND,
            "NotFoundError",
            &format!("The model `{model}` does not exist."),
            Some("model"),
        );
    }
    let ids = match req.prompt_ids() {
        Ok(ids) => ids,
        Err(e) => return error(StatusCode::BAD_REQUEST, "BadRequestError", &e, None),
    };
    let max_len = usize::try_from(opts.profile.max_model_len).unwrap_or(usize::MAX);
    let limit = req.limit(ids.len(), max_len);
    if ids.len() >= max_len || ids.len() + limit > max_len {
        return error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            &api::too_long(ids.len(), limit, max_len),
            None,
        );
    }
    let key = s.next_key.fetch_add(1, Ordering::Relaxed);
    let draw = |salt: u64| stream::unit(opts.seed, key, salt);
    if draw(1) < opts.faults.failure_rate {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "simulated engine failure (fault option `failure_rate`)",
            None,
        );
    }
    tokio::time::sleep(Duration::from_secs_f64(opts.profile.api_delay_s(ids.len()))).await;
    let target = stream::target(&req, limit, &ids, opts.seed);
    let prompt_len = ids.len();
    let (tx, rx) = mpsc::unbounded_channel();
    if s.tx
        .send(Msg::Submit {
            key,
            req: NewRequest {
                tokens: ids,
                target,
            },
            tx,
        })
        .is_err()
    {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableError",
            "the engine is shutting down",
            None,
        );
    }
    let head = Head {
        id: format!(
            "{}-{key:032x}",
            if kind == Kind::Chat {
                "chatcmpl"
            } else {
                "cmpl"
            }
        ),
        created: unix_now(),
        model: opts.served_name.clone(),
        kind,
    };
    let plan = Plan::new(&req, opts, key, prompt_len, target, head);
    let guard = stream::CancelOnDrop {
        key,
        tx: s.tx.clone(),
    };
    if !req.stream {
        return match stream::collect(rx, plan, guard).await {
            Some(body) => json_response(StatusCode::OK, &body),
            None => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                "the engine stopped",
                None,
            ),
        };
    }
    let events = stream::sse(rx, plan, guard);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(events))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
