//! A decode cell: prompts for C slots and their warm-up, C closed-loop slots reporting to the
//! [`Window`], the window closing on time with in-flight requests cancelled, and the record
//! filled from the window with its verdict (contract §5).

use super::{Ctx, failed, rand_tag, round, verdict};
use crate::plan::{Cell, Mode};
use crate::results::{Record, TokenSource};
use crate::run::window::{SlotEvent, Window};
use crate::spec::{PromptCache, Spec};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Live state of a decode cell, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// `warm-up`, `ramp` (waiting for all streams) or `window`.
    pub phase: &'static str,
    /// Output tok/s so far in the window.
    pub tok_s: Option<f64>,
    /// Seconds of the window so far.
    pub window_s: f64,
}

/// Measure a decode cell, reporting its progress on `ticks`.
pub async fn decode(
    cx: Arc<Ctx>,
    cell: &Cell,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    let _ = ticks.send(Tick {
        phase: "warm-up",
        tok_s: None,
        window_s: 0.0,
    });
    let c = cell.concurrency as usize;
    let warm = cx.spec.workload.prompt_cache == PromptCache::Warm;
    let mut prompts = Vec::new();
    let mut warm_prompt_counts = Vec::new();
    if warm {
        for slot in 0..c {
            match cx.slot_prompt(cell.context, cell.prompt_tokens, slot).await {
                Ok(p) => prompts.push(Arc::new(p)),
                Err(e) => return failed(rec, &e),
            }
        }
        // The warm-up: each slot's prompt once, together, before the window.
        let warmups = prompts.iter().map(|p| {
            let cx = cx.clone();
            let p = p.clone();
            async move { cx.client.generate(&p, 1, |_| {}).await }
        });
        let outs = futures_util::future::join_all(warmups).await;
        warm_prompt_counts.extend(outs.iter().filter_map(|o| o.usage_prompt));
        if outs.iter().all(|o| o.failure.is_some()) {
            for f in outs.iter().filter_map(|o| o.failure.as_ref()) {
                rec.errors += 1;
                *rec.error_kinds.entry(f.kind()).or_default() += 1;
            }
            let kinds: Vec<&String> = rec.error_kinds.keys().collect();
            let why = format!("every warm-up request failed ({kinds:?})");
            return failed(rec, &why);
        }
    }
    let fixed = cell.mode == Mode::FixedDuration;
    let duration = cell.duration_s.filter(|_| fixed);
    let tickets = Arc::new(AtomicU64::new(u64::from(cell.requests.unwrap_or(0))));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for slot in 0..c {
        let slot_cx = SlotCx {
            cx: cx.clone(),
            prompt: prompts.get(slot).cloned(),
            cell: cell.clone(),
            tickets: (!fixed).then(|| tickets.clone()),
        };
        tasks.push(tokio::spawn(slot_loop(
            slot_cx,
            slot,
            tx.clone(),
            stop_rx.clone(),
        )));
    }
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
    if !fixed {
        w.open_at(Instant::now(), None);
    }
    // The collector waits longer than a request's own stall timeout, so that a stalled
    // request is counted as such before the cell gives up on silence.
    let stall = cx.spec.workload.stall_timeout.0 * 2 + Duration::from_secs(1);
    let give_up = 3 * c as u64 + 3;
    let mut last_tick = Instant::now();
    let _ = ticks.send(Tick {
        phase: "ramp",
        tok_s: None,
        window_s: 0.0,
    });
    loop {
        if last_tick.elapsed() >= Duration::from_millis(250) {
            last_tick = Instant::now();
            let window_s = w.open.map_or(0.0, |o| (Instant::now() - o).as_secs_f64());
            let tok_s = (window_s > 0.0).then(|| w.tokens / window_s);
            let _ = ticks.send(Tick {
                phase: if w.open.is_some() { "window" } else { "ramp" },
                tok_s,
                window_s,
            });
        }
        let close = w.close;
        let next = async {
            match close {
                Some(at) if fixed => tokio::time::timeout_at(at, rx.recv()).await.ok(),
                _ => tokio::time::timeout(stall, rx.recv()).await.ok(),
            }
        };
        match next.await {
            Some(Some(ev)) => w.event(ev, duration),
            Some(None) => break,
            None if close.is_some_and(|at| Instant::now() >= at) => break,
            None => {
                let _ = stop_tx.send(true);
                rec.errors = w.errors;
                rec.error_kinds = w.error_kinds.clone();
                let silent = crate::spec::Span(stall);
                return failed(rec, &format!("no stream produced a token for {silent}"));
            }
        }
        if w.open.is_none() && w.early_failures >= give_up {
            let _ = stop_tx.send(true);
            rec.errors = w.errors;
            rec.error_kinds = w.error_kinds.clone();
            return failed(rec, "every request failed before the window opened");
        }
    }
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    w.finish(Instant::now());
    if let (Some(lines), Some(saved)) = (&cx.requests, w.saved.take())
        && let Ok(mut lines) = lines.lock()
    {
        lines.extend(saved.into_iter().map(|mut v| {
            v["cell"] = serde_json::Value::from(cell.id.clone());
            v
        }));
    }
    fill(rec, &mut w, cell, &cx.spec)
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
    let max_tokens = s.cx.spec.workload.max_output_tokens.0;
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
fn fill(mut rec: Record, w: &mut Window, cell: &Cell, spec: &Spec) -> Record {
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
    if w.avg_active() < spec.validity.min_active_fraction * c {
        reasons.push(format!(
            "average active requests {:.2} < {} x {}",
            w.avg_active(),
            spec.validity.min_active_fraction,
            cell.concurrency
        ));
    }
    if let Some(d) = cell.duration_s.filter(|_| cell.mode == Mode::FixedDuration)
        && len + 1e-3 < d
    {
        reasons.push(format!("window {len:.3} s shorter than {d} s"));
    }
    if w.tokens <= 0.0 {
        reasons.push("no tokens inside the window".into());
    }
    let started = w.started.max(1);
    let rate = w.errors as f64 / started as f64;
    if rate > spec.validity.max_error_rate {
        reasons.push(format!(
            "error rate {rate:.3} > {}",
            spec.validity.max_error_rate
        ));
    }
    verdict(rec, w.errors, started, &reasons)
}
