//! The open-loop driver: a dispatcher task holds the schedule and spawns each request at its
//! arrival time — woken by a timer to the microsecond ([`Timer`]), not by the runtime's
//! millisecond wheel — and each request runs as its own task on the runtime, waiting for a
//! `max_concurrency` slot when capped.
//! Every request's times come back as a [`Done`]; nothing crosses tasks per chunk.

use super::timer::Timer;
use crate::client::{Chunk, Client, Failure, Prepared};
use crate::results::fill::{Done, Finished};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, SemaphorePermit};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// Live counters of an open-loop cell, for progress displays: updated once per request,
/// when it ends.
#[derive(Debug, Default)]
pub struct Progress {
    /// Output tokens of the requests that ended.
    pub tokens: AtomicU64,
    /// Requests that ended.
    pub ended: AtomicU32,
    /// Requests sent (their tasks started), in schedule order.
    pub sent: AtomicU32,
}

/// What the dispatcher and the request tasks share.
struct Shared {
    client: Client,
    bodies: Vec<Prepared>,
    prompts: Vec<u64>,
    slots: Option<Semaphore>,
    done: Mutex<Vec<Done>>,
    aborts: Mutex<Vec<AbortHandle>>,
    in_flight: AtomicU32,
    peak: AtomicU32,
    left: AtomicU32,
    all_done: Notify,
    stop: AtomicBool,
    progress: Arc<Progress>,
    /// When the schedule starts: `hold` counts from here.
    start: Instant,
    /// µs after `start` before which no request is sent: a rate limit's `retry-after`
    /// (0: none). The wait is queue time, reported apart from TTFT.
    hold: AtomicU64,
}

/// Aborts the requests and stops the dispatcher when the cell is dropped (a stop request).
struct Guard(Arc<Shared>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.stop.store(true, Relaxed);
        if let Ok(aborts) = self.0.aborts.lock() {
            aborts.iter().for_each(AbortHandle::abort);
        }
    }
}

/// Send `bodies` (cycled; `prompts` their exact prompt lengths) at the offsets of `schedule` from a moment just ahead, with at
/// most `cap` in flight, and wait for every request to end.
pub async fn dispatch(
    client: &Client,
    bodies: Vec<Prepared>,
    prompts: Vec<u64>,
    schedule: Vec<Duration>,
    cap: Option<u32>,
    progress: Arc<Progress>,
) -> Finished {
    let n = schedule.len();
    // A few milliseconds ahead, so the first arrival is not already late.
    let start = Instant::now() + Duration::from_millis(5);
    let shared = Arc::new(Shared {
        client: client.clone(),
        bodies,
        prompts,
        slots: cap.map(|c| Semaphore::new(c as usize)),
        done: Mutex::new(Vec::with_capacity(n)),
        aborts: Mutex::new(Vec::with_capacity(n)),
        in_flight: AtomicU32::new(0),
        peak: AtomicU32::new(0),
        left: AtomicU32::new(n as u32),
        all_done: Notify::new(),
        stop: AtomicBool::new(false),
        progress,
        start,
        hold: AtomicU64::new(0),
    });
    let guard = Guard(shared.clone());
    if n > 0 && !shared.bodies.is_empty() {
        let task = tokio::spawn(dispatcher(shared.clone(), start, schedule));
        if let Ok(mut a) = shared.aborts.lock() {
            a.push(task.abort_handle());
        }
        while shared.left.load(Relaxed) > 0 {
            let notified = shared.all_done.notified();
            if shared.left.load(Relaxed) == 0 {
                break;
            }
            notified.await;
        }
    }
    let done = shared
        .done
        .lock()
        .map(|mut d| std::mem::take(&mut *d))
        .unwrap_or_default();
    drop(guard);
    Finished {
        done,
        peak: shared.peak.load(Relaxed),
        start,
    }
}

/// The dispatcher, a task on a runtime worker: each arrival's request spawned at its time
/// (a local spawn: the request starts on this worker at once, or another steals it).
async fn dispatcher(s: Arc<Shared>, start: Instant, schedule: Vec<Duration>) {
    let timer = if s.client.is_in_process() {
        Timer::on_clock()
    } else {
        Timer::new()
    };
    for (i, offset) in schedule.iter().enumerate() {
        let due = start + *offset;
        timer.until(due).await;
        if s.stop.load(Relaxed) {
            return;
        }
        let task = tokio::spawn(request(s.clone(), i, due));
        s.progress.sent.fetch_add(1, Relaxed);
        if let Ok(mut a) = s.aborts.lock() {
            a.push(task.abort_handle());
        }
    }
}

/// One request: a slot when capped, the send, every chunk timed on this task.
async fn request(s: Arc<Shared>, i: usize, due: Instant) {
    let (permit, admitted) = admit(&s, due).await;
    let admitted = held(&s, admitted).await;
    let Some(body) = s.bodies.get(i % s.bodies.len().max(1)) else {
        return;
    };
    let now = s.in_flight.fetch_add(1, Relaxed) + 1;
    s.peak.fetch_max(now, Relaxed);
    let mut times = crate::results::fill::gaps::Gaps::default();
    let to = s.client.route();
    let out = s
        .client
        .generate_via(&to, body, |c: Chunk| times.chunk(&c))
        .await;
    let end = Instant::now();
    if let Some(wait) = out
        .retry_after
        .filter(|_| out.failure == Some(Failure::RateLimited))
    {
        let until = (end + wait).saturating_duration_since(s.start).as_micros() as u64;
        s.hold.fetch_max(until, Relaxed);
    }
    s.in_flight.fetch_sub(1, Relaxed);
    drop(permit);
    let tokens = out.usage_completion.unwrap_or(out.counted);
    let (first, last) = (times.first(), times.last());
    let gaps = times.finish(tokens, out.counted);
    let done = Done {
        due,
        admitted,
        sent: out.sent.max(admitted),
        first,
        last,
        end,
        tokens,
        all_usage: out.all_usage,
        gaps,
        failure: out.failure.clone(),
        usage_prompt: out.usage_prompt,
        usage_cached: out.usage_cached,
        prompt_target: s.prompts.get(i).copied().unwrap_or_default(),
        endpoint: to.index(),
        adapter: to.adapter(),
    };
    drop(to);
    ended(&s, done);
}

/// A slot under the cap, and when it was had: at the arrival unless the cap made the
/// request wait, then when a slot was free. The lateness of the send counts from there, so
/// the hop from the dispatcher to the request's task is part of it.
async fn admit(s: &Shared, due: Instant) -> (Option<SemaphorePermit<'_>>, Instant) {
    match &s.slots {
        None => (None, due),
        Some(sem) => match sem.try_acquire() {
            Ok(p) => (Some(p), due),
            Err(_) => {
                let p = sem.acquire().await.ok();
                (p, Instant::now().max(due))
            }
        },
    }
}

/// After a rate limit, wait until its `retry-after` has passed; when the request may go.
async fn held(s: &Shared, admitted: Instant) -> Instant {
    let hold = s.hold.load(Relaxed);
    if hold == 0 {
        return admitted;
    }
    let until = s.start + Duration::from_micros(hold);
    if until <= admitted {
        return admitted;
    }
    tokio::time::sleep_until(until).await;
    until
}

/// Keep a request's times, count it for progress, and wake the cell after the last one.
fn ended(s: &Shared, done: Done) {
    s.progress.tokens.fetch_add(done.tokens, Relaxed);
    s.progress.ended.fetch_add(1, Relaxed);
    if let Ok(mut d) = s.done.lock() {
        d.push(done);
    }
    if s.left.fetch_sub(1, Relaxed) == 1 {
        s.all_done.notify_one();
    }
}
