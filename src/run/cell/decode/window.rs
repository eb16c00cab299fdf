//! A decode cell: prompts for C slots and their warm-up, C closed-loop slots each counting
//! its own chunks against the cell's shared clock (`clock.rs`), the window closing on time
//! with in-flight requests cancelled, and the tallies merged into the record
//! (`filled`; docs/results.md).

use super::{Clock, Gauge, Sink, Tally, merge};
use crate::client::Prepared;
use crate::footprint::{Cpu, reset_peak_rss};
use crate::plan::{Cell, Decode};
use crate::results::Record;
use crate::results::fill::window::fill;
use crate::run::cell::{CellFailure, Ctx, failed, fresh_reusable, hit_expected, rand_tag};
use crate::rundir::{Request, RequestLine, WindowRequest};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Where a decode cell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Each slot's prompt sent once before the window.
    WarmUp,
    /// Waiting for all C streams to produce tokens.
    Ramp,
    /// The window is open.
    Window,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::WarmUp => "warm-up",
            Step::Ramp => "ramp",
            Step::Window => "window",
        })
    }
}

/// Live state of a decode cell, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// Where the cell is.
    pub step: Step,
    /// Output tok/s so far in the window.
    pub tok_s: Option<f64>,
    /// Seconds of the window so far.
    pub window_s: f64,
}

impl Tick {
    fn at(step: Step) -> Tick {
        Tick {
            step,
            tok_s: None,
            window_s: 0.0,
        }
    }
}

/// What the slots of a cell share.
struct Shared {
    clock: Arc<Clock>,
    sink: Arc<Sink>,
    gauges: Arc<[Gauge]>,
}

/// Measure a decode cell under `load`, reporting its progress on `ticks`.
pub async fn decode(
    cx: Arc<Ctx>,
    cell: &Cell,
    load: Decode,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    let _ = ticks.send(Tick::at(Step::WarmUp));
    let c = cell.concurrency as usize;
    let (bodies, warm_prompt_counts) = match warm_up(&cx, cell, &mut rec).await {
        Ok(warm) => warm,
        Err(why) => return failed(rec, &why),
    };
    let (window, tickets) = match load {
        Decode::FixedDuration(d) => (Some(d), None),
        Decode::RequestCount(n) => (None, Some(Arc::new(AtomicU64::new(u64::from(n))))),
    };
    reset_peak_rss();
    let start = Instant::now();
    let shared = Shared {
        clock: Arc::new(Clock::new(start, c, window)),
        sink: Arc::new(Sink::default()),
        gauges: (0..c).map(|_| Gauge::default()).collect(),
    };
    if window.is_none() {
        shared.clock.open_at(start);
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut set = spawn_slots(&cx, cell, &shared, &bodies, &tickets, &stop_rx);
    let mut tallies = Vec::with_capacity(c);
    let mut cpu = Cpu::default();
    let watched = watch_cell(
        &shared,
        &mut set,
        &mut tallies,
        &cx,
        window,
        &ticks,
        &mut cpu,
    )
    .await;
    let _ = stop_tx.send(true);
    let tallies = collect(&cx, &shared, set, tallies).await;
    let (prompts, expected) = (&warm_prompt_counts, cell.prompt_tokens);
    let (mut totals, saved) = merge(&shared.clock, &shared.sink, tallies, prompts, expected);
    if let Err(why) = watched {
        rec.errors = totals.errors;
        rec.error_kinds = totals.error_kinds.clone();
        return failed(rec, &why);
    }
    keep_requests(&cx, cell, saved);
    rec.client = cpu.usage(&cx.probe, totals.length_s);
    let mut rec = fill(rec, &mut totals, cell, window, &cx.workload);
    rec.by_endpoint = totals
        .shares
        .fields(&cx.client.endpoints(), totals.length_s);
    rec.by_adapter = (totals.shares).adapter_fields(&cx.client.adapters(), totals.length_s);
    rec.prefix_hit_expected = hit_expected_of(&cx, cell, rec.requests_started);
    rec
}

/// `prefix_hit_expected` of a window of `n` requests: warm, every one resends a prompt sent
/// before; cold, new prompts.
fn hit_expected_of(cx: &Ctx, cell: &Cell, n: u64) -> Option<f64> {
    let tokens = n * cell.prompt_tokens;
    let reusable = if cx.workload.warm() {
        tokens
    } else {
        fresh_reusable(&cx.workload, n)
    };
    hit_expected(&cx.workload, reusable, tokens)
}

/// End the cell now (the window closes, if it has not), and gather the slots' tallies,
/// closed then (a slot still running after 5 s is left out).
async fn collect(
    cx: &Ctx,
    shared: &Shared,
    mut set: JoinSet<Tally>,
    mut tallies: Vec<Tally>,
) -> Vec<Tally> {
    let at = Instant::now();
    shared.clock.end_at(at);
    cx.marks.close(shared.clock.close().unwrap_or(at));
    while let Ok(Some(joined)) = tokio::time::timeout(Duration::from_secs(5), set.join_next()).await
    {
        tallies.extend(joined.ok());
    }
    tallies.into_iter().map(|t| t.close(at)).collect()
}

/// One task per slot, each with its tally, sending until `stop` (or its tickets run out).
fn spawn_slots(
    cx: &Arc<Ctx>,
    cell: &Cell,
    shared: &Shared,
    bodies: &[Prepared],
    tickets: &Option<Arc<AtomicU64>>,
    stop: &watch::Receiver<bool>,
) -> JoinSet<Tally> {
    let mut set = JoinSet::new();
    for slot in 0..cell.concurrency as usize {
        let mut tally = Tally::new(
            slot,
            shared.clock.clone(),
            shared.sink.clone(),
            shared.gauges.clone(),
        );
        if cx.requests.is_some() {
            tally.save_requests(shared.clock.base());
        }
        if cx.workload.slo.itl.is_some() {
            tally.keep_itl();
        }
        let slot_cx = SlotCx {
            cx: cx.clone(),
            body: bodies.get(slot).cloned(),
            cell: cell.clone(),
            tickets: tickets.clone(),
        };
        set.spawn(slot_loop(slot_cx, slot, tally, stop.clone()));
    }
    set
}

/// The window's per-request detail, kept for `requests.jsonl` (`--save-requests`).
fn keep_requests(cx: &Ctx, cell: &Cell, saved: Vec<WindowRequest>) {
    if let Some(lines) = &cx.requests
        && let Ok(mut lines) = lines.lock()
    {
        lines.extend(
            saved
                .into_iter()
                .map(|w| RequestLine::unnumbered(&cell.id, Request::Window(w))),
        );
    }
}

/// With a warm prompt cache: every slot's prompt, sent once, together, before the window.
/// Returns each slot's measured request, serialized once, and the prompt lengths the server
/// counted; an error when every warm-up request failed (their failures counted in `rec`).
async fn warm_up(
    cx: &Arc<Ctx>,
    cell: &Cell,
    rec: &mut Record,
) -> Result<(Vec<Prepared>, Vec<u64>), CellFailure> {
    cx.prime(rec).await?;
    if !cx.workload.warm() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut warm = Vec::new();
    let mut bodies = Vec::new();
    for slot in 0..cell.concurrency as usize {
        let prompt = cx
            .slot_prompt(cell.context, cell.prompt_tokens, slot)
            .await?;
        // The warm-up and the measured requests share the prompt's bytes.
        let body = cx.client.prepare(&prompt, cx.workload.max_output_tokens);
        warm.push(body.with_max_tokens(1));
        bodies.push(body);
    }
    let outs = cx
        .send_once(&warm, rec)
        .await
        .map_err(|kinds| CellFailure::WarmUp { kinds })?;
    let counts = outs.iter().filter_map(|o| o.usage_prompt).collect();
    Ok((bodies, counts))
}

/// Watch the cell from outside the streams until the window closes (fixed duration) or
/// every slot is done (request count): ticks sampled from the slots' gauges a few times a
/// second, the close on time, slots that end early collected. An error when the streams go
/// silent or every request fails before the window opens.
async fn watch_cell(
    shared: &Shared,
    set: &mut JoinSet<Tally>,
    done: &mut Vec<Tally>,
    cx: &Ctx,
    window: Option<Duration>,
    ticks: &mpsc::UnboundedSender<Tick>,
    cpu: &mut Cpu,
) -> Result<(), CellFailure> {
    // The cell waits longer than a request's own stall timeout, so that a stalled request
    // is counted as such before the cell gives up on silence.
    let stall = cx.workload.stall_timeout.0 * 2 + Duration::from_secs(1);
    let give_up = 3 * shared.gauges.len() as u64 + 3;
    let clock = &shared.clock;
    let mut every = tokio::time::interval(Duration::from_millis(250));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut seen, mut quiet_since) = (0u64, Instant::now());
    let _ = ticks.send(Tick::at(Step::Ramp));
    loop {
        if cpu.open.is_none()
            && let Some(open) = clock.open()
        {
            cpu.open = cx.probe.sample();
            cx.marks.open(open);
        }
        let close = clock.close().filter(|_| window.is_some());
        tokio::select! {
            () = sleep_until_some(close) => {
                cpu.close = cx.probe.sample();
                return Ok(());
            }
            () = clock.opened.notified(), if clock.open().is_none() => {}
            joined = set.join_next() => match joined {
                None => {
                    cpu.close = cx.probe.sample();
                    return Ok(());
                }
                Some(t) => done.extend(t.ok()),
            },
            _ = every.tick() => {
                let now = Instant::now();
                let _ = ticks.send(tick(shared, now));
                let events = shared.gauges.iter().map(|g| g.events.load(Relaxed)).sum();
                if events != seen {
                    (seen, quiet_since) = (events, now);
                } else if now - quiet_since >= stall {
                    return Err(CellFailure::Silent(crate::plan::vocab::Span(stall)));
                }
                if clock.open().is_none() && clock.early_failures.load(Relaxed) >= give_up {
                    return Err(CellFailure::BeforeWindow);
                }
            }
        }
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn tick(shared: &Shared, now: Instant) -> Tick {
    let open = shared.clock.open();
    let window_s = open.map_or(0.0, |o| now.saturating_duration_since(o).as_secs_f64());
    let tokens: u64 = shared.gauges.iter().map(|g| g.tokens.load(Relaxed)).sum();
    Tick {
        step: if open.is_some() {
            Step::Window
        } else {
            Step::Ramp
        },
        tok_s: (window_s > 0.0).then(|| tokens as f64 / window_s),
        window_s,
    }
}

struct SlotCx {
    cx: Arc<Ctx>,
    body: Option<Prepared>,
    cell: Cell,
    tickets: Option<Arc<AtomicU64>>,
}

impl SlotCx {
    /// The slot's next request: its warm prompt's, or a fresh prompt's.
    async fn next(&self, slot: usize, n: u64) -> Option<Prepared> {
        if let Some(b) = &self.body {
            return Some(b.clone());
        }
        let c = &self.cell;
        let tag = format!(
            "cold{}c{}s{slot}r{n}n{}",
            c.context,
            c.concurrency,
            rand_tag()
        );
        let prompt = self.cx.fresh_prompt(c.prompt_tokens, &tag).await.ok()?;
        Some(
            self.cx
                .client
                .prepare(&prompt, self.cx.workload.max_output_tokens),
        )
    }

    fn ticket(&self) -> bool {
        self.tickets
            .as_ref()
            .is_none_or(|t| t.fetch_update(SeqCst, SeqCst, |v| v.checked_sub(1)).is_ok())
    }
}

/// One slot: a request, then the next as soon as it ends, until stopped (closed loop). Its
/// tally counts every chunk on this task.
async fn slot_loop(
    s: SlotCx,
    slot: usize,
    mut tally: Tally,
    mut stop: watch::Receiver<bool>,
) -> Tally {
    let mut backoff = 0u32;
    for n in 0.. {
        if *stop.borrow() || !s.ticket() {
            break;
        }
        let Some(body) = s.next(slot, n).await else {
            break;
        };
        let to = s.cx.client.route();
        tally.start(n, Instant::now(), (to.index(), to.adapter()));
        let out = {
            let request = s.cx.client.generate_via(&to, &body, |c| tally.chunk(c));
            tokio::select! {
                out = request => Some(out),
                _ = stop.changed() => None,
            }
        };
        let Some(out) = out else { break };
        tally.end(&out, Instant::now());
        // After a failure, back off (50 ms, doubling to 1 s) instead of hammering a server
        // that may be gone.
        if out.failure.is_none() {
            backoff = 0;
            continue;
        }
        // A rate limit's `retry-after` is respected before the next request.
        let wait =
            Duration::from_millis(50 << backoff.min(4)).max(out.retry_after.unwrap_or_default());
        backoff += 1;
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.changed() => break,
        }
    }
    tally
}
