//! A session cell (docs/results.md): conversations of several turns, each later turn
//! resending the whole conversation so far — every answer exactly as received — plus a new
//! user message, after a think time. Closed loop: U users each run sessions back to back;
//! open loop: sessions start at the arrivals of `phases.load`'s process. At the window's
//! end the turns in flight are cancelled; the turns that ended inside it are the cell's.

use super::{Ctx, Step, Tick, failed, rand_tag};
use crate::client::{Chunk, Prepared};
use crate::footprint::{Cpu, reset_peak_rss};
use crate::plan::Cell;
use crate::plan::sessions::SessionLoad;
use crate::plan::{Bound, OpenLoad};
use crate::prompt::user_words;
use crate::results::Record;
use crate::results::fill::sessions::{SessionContext, Turn, fill, first_turn_reason};
use crate::results::fill::verdict::{open_reasons, verdict};
use crate::rng::Rng;
use crate::run::pacer::dispatch::Progress;
use crate::rundir::{Request, RequestLine, TurnRequest};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What the sessions of a cell share.
struct Shared {
    cx: Arc<Ctx>,
    cell: Cell,
    load: SessionLoad,
    turns: Mutex<Vec<Turn>>,
    started: AtomicU64,
    completed: AtomicU64,
    completed_turns: AtomicU64,
    at_max_len: AtomicU64,
    /// Sessions still to start, with a count bound.
    to_start: AtomicU64,
    progress: Arc<Progress>,
    tag: u64,
}

/// Measure the session cell `cell` under `load`.
pub async fn sessions(
    cx: Arc<Ctx>,
    cell: &Cell,
    load: SessionLoad,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    if let Err(e) = cx.prime(&mut rec).await {
        return failed(rec, &e);
    }
    let shared = Arc::new(Shared {
        cx: cx.clone(),
        cell: cell.clone(),
        load,
        turns: Mutex::new(Vec::new()),
        started: AtomicU64::new(0),
        completed: AtomicU64::new(0),
        completed_turns: AtomicU64::new(0),
        at_max_len: AtomicU64::new(0),
        to_start: AtomicU64::new(load.sessions.map_or(u64::MAX, u64::from)),
        progress: Arc::new(Progress::default()),
        tag: rand_tag(),
    });
    reset_peak_rss();
    let mut cpu = Cpu {
        open: cx.probe.sample(),
        ..Cpu::default()
    };
    let start = Instant::now();
    cx.marks.open_cold(start);
    run_window(&shared, start, &ticks).await;
    let end = Instant::now();
    cpu.close = cx.probe.sample();
    cx.marks.close(end);
    let turns = shared.turns.lock().map(|t| t.clone()).unwrap_or_default();
    let seen = SessionContext {
        started: shared.started.load(Relaxed),
        completed: shared.completed.load(Relaxed),
        completed_turns: shared.completed_turns.load(Relaxed),
        at_max_len: shared.at_max_len.load(Relaxed),
        endpoints: &cx.client.endpoints(),
        adapters: &cx.client.adapters(),
        slo: &cx.workload.slo,
        window_s: (end - start).as_secs_f64(),
    };
    fill(&mut rec, &turns, &seen);
    keep_turns(&cx, cell, &turns, start);
    rec.client = cpu.usage(&cx.probe, rec.measured_s.unwrap_or(0.0));
    let mut reasons = open_reasons(&rec, &cx.workload.validity);
    reasons.extend(first_turn_reason(&turns, cell.prompt_tokens));
    let (errors, started) = (rec.errors, rec.requests_started);
    verdict(rec, errors, started, &reasons)
}

/// Each turn's times for `requests.jsonl` (`--save-requests`), relative to the window's
/// start, in the order they ended.
fn keep_turns(cx: &Ctx, cell: &Cell, turns: &[Turn], start: Instant) {
    let Some(lines) = &cx.requests else { return };
    let Ok(mut lines) = lines.lock() else { return };
    let rel = |i: Instant| i.saturating_duration_since(start).as_secs_f64();
    let several = cx.client.endpoints().len() > 1;
    for t in turns {
        let request = Request::Turn(TurnRequest {
            session: t.session,
            turn: t.turn,
            sent_s: rel(t.sent),
            first_token_s: t.first.map(rel),
            last_token_s: t.last.map(rel),
            end_s: rel(t.end),
            prompt_tokens: t.input,
            output_tokens: t.tokens,
            usage_prompt_tokens: t.usage_input,
            usage_cached_tokens: t.cached,
            error: t.failure.clone(),
            itl_us: t.gaps.clone(),
            endpoint: several.then_some(t.endpoint),
        });
        lines.push(RequestLine::unnumbered(&cell.id, request));
    }
}

/// Start the users (or the arrivals) and run until the window closes or, with a count of
/// sessions, until every one has ended; progress four times a second.
async fn run_window(s: &Arc<Shared>, start: Instant, ticks: &mpsc::UnboundedSender<Tick>) {
    let mut set = JoinSet::new();
    match s.load.users {
        Some(u) => {
            for user in 0..u {
                set.spawn(user_loop(s.clone(), u64::from(user)));
            }
        }
        None => {
            set.spawn(arrivals(s.clone(), start));
        }
    }
    let end = s
        .load
        .duration_s
        .map(|d| start + Duration::from_secs_f64(d));
    let mut every = tokio::time::interval(Duration::from_millis(250));
    let close = async {
        match end {
            Some(e) => tokio::time::sleep_until(e).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(close);
    loop {
        tokio::select! {
            joined = set.join_next() => if joined.is_none() { break },
            () = &mut close => break,
            _ = every.tick() => tick(s, start, ticks),
        }
    }
    // Turns in flight at the close are cancelled, as in a decode window.
    set.abort_all();
}

fn tick(s: &Shared, start: Instant, ticks: &mpsc::UnboundedSender<Tick>) {
    let window_s = start.elapsed().as_secs_f64();
    let tokens = s.progress.tokens.load(Relaxed);
    let _ = ticks.send(Tick {
        step: Step::Window,
        tok_s: (window_s > 0.0).then(|| tokens as f64 / window_s),
        window_s,
    });
}

/// One user: sessions back to back while there are sessions to start.
async fn user_loop(s: Arc<Shared>, user: u64) {
    let mut rng = Rng::new(s.cx.workload.seed ^ user.wrapping_mul(0x9e37_79b9) ^ 0x5e55);
    let mut n = 0u64;
    while take_one(&s) {
        session(&s, user << 32 | n, &mut rng).await;
        n += 1;
    }
}

/// Open loop: a session started at each arrival of the cell's process.
async fn arrivals(s: Arc<Shared>, start: Instant) {
    let Some(rate) = s.load.rate else { return };
    let bound = match (s.load.sessions, s.load.duration_s) {
        (Some(n), _) => Bound::Requests(n),
        (None, d) => Bound::Duration(Duration::from_secs_f64(d.unwrap_or(0.0))),
    };
    let process = OpenLoad {
        rate,
        arrivals: s.load.arrivals,
        burstiness: s.load.burstiness,
        max_concurrency: None,
        bound,
        input: None,
        output: None,
    };
    let seed = s.cx.workload.seed ^ 0x5e55_1045;
    let schedule = crate::plan::arrivals::schedule(&process, seed);
    let mut set = JoinSet::new();
    for (i, offset) in schedule.into_iter().enumerate() {
        tokio::time::sleep_until(start + offset).await;
        if !take_one(&s) {
            break;
        }
        let s = s.clone();
        set.spawn(async move {
            let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
            session(&s, i as u64, &mut rng).await;
        });
    }
    while set.join_next().await.is_some() {}
}

/// Whether another session may start (a count bound takes one).
fn take_one(s: &Shared) -> bool {
    s.to_start
        .fetch_update(Relaxed, Relaxed, |left| left.checked_sub(1))
        .is_ok()
}

/// The conversation so far, as the next request sends it.
enum Conversation {
    /// A completions prompt: the first prompt, then each answer and user message.
    Text(String),
    /// Chat messages with their roles.
    Chat(Vec<Value>),
}

impl Conversation {
    fn push_answer(&mut self, answer: &str) {
        match self {
            Conversation::Text(t) => t.push_str(answer),
            Conversation::Chat(m) => m.push(json!({"role": "assistant", "content": answer})),
        }
    }

    fn push_user(&mut self, text: &str) {
        match self {
            Conversation::Text(t) => {
                t.push('\n');
                t.push_str(text);
            }
            Conversation::Chat(m) => m.push(json!({"role": "user", "content": text})),
        }
    }

    fn prepare(&self, cx: &Ctx, max_tokens: u64) -> Prepared {
        match self {
            Conversation::Text(t) => cx.client.prepare(t, max_tokens),
            Conversation::Chat(m) => cx
                .client
                .prepare_messages(&Value::Array(m.clone()), max_tokens),
        }
        .keeping_text()
    }
}

/// One session: its turns, each after the answer to the one before and a think time.
async fn session(s: &Shared, id: u64, rng: &mut Rng) {
    let (cx, load) = (&s.cx, &s.load);
    let span = u64::from(load.turns_max - load.turns_min.min(load.turns_max));
    let turns = load.turns_min + (rng.unit() * (span + 1) as f64).floor().min(span as f64) as u32;
    s.started.fetch_add(1, Relaxed);
    let tag = format!("{}s{id}x{}", s.cell.id, s.tag);
    let first = match cx.fresh_prompt(s.cell.prompt_tokens, &tag).await {
        Ok(p) => p,
        Err(_) => return,
    };
    let mut convo = if cx.client.chat() {
        Conversation::Chat(vec![json!({"role": "user", "content": first})])
    } else {
        Conversation::Text(first)
    };
    let mut input = s.cell.prompt_tokens;
    let mut reusable = super::fresh_reusable(&cx.workload, 1);
    let mut server = None;
    for turn in 1..=turns {
        if turn > 1 {
            think(load, rng).await;
            let next = input + load.user_tokens;
            if cx
                .workload
                .max_model_len
                .is_some_and(|m| next + load.output_tokens > m)
            {
                s.at_max_len.fetch_add(1, Relaxed);
                return;
            }
            convo.push_user(&user_words(load.user_tokens, rng.unit().to_bits()));
            input = next;
        }
        // The first turn goes where the balance says; the later ones follow it.
        let to = server.map_or_else(|| cx.client.route(), |i| cx.client.route_to(i));
        server = Some(to.index());
        let t = one_turn(s, (&convo, &to), (id, turn), input, reusable).await;
        let Some((answer, t)) = t else { return };
        reusable = t.input + t.tokens;
        input = t.input + t.tokens;
        convo.push_answer(&answer);
    }
    s.completed.fetch_add(1, Relaxed);
    s.completed_turns.fetch_add(u64::from(turns), Relaxed);
}

/// The pause before a later turn.
async fn think(load: &SessionLoad, rng: &mut Rng) {
    let secs = if load.think_drawn {
        load.think_s * rng.exp()
    } else {
        load.think_s
    };
    if secs > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
}

/// Send one turn and keep what it saw; its answer as received, unless it failed.
async fn one_turn(
    s: &Shared,
    (convo, to): (&Conversation, &crate::client::Route),
    (session, turn): (u64, u32),
    input: u64,
    reusable: u64,
) -> Option<(String, Turn)> {
    let body = convo.prepare(&s.cx, s.load.output_tokens);
    let mut times = crate::results::fill::gaps::Gaps::default();
    let out =
        s.cx.client
            .generate_via(to, &body, |c: Chunk| times.chunk(&c))
            .await;
    let tokens = out.usage_completion.unwrap_or(out.counted);
    let (first, last) = (times.first(), times.last());
    let t = Turn {
        turn,
        sent: out.sent,
        first,
        last,
        tokens,
        input: out.usage_prompt.unwrap_or(input),
        reusable: reusable.min(out.usage_prompt.unwrap_or(input)),
        usage_input: out.usage_prompt,
        cached: out.usage_cached,
        gaps: times.finish(tokens, out.counted),
        session,
        end: Instant::now(),
        failure: out.failure.clone(),
        endpoint: to.index(),
        adapter: to.adapter(),
    };
    s.progress.tokens.fetch_add(tokens, Relaxed);
    if let Ok(mut turns) = s.turns.lock() {
        turns.push(t.clone());
    }
    if t.failure.is_some() {
        return None;
    }
    Some((out.text.unwrap_or_default(), t))
}
