//! The real-time driver: one OS thread owns the [`Engine`], takes submissions and
//! cancellations from the HTTP handlers over a channel, runs scheduler steps and sleeps so
//! that each step ends when the engine's virtual clock says, then hands every emitted token
//! to the stream of its request. It is a thread, not a task, because a thread sleeps with
//! microsecond precision where the async timer rounds to milliseconds; deadlines are
//! absolute, so jitter does not accumulate.

use super::engine::{Engine, NewRequest, ReqId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant;
use tokio::sync::mpsc;

/// What a request's stream receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// One more generated token.
    Token,
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
        /// Where its tokens go.
        tx: mpsc::UnboundedSender<Ev>,
    },
    /// The client went away.
    Cancel {
        /// The handler's key.
        key: u64,
    },
}

/// Engine state published for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Requests running.
    pub running: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// KV-cache usage, 0 to 1.
    pub kv_usage: f64,
    /// Prefix-cache queries, tokens.
    pub prefix_queries: u64,
    /// Prefix-cache hits, tokens.
    pub prefix_hits: u64,
    /// Prompt tokens received.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub generation_tokens: u64,
    /// Requests finished.
    pub finished: u64,
    /// Preemptions.
    pub preemptions: u64,
}

/// Run the engine until every sender is gone (call on a thread of its own).
pub fn run(
    mut engine: Engine,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    metrics: Arc<Mutex<Snapshot>>,
) {
    let mut streams: HashMap<ReqId, (u64, mpsc::UnboundedSender<Ev>)> = HashMap::new();
    let mut ids: HashMap<u64, ReqId> = HashMap::new();
    let mut finished = 0u64;
    // Real time of virtual time 0.
    let mut base = Instant::now();
    loop {
        while let Ok(msg) = rx.try_recv() {
            apply(msg, &mut engine, &mut streams, &mut ids);
        }
        if !engine.has_work() {
            publish(&engine, finished, &metrics);
            match rx.blocking_recv() {
                Some(msg) => apply(msg, &mut engine, &mut streams, &mut ids),
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
        // Publish first, so that a client that sees its request end also sees it counted.
        finished += out
            .finished
            .iter()
            .filter(|id| streams.contains_key(id))
            .count() as u64;
        publish(&engine, finished, &metrics);
        for id in &out.emitted {
            let gone = streams
                .get(id)
                .is_some_and(|(_, tx)| tx.send(Ev::Token).is_err());
            if gone {
                drop_stream(*id, &mut engine, &mut streams, &mut ids);
            }
        }
        for id in &out.finished {
            if let Some((key, tx)) = streams.remove(id) {
                let _ = tx.send(Ev::Done);
                ids.remove(&key);
            }
        }
    }
}

fn apply(
    msg: Msg,
    engine: &mut Engine,
    streams: &mut HashMap<ReqId, (u64, mpsc::UnboundedSender<Ev>)>,
    ids: &mut HashMap<u64, ReqId>,
) {
    match msg {
        Msg::Submit { key, req, tx } => {
            let id = engine.add(req);
            streams.insert(id, (key, tx));
            ids.insert(key, id);
        }
        Msg::Cancel { key } => {
            if let Some(id) = ids.get(&key).copied() {
                drop_stream(id, engine, streams, ids);
            }
        }
    }
}

fn drop_stream(
    id: ReqId,
    engine: &mut Engine,
    streams: &mut HashMap<ReqId, (u64, mpsc::UnboundedSender<Ev>)>,
    ids: &mut HashMap<u64, ReqId>,
) {
    engine.cancel(id);
    if let Some((key, _)) = streams.remove(&id) {
        ids.remove(&key);
    }
}

fn publish(engine: &Engine, finished: u64, metrics: &Mutex<Snapshot>) {
    let (prefix_queries, prefix_hits) = engine.prefix_cache();
    let snap = Snapshot {
        running: engine.running(),
        waiting: engine.waiting(),
        kv_usage: engine.kv_usage(),
        prefix_queries,
        prefix_hits,
        prompt_tokens: engine.prompt_tokens,
        generation_tokens: engine.generation_tokens,
        finished,
        preemptions: engine.preemptions,
    };
    if let Ok(mut m) = metrics.lock() {
        *m = snap;
    }
}
