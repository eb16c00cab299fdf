//! The open-loop cell skeleton that load and replay cells share: given every request's body,
//! its exact prompt length and when it is due, the driver sends them (`run/pacer/`) while the
//! client's own footprint and the engine's window are marked, progress is reported, the
//! record is filled from the requests' times (`results::fill`), the times are kept for
//! `requests.jsonl`, and the cell ends with its verdict.

use super::{Ctx, Step, Tick};
use crate::client::Prepared;
use crate::footprint::{Cpu, reset_peak_rss};
use crate::plan::{Cell, OpenLoad};
use crate::results::Record;
use crate::results::fill::verdict::{open_reasons, verdict};
use crate::results::fill::{Finished, fill, shares};
use crate::run::pacer::dispatch::{Progress, dispatch};
use crate::rundir::{OpenRequest, Request, RequestLine};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What an open-loop cell sends: every request's body and exact prompt length (0: not
/// exact), and when each is due after the first arrival.
pub(super) struct Sends {
    /// The requests, prepared before the first arrival.
    pub bodies: Vec<Prepared>,
    /// Their exact prompt lengths.
    pub prompts: Vec<u64>,
    /// When each is due.
    pub schedule: Vec<Duration>,
}

/// Send `sends` under `load` (its rate offered and `max_concurrency`) and fill `rec` from
/// what the requests saw: the driver's fields, each server's share, the client's footprint;
/// the requests kept for `requests.jsonl` when asked for. Returns the requests' times.
pub(super) async fn measure(
    cx: &Ctx,
    cell: &Cell,
    rec: &mut Record,
    sends: Sends,
    load: &OpenLoad,
    progress: Arc<Progress>,
    ticks: &mpsc::UnboundedSender<Tick>,
) -> Finished {
    reset_peak_rss();
    let mut cpu = Cpu {
        open: cx.probe.sample(),
        ..Cpu::default()
    };
    // The engine's view covers the arrivals only, not the sends before them (a warm pool's
    // prefills, the primed prefixes).
    cx.marks.open_cold(tokio::time::Instant::now());
    let run = dispatch(
        &cx.client,
        sends.bodies,
        sends.prompts,
        sends.schedule,
        load.max_concurrency,
        progress.clone(),
    );
    let finished = watch(run, &progress, ticks).await;
    cpu.close = cx.probe.sample();
    cx.marks.close(tokio::time::Instant::now());
    fill(rec, &finished, load, &cx.workload.slo);
    let span = rec.measured_s.unwrap_or(0.0);
    let shares = shares(&finished.done);
    rec.by_endpoint = shares.fields(&cx.client.endpoints(), span);
    rec.by_adapter = shares.adapter_fields(&cx.client.adapters(), span);
    rec.client = cpu.usage(&cx.probe, span);
    keep_requests(cx, cell, &finished);
    finished
}

/// `rec` with its verdict: the reasons an open-loop cell is not valid, if it is not.
pub(super) fn judged(rec: Record, cx: &Ctx) -> Record {
    let reasons = open_reasons(&rec, &cx.workload.validity);
    let (errors, started) = (rec.errors, rec.requests_started);
    verdict(rec, errors, started, &reasons)
}

/// Run the cell, reporting output tok/s of the requests that ended, four times a second.
async fn watch(
    run: impl std::future::Future<Output = Finished>,
    progress: &Progress,
    ticks: &mpsc::UnboundedSender<Tick>,
) -> Finished {
    tokio::pin!(run);
    let start = tokio::time::Instant::now();
    let mut every = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tokio::select! {
            finished = &mut run => return finished,
            _ = every.tick() => {
                let window_s = start.elapsed().as_secs_f64();
                let tokens = progress.tokens.load(std::sync::atomic::Ordering::Relaxed);
                let _ = ticks.send(Tick {
                    step: Step::Window,
                    tok_s: (window_s > 0.0).then(|| tokens as f64 / window_s),
                    window_s,
                });
            }
        }
    }
}

/// Each request's times for `requests.jsonl` (`--save-requests`), relative to the first
/// arrival.
fn keep_requests(cx: &Ctx, cell: &Cell, f: &Finished) {
    let Some(lines) = &cx.requests else { return };
    let Ok(mut lines) = lines.lock() else { return };
    let rel = |i: tokio::time::Instant| i.saturating_duration_since(f.start).as_secs_f64();
    for d in &f.done {
        let request = Request::Open(OpenRequest {
            due_s: rel(d.due),
            admitted_s: rel(d.admitted),
            sent_s: rel(d.sent),
            first_token_s: d.first.map(rel),
            last_token_s: d.last.map(rel),
            end_s: rel(d.end),
            prompt_tokens: d.prompt_target,
            output_tokens: d.tokens,
            usage_prompt_tokens: d.usage_prompt,
            usage_cached_tokens: d.usage_cached,
            error: d.failure.clone(),
            itl_us: d.gaps.clone(),
            endpoint: (cx.client.endpoints().len() > 1).then_some(d.endpoint),
            adapter: d.adapter,
        });
        lines.push(RequestLine::unnumbered(&cell.id, request));
    }
}
