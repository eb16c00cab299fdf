//! Watching the engine and the GPUs while cells are measured (docs/spec.md, `telemetry`;
//! docs/results.md, `server` and `gpu`): the engine's `/metrics` scraped around and during each
//! cell (`server.rs`, in the engine's own names, parsed by `prom.rs`, or `trtllm-serve`'s JSON
//! statistics read by `trtllm.rs`), GPU samples for the whole run (`gpu.rs`), and the window
//! marks a decode cell sets so that both are read over the measured window. What is seen
//! becomes record fields and validity reasons; a missing endpoint is a note, never a failure.
//! Notes go to the caller through a [`NoteSink`]; this module knows nothing of the run that
//! calls it.

mod fleet;
pub mod gpu;
pub mod lora;
mod prefix;
pub mod prom;
pub mod server;
mod spec;
pub mod trtllm;
#[cfg(test)]
mod watch_tests;

use crate::client::Client;
use crate::plan::Phase;
use crate::plan::Watch;
use crate::plan::vocab::GpuSource;
use crate::results::{Record, SpecSource, Status};
use prom::Scrape;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How the validity reason the engine's own view gives a record begins (`tune` re-judges a
/// predicted record holding only this reason by the most its engine ran at once).
pub const SERVER_RAN: &str = "the server ran ";

/// Where telemetry says what it could not see (a `/metrics` with no known names, a GPU source
/// that gave no samples): one line for the caller to show. A note, never a failure.
pub type NoteSink<'a> = dyn Fn(String) + Sync + 'a;

/// The measured window of the cell in progress, as the cell marks it.
#[derive(Debug, Default)]
pub struct Marks {
    window: Mutex<(Option<Instant>, Option<Instant>)>,
    /// The cell's load starts as its window opens (see [`Marks::open_cold`]).
    cold: AtomicBool,
    edge: Notify,
}

impl Marks {
    /// The window opened at `at`, under a load already running (a decode window after its
    /// warm-up): scrape now.
    pub fn open(&self, at: Instant) {
        self.cold.store(false, Ordering::Relaxed);
        self.mark_open(at);
    }

    /// The window opened at `at` with the cell's first request (prefill, load, replay,
    /// sessions): scrape now, but read no gauge from the scrapes of its first moments
    /// (`server::OPENING`), which see the engine before the request reaches it.
    pub fn open_cold(&self, at: Instant) {
        self.cold.store(true, Ordering::Relaxed);
        self.mark_open(at);
    }

    fn mark_open(&self, at: Instant) {
        if let Ok(mut w) = self.window.lock() {
            w.0 = Some(at);
        }
        self.edge.notify_one();
    }

    /// The window closed at `at`.
    pub fn close(&self, at: Instant) {
        if let Ok(mut w) = self.window.lock() {
            w.1 = Some(at);
        }
        self.edge.notify_one();
    }

    fn take(&self) -> (Option<Instant>, Option<Instant>) {
        self.window
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

/// Where GPU samples come from, alive for the run.
enum Feed {
    Smi { _child: gpu::ChildGuard },
    Dcgm(tokio::task::JoinHandle<()>),
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Feed::Dcgm(task) = self {
            task.abort();
        }
    }
}

/// The run's observer.
pub struct Observer {
    /// One client per server whose `/metrics` is scraped (none: not watched).
    clients: Vec<Client>,
    interval: Duration,
    samples: gpu::Readings,
    feed: Option<Feed>,
    /// Whether the engine's missing or unknown metrics were noted already.
    noted: AtomicBool,
    /// The drafts the responses reported (llama.cpp's timings).
    drafts: Option<std::sync::Arc<crate::client::Drafts>>,
}

/// A cell being watched.
pub struct Watching {
    /// Each server's scrape before the cell.
    before: Vec<Option<Scrape>>,
    stop: watch::Sender<bool>,
    /// Each server's scrapes during the cell.
    task: Option<tokio::task::JoinHandle<Vec<Vec<Scrape>>>>,
    started: Instant,
}

/// One scrape of the engine's `/metrics`, keeping the samples a cell reads; `None` when it
/// does not answer 2xx within 2 s. The text is parsed on a blocking thread, so that a large
/// exposition never holds up a worker that timestamps chunks.
pub async fn scrape(client: &Client) -> Option<Scrape> {
    let text = client
        .get_text("/metrics", Duration::from_secs(2))
        .await
        .ok()?;
    let at = Instant::now();
    tokio::task::spawn_blocking(move || read(at, &text))
        .await
        .ok()
}

/// A `/metrics` body read at `at`: Prometheus text, keeping the samples a cell reads, or
/// `trtllm-serve`'s JSON iteration statistics as `trtllm:` gauges.
pub fn read(at: Instant, text: &str) -> Scrape {
    if trtllm::is_iteration_stats(text) {
        Scrape::new(at, &trtllm::exposition(text))
    } else {
        Scrape::only(at, text, &server::wanted)
    }
}

impl Observer {
    /// Start watching what `watch` asks for against `client`: the GPU source (waiting up to
    /// a second and a half for its first samples). Returns the observer and the warnings for
    /// the manifest; what is not found is said through `note`.
    pub async fn start(
        watch: &Watch,
        client: &Client,
        note: &NoteSink<'_>,
    ) -> (Observer, Vec<String>) {
        let t = &watch.telemetry;
        let samples = gpu::Readings::default();
        let smi = || {
            let p = gpu::on_path("nvidia-smi")?;
            gpu::start_smi(&p, samples.clone()).ok()
        };
        let feed = match t.gpu {
            GpuSource::Off => None,
            GpuSource::Auto => smi().map(|c| Feed::Smi { _child: c }),
            GpuSource::NvidiaSmi => {
                let f = smi().map(|c| Feed::Smi { _child: c });
                if f.is_none() {
                    note("`telemetry.gpu` is `nvidia-smi` but it is not on PATH (or did not start): no GPU telemetry".into());
                }
                f
            }
            GpuSource::Dcgm => t
                .dcgm_url
                .clone()
                .map(|u| Feed::Dcgm(gpu::poll_dcgm(u, samples.clone()))),
        };
        let mut warnings = Vec::new();
        if feed.is_some() {
            let until = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < until && samples.lock().map_or(true, |v| v.is_empty()) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            match samples.lock() {
                Ok(v) if !v.is_empty() => warnings = gpu::hardware_warnings(watch, &v),
                _ => note("the GPU telemetry source gave no samples yet".into()),
            }
        }
        let observer = Observer {
            clients: match t.server {
                true => (0..client.endpoints().len())
                    .map(|i| client.endpoint(i))
                    .collect(),
                false => Vec::new(),
            },
            interval: t.interval.0,
            samples,
            feed,
            noted: AtomicBool::new(false),
            drafts: Some(client.drafts()),
        };
        (observer, warnings)
    }

    /// An observer that watches nothing.
    pub fn none() -> Observer {
        Observer {
            clients: Vec::new(),
            interval: Duration::from_secs(1),
            samples: gpu::Readings::default(),
            feed: None,
            noted: AtomicBool::new(false),
            drafts: None,
        }
    }

    /// Begin watching a cell: one scrape now, then one every interval and at the window's
    /// edges (`marks`) until [`Observer::finish`].
    pub async fn begin(&self, marks: &std::sync::Arc<Marks>) -> Watching {
        let _ = marks.take();
        let (stop, mut stopped) = watch::channel(false);
        let started = Instant::now();
        let before = fleet::scrape_all(&self.clients).await;
        if before.iter().all(Option::is_none) {
            return Watching {
                before,
                stop,
                task: None,
                started,
            };
        }
        let (marks, interval) = (marks.clone(), self.interval);
        let clients = self.clients.clone();
        let task = tokio::spawn(async move {
            let mut during: Vec<Vec<Scrape>> = clients.iter().map(|_| Vec::new()).collect();
            let mut every =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = every.tick() => {}
                    () = marks.edge.notified() => {}
                }
                let now = fleet::scrape_all(&clients).await;
                for (d, s) in during.iter_mut().zip(now) {
                    d.extend(s);
                }
            }
            during
        });
        Watching {
            before,
            stop,
            task: Some(task),
            started,
        }
    }
}

impl Observer {
    /// End watching a cell: the last scrape, the window (as the cell marked it, else the
    /// whole cell), and the record's `server`, `gpu` and `tokens_per_joule` filled in; an
    /// engine that ran fewer requests than the client had in flight makes a decode cell
    /// invalid, preemptions are a warning.
    pub async fn finish(
        &self,
        w: Watching,
        marks: &Marks,
        mut rec: Record,
        min_active_fraction: f64,
        note: &NoteSink<'_>,
    ) -> Record {
        let _ = w.stop.send(true);
        let during = match w.task {
            Some(t) => t.await.unwrap_or_default(),
            None => Vec::new(),
        };
        let (open, close) = marks.take();
        let (open, close) = (
            open.unwrap_or(w.started),
            close.unwrap_or_else(Instant::now),
        );
        let cold = marks.cold.swap(false, Ordering::Relaxed);
        let gauges_from = if cold { open + server::OPENING } else { open };
        let answered = w.before.iter().any(Option::is_some);
        let responses = self
            .drafts
            .as_ref()
            .and_then(|d| spec::of_responses(d, open, close));
        rec.spec_decode = responses.and_then(|c| c.block(SpecSource::LlamacppTimings));
        if answered {
            let after = fleet::scrape_all(&self.clients).await;
            let each = fleet::each(w.before, during, after, (open, close, gauges_from));
            match fleet::combine(&each) {
                Some(seen) => {
                    server_verdict(&mut rec, &seen, min_active_fraction);
                    rec.lora = seen.lora.clone();
                    if let Some(b) = seen.spec.as_ref().and_then(|c| c.block(SpecSource::VllmMetrics)) {
                        rec.spec_decode = Some(b);
                    }
                    rec.server = Some(seen.server);
                    fleet::rows(&mut rec, &each);
                }
                None => self.note_once(note, "the engine's `/metrics` has none of the names benchspec knows (vllm:, sglang:, llamacpp:, or trtllm-serve's iteration statistics with `enable_iter_perf_stats`): no server-side fields"),
            }
        } else if !self.clients.is_empty() {
            self.note_once(note, "the engine does not serve `/metrics`: no server-side fields (`telemetry.server: false` stops asking)");
        }
        self.gpu_fields(&mut rec, open, close);
        rec
    }

    fn gpu_fields(&self, rec: &mut Record, open: Instant, close: Instant) {
        if self.feed.is_none() {
            return;
        }
        let Ok(mut samples) = self.samples.lock() else {
            return;
        };
        let gpus = gpu::window(&samples, open, close);
        // What is older than this window is no longer needed.
        samples.retain(|s| s.at + gpu::PERIOD * 4 >= open);
        if gpus.is_empty() {
            return;
        }
        let energy: f64 = gpus.iter().map(|g| g.energy_j).sum();
        rec.tokens_per_joule = rec
            .output_tokens
            .filter(|_| energy > 0.0)
            .map(|t| crate::results::stats::round(t as f64 / energy, 4));
        rec.gpu = Some(gpus);
    }

    fn note_once(&self, note: &NoteSink<'_>, what: &str) {
        if !self.noted.swap(true, Ordering::Relaxed) {
            note(what.to_string());
        }
    }
}

/// The validity reason and warning the engine's own view gives a record. A decode cell is
/// invalid when the engine ran fewer than `fraction` × C requests on average while the client
/// had C in flight and the engine held some back (requests waiting; a request between a
/// client's end and its next send is neither), judged over two scrapes or more. Capacity
/// probes are left to their SLO.
fn server_verdict(rec: &mut Record, seen: &server::Seen, fraction: f64) {
    let s = &seen.server;
    let want = fraction * f64::from(rec.concurrency);
    // A capacity probe is judged by its SLO, which is what queueing in the engine affects.
    let matrix_cell = rec.phase == Phase::Decode && rec.cell.split('/').any(|s| s == "decode");
    if matrix_cell
        && seen.scrapes >= 2
        && seen.waiting_mean > 0.0
        && let Some(running) = s.running_mean
        && running < want
        && rec.avg_active.is_some_and(|a| a >= want)
    {
        rec.reasons.push(format!(
            "{SERVER_RAN}{running:.1} of {} requests at once ({:.1} waiting)",
            rec.concurrency, seen.waiting_mean
        ));
        if rec.status == Status::Valid {
            rec.status = Status::Invalid;
        }
    }
    if let Some(w) = prefix::prefix_warning(rec.prefix_hit_expected, s.prefix_hit_rate) {
        rec.warnings.push(w);
    }
    if let Some(p) = s.preemptions.filter(|p| *p > 0.0) {
        rec.warnings.push(format!(
            "the engine preempted {p:.0} request(s) during the cell (its KV cache was full)"
        ));
    }
}
