//! The simulator's HTTP surface (vLLM's): `/health`, `/version`, `/v1/models`, `/tokenize`,
//! `/v1/completions`, `/v1/chat/completions` and `/metrics`, with the fault options tests use.
//! [`start`] serves on a listener given by the caller (127.0.0.1, port 0 in tests).

use super::api::EndpointKind;
use super::driver::{self, Snapshot};
use super::engine::Scheduler;
use super::http::Shared;
use super::options::Options;
use super::{endpoints, generate::generate};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// A running simulator.
pub struct Sim {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    /// The runtime of its own, when started with [`start_threaded`].
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Serve the simulator on 127.0.0.1 (a free port) from a runtime of its own, so that the
/// process measuring it in-process can tell its own CPU time from the simulator's.
pub fn start_threaded(opts: Options) -> std::io::Result<Sim> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("sim-http")
        .enable_all()
        .build()?;
    let mut sim = {
        let _inside = rt.enter();
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        start(tokio::net::TcpListener::from_std(std_listener)?, opts)?
    };
    sim.runtime = Some(rt);
    Ok(sim)
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

/// The engine `opts` ask for, with its run-to-run noise when asked.
fn engine_for(opts: &Options) -> Scheduler {
    let mut engine = Scheduler::new(opts.profile.clone());
    engine.lora = opts.lora.as_ref().map(super::lora::Slots::new);
    if let Some(s) = &opts.speculation {
        engine.drafter = Some(super::speculate::Drafter::new(s.draft_tokens, opts.seed));
    }
    if opts.noise > 0.0 {
        let seed = opts.seed ^ opts.noise_seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        engine.noise = Some(super::noise::Noise::new(opts.noise, seed));
    }
    engine
}

/// The metrics before the driver's first step: the KV cache's size is known at once (a
/// client may ask `/metrics` before the driver has run).
fn first_snapshot(engine: &Scheduler) -> Arc<Mutex<Snapshot>> {
    Arc::new(Mutex::new(Snapshot::of(engine)))
}

/// The simulator's endpoints.
fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route(
            "/health",
            get(|s: State<Arc<Shared>>| async move {
                if super::dialect::informational(s.opts.dialect) {
                    StatusCode::OK
                } else {
                    StatusCode::NOT_FOUND
                }
            }),
        )
        .route("/get_server_info", get(super::dialect::server_info))
        .route("/version", get(endpoints::version))
        .route("/v1/models", get(endpoints::models))
        .route("/tokenize", post(endpoints::tokenize))
        .route("/apply-template", post(endpoints::apply_template))
        .route(
            "/v1/completions",
            post(|s: State<Arc<Shared>>, b: Bytes| generate(s, b, EndpointKind::Completion)),
        )
        .route(
            "/v1/chat/completions",
            post(|s: State<Arc<Shared>>, b: Bytes| generate(s, b, EndpointKind::Chat)),
        )
        .route("/metrics", get(endpoints::metrics_text))
}

/// The simulator's handlers over `tx`, the channel to its engine's driver.
fn app(
    opts: Options,
    tx: mpsc::UnboundedSender<driver::Msg>,
    metrics: Arc<Mutex<Snapshot>>,
) -> Router {
    let shared = Arc::new(Shared {
        opts,
        tx,
        metrics,
        next_key: AtomicU64::new(1),
        tokenizer: Mutex::new(tokio::time::Instant::now()),
        entry: super::entry::EntryQueue::new(),
        images: super::images::ImageCounts::default(),
    });
    router().with_state(shared)
}

/// Serve the simulator on `listener` until stopped (or `die_after`).
pub fn start(listener: tokio::net::TcpListener, opts: Options) -> std::io::Result<Sim> {
    let addr = listener.local_addr()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let engine = engine_for(&opts);
    let metrics = first_snapshot(&engine);
    let driver_metrics = metrics.clone();
    std::thread::Builder::new()
        .name("sim-engine".into())
        .spawn(move || driver::run(engine, rx, driver_metrics))?;
    let die_after = opts.faults.die_after;
    let app = app(opts, tx, metrics);
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
        runtime: None,
    })
}

/// The simulator answering in this process, without a socket: its driver a task on the
/// caller's runtime and on tokio's clock, its endpoints the same router called directly.
/// Under paused time (a test) every interval it models is exact and the run repeatable.
#[derive(Debug, Clone)]
pub struct InProcess {
    app: Router,
    metrics: Arc<Mutex<Snapshot>>,
}

impl InProcess {
    /// Start the driver on the current runtime; it ends when the last clone is dropped.
    pub fn start(opts: Options) -> InProcess {
        let (tx, rx) = mpsc::unbounded_channel();
        let engine = engine_for(&opts);
        let metrics = first_snapshot(&engine);
        tokio::spawn(driver::run_on_clock(engine, rx, metrics.clone()));
        InProcess {
            app: app(opts, tx, metrics.clone()),
            metrics,
        }
    }

    /// Wait, at most `limit`, until the engine runs and queues no request — as a real
    /// engine is once the client of a cell that ended has gone: a request it dropped is
    /// aborted at the end of the engine's step (the driver reads the cancellation then), and
    /// until then it is still running, in the engine's batch and its `/metrics`. Whether
    /// the engine was idle in time.
    pub async fn settle(&self, limit: std::time::Duration) -> bool {
        let until = tokio::time::Instant::now() + limit;
        loop {
            let busy = self.metrics.lock().map_or(0, |m| m.running + m.waiting);
            if busy == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// Answer one request.
    pub async fn call(
        &self,
        req: axum::http::Request<axum::body::Body>,
    ) -> axum::http::Response<axum::body::Body> {
        use tower::ServiceExt;
        match self.app.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }
}
