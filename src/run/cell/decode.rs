//! A decode cell: prompts for C slots and their warm-up, C closed-loop slots reporting to the
//! [`Window`], the window closing on time with in-flight requests cancelled, and the record
//! filled from the window with its verdict (contract §5).

use super::{CellFailure, Ctx, failed, rand_tag, round, verdict};
use crate::plan::{Cell, Decode};
use crate::results::{Record, TokenSource};
use crate::run::window::{SlotEvent, Window};
use crate::spec::Validity;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Where a decode cell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Each slot's prompt sent once before the window.
    WarmUp,
    /// Waiting for all C streams to produce tokens.
    Ramp,
    /// The window is open.
    Window,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::WarmUp => "warm-up",
            Stage::Ramp => "ramp",
            Stage::Window => "window",
        })
    }
}

/// Live state of a decode cell, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// Where the cell is.
    pub stage: Stage,
    /// Output tok/s so far in the window.
    pub tok_s: Option<f64>,
    /// Seconds of the window so far.
    pub window_s: f64,
}

impl Tick {
    fn at(stage: Stage) -> Tick {
        Tick {
            stage,
            tok_s: None,
            window_s: 0.0,
        }
    }
}

/// Measure a decode cell under `load`, reporting its progress on `ticks`.
pub async fn decode(
    cx: Arc<Ctx>,
    cell: &Cell,
    load: Decode,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    let _ = ticks.send(Tick::at(Stage::WarmUp));
    let c = cell.concurrency as usize;
    let (prompts, warm_prompt_counts) = match warm_up(&cx, cell, &mut rec).await {
        Ok(warm) => warm,
        Err(why) => return failed(rec, &why),
    };
    let (window, tickets) = match load {
        Decode::FixedDuration(d) => (Some(d), None),
        Decode::RequestCount(n) => (None, Some(Arc::new(AtomicU64::new(u64::from(n))))),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let tasks: Vec<_> = (0..c)
        .map(|slot| {
            let slot_cx = SlotCx {
                cx: cx.clone(),
                prompt: prompts.get(slot).cloned(),
                cell: cell.clone(),
                tickets: tickets.clone(),
            };
            tokio::spawn(slot_loop(slot_cx, slot, tx.clone(), stop_rx.clone()))
        })
        .collect();
    drop(tx);
    let mut w = Window::new(c, cell.prompt_tokens);
    // Warm-up requests finish (max_tokens 1), so their usage checks every slot's prompt even
    // when no measured request ends inside the window.
    for p in &warm_prompt_counts {
        w.note_prompt(*p);
    }
    if cx.requests.is_some() {
        w.save_requests(Instant::now());
    }
    if window.is_none() {
        w.open_at(Instant::now(), None);
    }
    let collected = collect(&mut w, &mut rx, &cx, window, &ticks).await;
    let _ = stop_tx.send(true);
    if let Err(why) = collected {
        rec.errors = w.errors;
        rec.error_kinds = w.error_kinds.clone();
        return failed(rec, &why);
    }
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    w.finish(Instant::now());
    keep_requests(&cx, cell, &mut w);
    fill(rec, &mut w, cell, window, &cx.workload.validity)
}

/// The window's per-request detail, kept for `requests.jsonl` (`--save-requests`).
fn keep_requests(cx: &Ctx, cell: &Cell, w: &mut Window) {
    if let (Some(lines), Some(saved)) = (&cx.requests, w.saved.take())
        && let Ok(mut lines) = lines.lock()
    {
        lines.extend(saved.into_iter().map(|mut v| {
            v["cell"] = serde_json::Value::from(cell.id.clone());
            v
        }));
    }
}

/// With a warm prompt cache: every slot's prompt, sent once, together, before the window.
/// Returns the prompts and the prompt lengths the server counted for them; an error when
/// every warm-up request failed (their failures counted in `rec`).
async fn warm_up(
    cx: &Arc<Ctx>,
    cell: &Cell,
    rec: &mut Record,
) -> Result<(Vec<Arc<String>>, Vec<u64>), CellFailure> {
    if !cx.workload.warm() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut prompts = Vec::new();
    for slot in 0..cell.concurrency as usize {
        prompts.push(Arc::new(
            cx.slot_prompt(cell.context, cell.prompt_tokens, slot)
                .await?,
        ));
    }
    let warmups = prompts.iter().map(|p| {
        let cx = cx.clone();
        let p = p.clone();
        async move { cx.client.generate(&p, 1, |_| {}).await }
    });
    let outs = futures_util::future::join_all(warmups).await;
    if outs.iter().all(|o| o.failure.is_some()) {
        for f in outs.iter().filter_map(|o| o.failure.as_ref()) {
            rec.errors += 1;
            *rec.error_kinds.entry(f.kind()).or_default() += 1;
        }
        return Err(CellFailure::WarmUp {
            kinds: rec.error_kinds.keys().cloned().collect(),
        });
    }
    let counts = outs.iter().filter_map(|o| o.usage_prompt).collect();
    Ok((prompts, counts))
}

/// Feed the slots' events to the window until it closes (fixed duration) or every slot is
/// done (request count), ticking a few times a second. An error when the streams go silent
/// or every request fails before the window opens.
async fn collect(
    w: &mut Window,
    rx: &mut mpsc::UnboundedReceiver<SlotEvent>,
    cx: &Ctx,
    window: Option<Duration>,
    ticks: &mpsc::UnboundedSender<Tick>,
) -> Result<(), CellFailure> {
    // The collector waits longer than a request's own stall timeout, so that a stalled
    // request is counted as such before the cell gives up on silence.
    let stall = cx.workload.stall_timeout.0 * 2 + Duration::from_secs(1);
    let give_up = 3 * w.slots() as u64 + 3;
    let duration_s = window.map(|d| d.as_secs_f64());
    let mut last_tick = Instant::now();
    let _ = ticks.send(Tick::at(Stage::Ramp));
    loop {
        if last_tick.elapsed() >= Duration::from_millis(250) {
            last_tick = Instant::now();
            let _ = ticks.send(tick(w, last_tick));
        }
        let close = w.close;
        let next = async {
            match close {
                Some(at) if window.is_some() => tokio::time::timeout_at(at, rx.recv()).await.ok(),
                _ => tokio::time::timeout(stall, rx.recv()).await.ok(),
            }
        };
        match next.await {
            Some(Some(ev)) => w.event(ev, duration_s),
            Some(None) => return Ok(()),
            None if close.is_some_and(|at| Instant::now() >= at) => return Ok(()),
            None => return Err(CellFailure::Silent(crate::spec::Span(stall))),
        }
        if w.open.is_none() && w.early_failures >= give_up {
            return Err(CellFailure::BeforeWindow);
        }
    }
}

fn tick(w: &Window, now: Instant) -> Tick {
    let window_s = w.open.map_or(0.0, |o| (now - o).as_secs_f64());
    Tick {
        stage: if w.open.is_some() {
            Stage::Window
        } else {
            Stage::Ramp
        },
        tok_s: (window_s > 0.0).then(|| w.tokens / window_s),
        window_s,
    }
}

struct SlotCx {
    cx: Arc<Ctx>,
    prompt: Option<Arc<String>>,
    cell: Cell,
    tickets: Option<Arc<AtomicU64>>,
}

/// One slot: a request, then the next as soon as it ends, until stopped (closed loop).
async fn slot_loop(
    s: SlotCx,
    slot: usize,
    tx: mpsc::UnboundedSender<SlotEvent>,
    mut stop: watch::Receiver<bool>,
) {
    let max_tokens = s.cx.workload.max_output_tokens;
    let mut backoff = 0u32;
    for n in 0.. {
        if *stop.borrow() {
            return;
        }
        if let Some(t) = &s.tickets
            && t.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                .is_err()
        {
            return;
        }
        let prompt = match &s.prompt {
            Some(p) => p.clone(),
            None => match s
                .cx
                .fresh_prompt(
                    s.cell.prompt_tokens,
                    &format!(
                        "cold{}c{}s{slot}r{n}n{}",
                        s.cell.context,
                        s.cell.concurrency,
                        rand_tag()
                    ),
                )
                .await
            {
                Ok(p) => Arc::new(p),
                Err(_) => return,
            },
        };
        let key = (slot, n);
        let _ = tx.send(SlotEvent::Start(key, Instant::now()));
        let chunk_tx = tx.clone();
        let request = s.cx.client.generate(&prompt, max_tokens, move |c| {
            let _ = chunk_tx.send(SlotEvent::Chunk(key, c));
        });
        tokio::select! {
            out = request => {
                let failed = out.failure.is_some();
                let _ = tx.send(SlotEvent::End(key, Box::new(out), Instant::now()));
                // After a failure, back off (50 ms, doubling to 1 s) instead of hammering a
                // server that may be gone.
                if failed {
                    let wait = Duration::from_millis(50 << backoff.min(4));
                    backoff += 1;
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        _ = stop.changed() => return,
                    }
                } else {
                    backoff = 0;
                }
            }
            _ = stop.changed() => return,
        }
    }
}

/// The record of a measured window, with its verdict.
fn fill(
    mut rec: Record,
    w: &mut Window,
    cell: &Cell,
    window: Option<Duration>,
    validity: &Validity,
) -> Record {
    let len = w.length_s();
    rec.measured_s = Some(round(len, 3));
    rec.output_tokens = Some(w.tokens.round() as u64);
    rec.token_source = Some(if w.all_usage {
        TokenSource::Usage
    } else {
        TokenSource::Chunks
    });
    rec.total_tok_s = (len > 0.0).then(|| round(w.tokens / len, 1));
    rec.per_request_tok_s = w.per_request().map(|v| round(v, 1));
    rec.avg_active = Some(round(w.avg_active(), 2));
    rec.requests_started = w.started;
    rec.completed = w.completed;
    rec.errors = w.errors;
    rec.error_kinds = w.error_kinds.clone();
    rec.ttft_ms = w.ttft.summary();
    rec.tbt_ms = w.tbt.summary();
    rec.server_prompt_tokens = w.server_prompt_tokens;
    let mut reasons = Vec::new();
    if w.prompt_mismatches > 0 {
        reasons.push(format!(
            "prompt length mismatch: sent {} tokens, the server counted {} ({} requests)",
            cell.prompt_tokens,
            w.server_prompt_tokens.unwrap_or_default(),
            w.prompt_mismatches
        ));
    }
    let c = f64::from(cell.concurrency);
    if w.avg_active() < validity.min_active_fraction * c {
        reasons.push(format!(
            "average active requests {:.2} < {} x {}",
            w.avg_active(),
            validity.min_active_fraction,
            cell.concurrency
        ));
    }
    if let Some(d) = window.map(|d| d.as_secs_f64())
        && len + 1e-3 < d
    {
        reasons.push(format!("window {len:.3} s shorter than {d} s"));
    }
    if w.tokens <= 0.0 {
        reasons.push("no tokens inside the window".into());
    }
    let started = w.started.max(1);
    let rate = w.errors as f64 / started as f64;
    if rate > validity.max_error_rate {
        reasons.push(format!(
            "error rate {rate:.3} > {}",
            validity.max_error_rate
        ));
    }
    verdict(rec, w.errors, started, &reasons)
}
