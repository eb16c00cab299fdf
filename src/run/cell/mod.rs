//! Running one cell (docs/results.md): the shared context of a run's cells, prefill cells (single
//! cold requests, the median of `repeats`), and the decode cell with its window's accounting
//! in `decode/` (the verdict rules are `results::fill::verdict`).

mod decode;
mod load;
mod open_loop;
mod replay;
mod sessions;

pub use decode::{Step, Tick, decode};
pub use load::load;
pub use replay::replay;
pub use sessions::sessions;

use crate::client::{Client, Outcome};
use crate::footprint::Probe;
use crate::plan::{Cell, Prefill, Workload};
use crate::prompt::{PromptError, Synth};
use crate::results::fill::verdict::verdict;
use crate::results::stats::{Latencies, median};
use crate::results::{Record, Status};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Mutex;

/// A replay phase's trace: its name as the spec gives it, and its requests in time order.
pub type Trace = (String, std::sync::Arc<[crate::plan::vocab::TraceEntry]>);

/// What every cell of a run shares.
pub struct Ctx {
    /// The client.
    pub client: Client,
    /// The workload settings of the plan.
    pub workload: Workload,
    /// The prompt synthesizer.
    pub synth: Mutex<Synth>,
    /// Per-request detail of the cell being measured, when `--save-requests` asks for it.
    pub requests: Option<std::sync::Mutex<Vec<crate::rundir::RequestLine>>>,
    /// The client's own footprint.
    pub probe: Probe,
    /// The load phase's dataset, when the spec names one.
    pub dataset: Option<std::sync::Arc<[crate::plan::vocab::Entry]>>,
    /// The replay phase's trace (its name as the spec gives it, and its requests in time
    /// order), when the spec names one.
    pub trace: Option<Trace>,
    /// The run directory, where a stopped replay leaves how far it got.
    pub out: Option<std::path::PathBuf>,
    /// The engine and GPU watcher.
    pub observer: crate::telemetry::Observer,
    /// The measured window of the cell in progress, marked for the observer.
    pub marks: std::sync::Arc<crate::telemetry::Marks>,
    /// `--start-at` when the run's first cell is a load cell: it sends its first request at
    /// that instant, its prompts made (taken by that cell).
    pub first_arrival_at: std::sync::Mutex<Option<super::start_at::StartAt>>,
}

impl Ctx {
    /// The context of a run's cells, keeping per-request detail when `save_requests`.
    pub fn new(client: Client, workload: &Workload, save_requests: bool, probe: Probe) -> Ctx {
        Ctx {
            probe,
            client,
            synth: Mutex::new(Synth::new(workload.seed, workload.prefix, workload.text)),
            workload: workload.clone(),
            requests: save_requests.then(|| std::sync::Mutex::new(Vec::new())),
            dataset: None,
            trace: None,
            out: None,
            observer: crate::telemetry::Observer::none(),
            marks: std::sync::Arc::default(),
            first_arrival_at: std::sync::Mutex::new(None),
        }
    }

    /// The warm prompt of `slot` at `context`: the same for every cell of the context.
    async fn slot_prompt(
        &self,
        context: u64,
        tokens: u64,
        slot: usize,
    ) -> Result<String, PromptError> {
        let mut synth = self.synth.lock().await;
        let group = synth.slot_group(slot);
        synth
            .exact_in(
                &self.client,
                tokens,
                &format!("slot{slot}x{context}"),
                group,
            )
            .await
    }

    /// Send each shared prefix once (one output token), together, and wait for them, when
    /// the workload primes its prefixes; an error when every one failed.
    async fn prime(&self, rec: &mut Record) -> Result<(), CellFailure> {
        if !self.workload.prefix.is_some_and(|p| p.prime) {
            return Ok(());
        }
        let texts = self.synth.lock().await.prefix_texts(&self.client).await?;
        let bodies: Vec<_> = texts.iter().map(|t| self.client.prepare(t, 1)).collect();
        self.send_once(&bodies, rec)
            .await
            .map(|_| ())
            .map_err(|kinds| CellFailure::Prime { kinds })
    }

    /// Send `bodies` once, together, before a window — to every server when there are
    /// several, as each has a prefix cache of its own to warm; their outcomes, or, when every
    /// one failed, the failure kinds (each failure counted in `rec`).
    async fn send_once(
        &self,
        bodies: &[crate::client::Prepared],
        rec: &mut Record,
    ) -> Result<Vec<Outcome>, Vec<String>> {
        let servers = self.client.endpoints().len();
        let routes: Vec<_> = (0..servers)
            .flat_map(|i| bodies.iter().map(move |b| (i, b)))
            .map(|(i, b)| (self.client.route_to(i), b))
            .collect();
        let sends = routes
            .iter()
            .map(|(to, b)| self.client.generate_via(to, b, |_| {}));
        let outs = futures_util::future::join_all(sends).await;
        if !outs.is_empty() && outs.iter().all(|o| o.failure.is_some()) {
            let mut said = std::collections::BTreeMap::<String, Option<&str>>::new();
            for o in &outs {
                let Some(f) = &o.failure else { continue };
                rec.errors += 1;
                *rec.error_kinds.entry(f.kind()).or_default() += 1;
                let words = said.entry(f.kind()).or_default();
                *words = words.or(o.message.as_deref());
            }
            return Err(said.iter().map(|(k, m)| readable(k, *m)).collect());
        }
        Ok(outs)
    }

    /// A prompt never sent before.
    async fn fresh_prompt(&self, tokens: u64, tag: &str) -> Result<String, PromptError> {
        self.synth
            .lock()
            .await
            .exact(&self.client, tokens, tag)
            .await
    }
}

/// Measure a prefill cell: `repeats` cold requests (one in decode-warmup mode: the first,
/// still cold, request of the context's warm-up), prompt tokens / TTFT: their median
/// (docs/results.md), with each value and the 95% interval of their mean when there are several.
pub async fn prefill(cx: &Ctx, cell: &Cell, how: Prefill, mut rec: Record) -> Record {
    let repeats = match how {
        Prefill::DecodeWarmup => 1,
        Prefill::Standalone { repeats } => repeats.max(1),
    };
    let mut rates = Vec::new();
    let mut ttft = Latencies::default();
    let mut shares = crate::results::Shares::default();
    let mut said = None;
    if let Err(e) = cx.prime(&mut rec).await {
        return failed(rec, &e);
    }
    // The engine's view covers the measured requests, not the primes before them.
    cx.marks.open_cold(tokio::time::Instant::now());
    for r in 0..repeats {
        let prompt = match prefill_prompt(cx, cell, how, r).await {
            Ok(p) => p,
            Err(e) => return failed(rec, &e),
        };
        rec.requests_started += 1;
        let mut first = None;
        let request = cx.client.prepare(&prompt, 1);
        let to = cx.client.route();
        let out = cx
            .client
            .generate_via(&to, &request, |c| first = first.or(Some(c.at)))
            .await;
        shares.each(to.index(), to.adapter(), |s| s.requests += 1);
        if let Some(f) = &out.failure {
            rec.errors += 1;
            *rec.error_kinds.entry(f.kind()).or_default() += 1;
            said = said.or_else(|| Some(readable(&f.kind(), out.message.as_deref())));
            continue;
        }
        check_prompt(&mut rec, &out, cell.prompt_tokens);
        if let Some(first) = first {
            let secs = (first - out.sent).as_secs_f64();
            ttft.record_s(secs);
            shares.each(to.index(), to.adapter(), |s| s.ttft.record_s(secs));
            rates.push(cell.prompt_tokens as f64 / secs);
            rec.completed += 1;
        }
    }
    cx.marks.close(tokio::time::Instant::now());
    prefill_figures(cx, &mut rec, &ttft, rates, &shares);
    prefix_warning(cx, cell, &mut rec);
    let errors = rec.errors;
    let mut rec = verdict(rec, errors, repeats as u64, &[]);
    // A cell every request of which failed says why in the engine's own words.
    if let (Status::Failed, Some(said)) = (rec.status, said)
        && let Some(last) = rec.reasons.last_mut()
    {
        *last = format!("{last} ({said})");
    }
    rec
}

/// A prefill cell's figures from its requests: TTFT, the median prompt tokens / TTFT (with
/// each value and their interval when there are several), and each endpoint's share.
fn prefill_figures(
    cx: &Ctx,
    rec: &mut Record,
    ttft: &Latencies,
    mut rates: Vec<f64>,
    shares: &crate::results::Shares,
) {
    rec.ttft_ms = ttft.summary();
    if rates.len() > 1 {
        // Several cold requests: each value, and the interval of their mean.
        let values = [("prefill_tok_s".to_string(), rates.clone())].into();
        crate::results::repeats::summarize(rec, values, rates.len() as u32);
    }
    // The median, not the mean: one request slowed by the machine does not move it.
    rec.prefill_tok_s = median(&mut rates).map(|v| (v * 10.0).round() / 10.0);
    rec.measured_s = rec.ttft_ms.map(|t| t.p50 / 1000.0);
    rec.by_endpoint = shares.fields(&cx.client.endpoints(), 0.0);
    rec.by_adapter = shares.adapter_fields(&cx.client.adapters(), 0.0);
}

/// The share of a prefill cell's prompt tokens the prefix cache can serve, warned about when
/// above 0 (`workload.prefix`: the cell then measures the prefill of the rest).
fn prefix_warning(cx: &Ctx, cell: &Cell, rec: &mut Record) {
    let n = rec.requests_started;
    let reusable = fresh_reusable(&cx.workload, n);
    rec.prefix_hit_expected = hit_expected(&cx.workload, reusable, n * cell.prompt_tokens);
    if let Some(e) = rec.prefix_hit_expected.filter(|e| *e > 0.0) {
        rec.warnings.push(format!(
            "the prompts share `workload.prefix`: {:.0}% of their tokens can come from the \
             prefix cache, so this is the prefill of the rest, not of a cold prompt",
            e * 100.0
        ));
    }
}

/// The prompt of a prefill cell's request `r`: the slot prompt its decode cell warms up
/// with, or a prompt never sent before.
async fn prefill_prompt(
    cx: &Ctx,
    cell: &Cell,
    how: Prefill,
    r: u32,
) -> Result<String, PromptError> {
    if how == Prefill::DecodeWarmup {
        return cx.slot_prompt(cell.context, cell.prompt_tokens, 0).await;
    }
    let tag = format!("prefill{}r{r}n{}", cell.context, rand_tag());
    cx.fresh_prompt(cell.prompt_tokens, &tag).await
}

fn check_prompt(rec: &mut Record, out: &Outcome, expected: u64) {
    if let Some(p) = out.usage_prompt {
        rec.server_prompt_tokens = Some(p);
        if p != expected && !rec.reasons.iter().any(|r| r.starts_with("prompt length")) {
            rec.reasons.push(format!(
                "prompt length mismatch: sent {expected} tokens, the server counted {p}"
            ));
        }
    }
}

/// `prefix_hit_expected` with shared prefixes: `reusable` of the window's `tokens` prompt
/// tokens were sent before (none without `workload.prefix`).
pub(super) fn hit_expected(w: &Workload, reusable: u64, tokens: u64) -> Option<f64> {
    w.prefix?;
    (tokens > 0).then(|| crate::results::stats::round(reusable as f64 / tokens as f64, 4))
}

/// The tokens of `n` new prompts that a perfect prefix cache holds: each one's shared
/// prefix, once its group was sent — primed before the window, or else by the group's first
/// prompt (groups are taken in turn).
pub(super) fn fresh_reusable(w: &Workload, n: u64) -> u64 {
    let Some(p) = w.prefix else { return 0 };
    let firsts = if p.prime {
        0
    } else {
        n.min(u64::from(p.groups))
    };
    (n - firsts) * p.tokens.0
}

pub(super) fn rand_tag() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ N
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Why a cell could not be measured, written into its record's reasons.
#[derive(Debug, thiserror::Error)]
pub(super) enum CellFailure {
    /// A prompt of the exact length could not be made.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// Every warm-up request failed (their kinds, with the server's words).
    #[error("every warm-up request failed ({})", kinds.join(", "))]
    WarmUp {
        /// The failure kinds.
        kinds: Vec<String>,
    },
    /// Every request priming the shared prefixes failed (their kinds).
    #[error(
        "every request priming the shared prefixes failed ({})",
        kinds.join(", ")
    )]
    Prime {
        /// The failure kinds.
        kinds: Vec<String>,
    },
    /// The streams went silent.
    #[error("no stream produced a token for {0}")]
    Silent(crate::plan::vocab::Span),
    /// Requests kept failing before every stream produced.
    #[error("every request failed before the window opened")]
    BeforeWindow,
}

/// A failure kind as people read it, with the server's own words when it gave some:
/// `http_400` → `HTTP 400: This model's maximum context length is …`, `connection_refused` →
/// `connection refused`.
fn readable(kind: &str, words: Option<&str>) -> String {
    let kind = match kind.strip_prefix("http_") {
        Some(code) => format!("HTTP {code}"),
        None => kind.replace('_', " "),
    };
    match words {
        Some(w) => format!("{kind}: {w}"),
        None => kind,
    }
}

pub(super) fn failed(mut rec: Record, why: &dyn std::fmt::Display) -> Record {
    rec.status = Status::Failed;
    rec.reasons.push(why.to_string());
    rec
}

#[cfg(test)]
mod tests;
