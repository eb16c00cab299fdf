//! The real-time driver: one OS thread owns the [`Scheduler`], takes submissions and
//! cancellations from the HTTP handlers over a channel, runs scheduler steps and sleeps so
//! that each step ends when the engine's virtual clock says, then hands every emitted token
//! to the stream of its request. It is a thread, not a task, because a thread sleeps with
//! microsecond precision where the async timer rounds to milliseconds; deadlines are
//! absolute, so jitter does not accumulate. [`run_on_clock`] is the same driver as a task
//! on tokio's clock, for a simulator answering in-process (a test that pauses time).

use super::engine::{NewRequest, ReqId, Scheduler, StepOut};
pub use super::metrics::Snapshot;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What a request's stream receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// The prompt's tokens found in the prefix cache, sent before the first token.
    Cached(usize),
    /// More generated tokens (several in a step with speculative decoding).
    Tokens(usize),
    /// The request's draft tokens in a step, and those accepted (sent before its tokens).
    Drafted(usize, usize),
    /// The request reached its target.
    Done,
}

/// Messages from the handlers.
pub enum Msg {
    /// Start a request; `key` is the handler's name for it.
    Submit {
        /// The handler's key.
        key: u64,
        /// The request.
        req: NewRequest,
        /// When it reached the API server: vLLM's TTFT and E2E count from there.
        arrived: Instant,
        /// It ends at its limit (`finished_reason="length"`), not on its own.
        length: bool,
        /// The acceptance probability of its drafts, when the engine speculates.
        accept: Option<f64>,
        /// Where its tokens go.
        tx: mpsc::UnboundedSender<Ev>,
    },
    /// The client went away.
    Cancel {
        /// The handler's key.
        key: u64,
    },
}

/// One request's stream and its timing, as the engine's own metrics see it.
struct Stream {
    key: u64,
    tx: mpsc::UnboundedSender<Ev>,
    /// When the request reached the API server.
    arrived: Instant,
    /// When it entered the engine's queue; `None` once scheduled.
    queued: Option<Instant>,
    /// It ends at its limit.
    length: bool,
    /// When its first token left.
    first: Option<Instant>,
    /// When its last token left.
    last: Option<Instant>,
    /// Tokens sent.
    tokens: u64,
}

/// The driver's books: the open streams, and what `/metrics` counts.
struct Book {
    streams: HashMap<ReqId, Stream>,
    ids: HashMap<u64, ReqId>,
    snap: Snapshot,
    /// The label sets `vllm:lora_requests_info` was set with.
    lora_seen: super::lora::InfoSeries,
}

/// Run the engine until every sender is gone (call on a thread of its own).
pub fn run(
    mut engine: Scheduler,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    metrics: Arc<Mutex<Snapshot>>,
) {
    let mut book = Book::new(&engine);
    // Real time of virtual time 0.
    let mut base = Instant::now();
    loop {
        while let Ok(msg) = rx.try_recv() {
            book.apply(msg, &mut engine);
        }
        if !engine.has_work() {
            book.publish(&engine, &metrics);
            match rx.blocking_recv() {
                Some(msg) => book.apply(msg, &mut engine),
                None => return,
            }
            // Idle time does not exist for the engine: re-anchor its clock to now.
            base = Instant::now() - Duration::from_secs_f64(engine.now);
            continue;
        }
        let out = engine.step();
        let due = base + Duration::from_secs_f64(engine.now);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        book.step(&out, &mut engine, &metrics);
    }
}

/// [`run`] as a task on tokio's clock: each step ends with a `sleep_until` its end.
pub async fn run_on_clock(
    mut engine: Scheduler,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    metrics: Arc<Mutex<Snapshot>>,
) {
    let mut book = Book::new(&engine);
    let mut base = Instant::now();
    loop {
        while let Ok(msg) = rx.try_recv() {
            book.apply(msg, &mut engine);
        }
        if !engine.has_work() {
            book.publish(&engine, &metrics);
            match rx.recv().await {
                Some(msg) => book.apply(msg, &mut engine),
                None => return,
            }
            base = Instant::now() - Duration::from_secs_f64(engine.now);
            continue;
        }
        let out = engine.step();
        tokio::time::sleep_until(base + Duration::from_secs_f64(engine.now)).await;
        book.step(&out, &mut engine, &metrics);
    }
}

impl Book {
    fn new(engine: &Scheduler) -> Book {
        Book {
            streams: HashMap::new(),
            ids: HashMap::new(),
            snap: Snapshot::of(engine),
            lora_seen: super::lora::InfoSeries::default(),
        }
    }

    /// Hand a step's tokens to their streams and end the finished ones. The metrics are
    /// published first, so that a client that sees its request end also sees it counted.
    fn step(&mut self, out: &StepOut, engine: &mut Scheduler, metrics: &Mutex<Snapshot>) {
        let now = Instant::now();
        // The step's requests were scheduled when it began.
        let began = now
            .checked_sub(Duration::from_secs_f64(out.duration))
            .unwrap_or(now);
        for id in &out.admitted {
            if let Some(queued) = self.streams.get_mut(id).and_then(|s| s.queued.take()) {
                let waited = began.saturating_duration_since(queued);
                self.snap.queue.observe(waited.as_secs_f64());
            }
        }
        let emitted = per_request(&out.emitted);
        for (id, _) in &emitted {
            if let Some(s) = self.streams.get_mut(id) {
                match s.last {
                    None => {
                        self.snap.ttft.observe((now - s.arrived).as_secs_f64());
                        let cached = out.cached.iter().find(|(c, _)| c == id);
                        let _ = s.tx.send(Ev::Cached(cached.map_or(0, |(_, n)| *n)));
                        s.first = Some(now);
                    }
                    Some(last) => self.snap.itl.observe((now - last).as_secs_f64()),
                }
                s.last = Some(now);
            }
        }
        for (id, n) in &emitted {
            if let Some(s) = self.streams.get_mut(id) {
                s.tokens += *n as u64;
            }
        }
        for id in &out.finished {
            if let Some(s) = self.streams.get(id) {
                self.snap.count_finished(s, now);
            }
        }
        self.publish(engine, metrics);
        for (id, k, accepted) in &out.drafted {
            if let Some(s) = self.streams.get(id) {
                let _ = s.tx.send(Ev::Drafted(*k, *accepted));
            }
        }
        for (id, n) in &emitted {
            let gone = self
                .streams
                .get(id)
                .is_some_and(|s| s.tx.send(Ev::Tokens(*n)).is_err());
            if gone {
                self.drop_stream(*id, engine);
            }
        }
        for id in &out.finished {
            if let Some(s) = self.streams.remove(id) {
                let _ = s.tx.send(Ev::Done);
                self.ids.remove(&s.key);
            }
        }
    }

    fn apply(&mut self, msg: Msg, engine: &mut Scheduler) {
        match msg {
            Msg::Submit {
                key,
                req,
                arrived,
                length,
                accept,
                tx,
            } => {
                let id = engine.add(req);
                if let Some(p) = accept {
                    engine.set_acceptance(id, p);
                }
                let stream = Stream {
                    key,
                    tx,
                    arrived,
                    queued: Some(Instant::now()),
                    length,
                    first: None,
                    last: None,
                    tokens: 0,
                };
                self.streams.insert(id, stream);
                self.ids.insert(key, id);
            }
            Msg::Cancel { key } => {
                if let Some(id) = self.ids.get(&key).copied() {
                    self.drop_stream(id, engine);
                }
            }
        }
    }

    fn drop_stream(&mut self, id: ReqId, engine: &mut Scheduler) {
        engine.cancel(id);
        if let Some(s) = self.streams.remove(&id) {
            self.ids.remove(&s.key);
        }
    }

    fn publish(&mut self, engine: &Scheduler, metrics: &Mutex<Snapshot>) {
        let s = &mut self.snap;
        (s.prefix_queries, s.prefix_hits) = engine.prefix_cache();
        s.running = engine.running();
        s.waiting = engine.waiting();
        s.kv_usage = engine.kv_usage();
        s.prompt_tokens = engine.prompt_tokens;
        s.generation_tokens = engine.generation_tokens;
        s.preemptions = engine.preemptions;
        if let Some(slots) = &engine.lora {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            let (running, waiting) = (engine.running_adapters(), engine.waiting_adapters());
            s.lora = slots.render(&running, &waiting, now, &mut self.lora_seen);
        }
        s.spec = engine.drafter.as_ref().map(|d| d.counts.clone());
        if let Ok(mut m) = metrics.lock() {
            m.clone_from(s);
        }
    }
}

/// A step's emitted tokens as (request, tokens), in order (a request's tokens are
/// consecutive).
fn per_request(emitted: &[ReqId]) -> Vec<(ReqId, usize)> {
    let mut out: Vec<(ReqId, usize)> = Vec::with_capacity(emitted.len());
    for id in emitted {
        match out.last_mut().filter(|(r, _)| r == id) {
            Some((_, n)) => *n += 1,
            None => out.push((*id, 1)),
        }
    }
    out
}

impl Snapshot {
    /// The state of an idle `engine`: the KV cache's size is known at once.
    pub fn of(engine: &Scheduler) -> Snapshot {
        Snapshot {
            kv_blocks: engine.kv_blocks(),
            block_size: engine.block_size(),
            ..Snapshot::default()
        }
    }

    /// Count a request that ended at `now`: its finish reason, end-to-end latency and mean
    /// time per output token after the first (0 for a single token, as vLLM observes it).
    fn count_finished(&mut self, s: &Stream, now: Instant) {
        self.finished += 1;
        self.finished_length += u64::from(s.length);
        self.e2e.observe((now - s.arrived).as_secs_f64());
        let decode = s.first.map_or(0.0, |f| (now - f).as_secs_f64());
        let tpot = if s.tokens > 1 {
            decode / (s.tokens - 1) as f64
        } else {
            0.0
        };
        self.tpot.observe(tpot);
    }
}
