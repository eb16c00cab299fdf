//! One response's stream: tokens from the driver become vLLM-shaped SSE chunks (several
//! tokens per chunk when asked, reasoning first in chat, usage in every chunk or in a final
//! `choices: []` chunk), or one JSON body when not streaming. Fault options cut or stall a
//! stream here. Dropping the stream (the client went away) cancels the request.

use super::api::{self, EndpointKind, GenRequest, Head};
use super::driver::{Ev, Msg};
use super::options::{Options, SimDialect};
use super::tokenizer::output_piece;
use axum::body::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

/// A deterministic draw in [0, 1) for request `key` (splitmix64).
pub fn unit(seed: u64, key: u64, salt: u64) -> f64 {
    let mut z =
        seed ^ key.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Tokens to generate: the limit with `ignore_eos`, else where the "model" stops by itself
/// (a length drawn from the prompt, at least `min_tokens`).
pub fn target(req: &GenRequest, limit: usize, ids: &[u32], seed: u64) -> usize {
    if req.ignore_eos {
        return limit.max(1);
    }
    let h = ids
        .iter()
        .fold(seed, |h, &t| h.rotate_left(5) ^ u64::from(t));
    let natural = 16 + (unit(h, 0, 7) * 240.0) as usize;
    natural.max(req.min_tokens).min(limit).max(1)
}

/// Whether a request of `target` tokens ends at its `limit` (`finish_reason: length`):
/// with `ignore_eos`, or when the "model" would not have stopped before it.
pub fn at_limit(req: &GenRequest, target: usize, limit: usize) -> bool {
    req.ignore_eos || target >= limit
}

/// What the stream of one request will look like.
pub struct StreamPlan {
    head: Head,
    prompt_len: usize,
    /// The prompt's tokens the engine found in its prefix cache (known at the first token).
    cached: usize,
    /// How long a prefix-cached request's first token is held (the profile's
    /// `cached_stream_s`).
    cached_hold: std::time::Duration,
    target: usize,
    finish: &'static str,
    per_chunk: usize,
    reasoning: usize,
    include_usage: bool,
    continuous: bool,
    /// Usage rides inside the last token chunk (llama.cpp) instead of a chunk of its own.
    usage_in_last: bool,
    /// The version the final chunk's `system_fingerprint` names.
    version: &'static str,
    cut_at: Option<usize>,
    stall_at: Option<usize>,
    text_seed: u64,
    /// Draft tokens proposed and accepted so far (speculative decoding): llama.cpp's last
    /// chunk reports them in its `timings`.
    drafted: Option<(usize, usize)>,
}

impl StreamPlan {
    /// Plan the stream of request `key` of (prompt tokens, tokens to generate, whether that
    /// is its limit).
    pub fn new(
        req: &GenRequest,
        opts: &Options,
        key: u64,
        (prompt_len, target, limit_hit): (usize, usize, bool),
        head: Head,
    ) -> StreamPlan {
        let point = |rate: f64, a: u64, b: u64| {
            (unit(opts.seed, key, a) < rate)
                .then(|| 1 + (unit(opts.seed, key, b) * target as f64) as usize % target.max(1))
        };
        let so = req.stream_options.unwrap_or_default();
        StreamPlan {
            reasoning: if head.kind == EndpointKind::Chat {
                opts.reasoning_tokens
            } else {
                0
            },
            head,
            prompt_len,
            cached: 0,
            cached_hold: std::time::Duration::from_secs_f64(opts.profile.cached_stream_s.max(0.0)),
            target,
            finish: if limit_hit { "length" } else { "stop" },
            per_chunk: opts.tokens_per_chunk.max(1),
            include_usage: so.include_usage && opts.dialect != SimDialect::LlamaCpp,
            // As vLLM: continuous usage only with `include_usage`.
            continuous: so.include_usage
                && so.continuous_usage_stats
                && opts.dialect == SimDialect::Vllm,
            usage_in_last: opts.dialect == SimDialect::LlamaCpp,
            version: opts.profile.version,
            cut_at: point(opts.faults.disconnect_rate, 2, 3),
            stall_at: point(opts.faults.stall_rate, 4, 5),
            text_seed: opts.seed ^ key,
            drafted: None,
        }
    }

    /// A step drafted `k` tokens, `a` of them accepted.
    fn add_drafted(&mut self, k: usize, a: usize) {
        let (dk, da) = self.drafted.unwrap_or((0, 0));
        self.drafted = Some((dk + k, da + a));
    }

    /// Hold a prefix-cached request's first token for the profile's `cached_stream_s`.
    async fn hold_cached(&self) {
        if self.cached > 0 && !self.cached_hold.is_zero() {
            tokio::time::sleep(self.cached_hold).await;
        }
    }

    fn text(&self, from: usize, to: usize) -> String {
        (from..to)
            .map(|i| format!(" {}", output_piece(self.text_seed, i)))
            .collect()
    }
}

/// Cancels the request in the engine when the response is dropped.
pub struct CancelOnDrop {
    /// The request's key.
    pub key: u64,
    /// The driver.
    pub tx: mpsc::UnboundedSender<Msg>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Cancel { key: self.key });
    }
}

struct State {
    rx: mpsc::UnboundedReceiver<Ev>,
    plan: StreamPlan,
    _guard: CancelOnDrop,
    started: bool,
    generated: usize,
    sent: usize,
    over: bool,
}

fn event(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// The SSE body.
pub fn sse(
    rx: mpsc::UnboundedReceiver<Ev>,
    plan: StreamPlan,
    guard: CancelOnDrop,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let state = State {
        rx,
        plan,
        _guard: guard,
        started: false,
        generated: 0,
        sent: 0,
        over: false,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        let item = st.next_piece().await?;
        Some((item, st))
    })
}

impl State {
    /// The next piece of the body, `None` once it has ended.
    async fn next_piece(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.over {
            return None;
        }
        let mut out = String::new();
        if !self.started {
            self.started = true;
            if self.plan.head.kind == EndpointKind::Chat {
                let p = &self.plan;
                let usage = p
                    .continuous
                    .then(|| api::running_usage(p.head.kind, p.prompt_len, 0));
                out.push_str(&event(&p.head.role_chunk(usage)));
            }
        }
        loop {
            match self.rx.recv().await {
                Some(Ev::Cached(n)) => {
                    self.plan.cached = n;
                    self.plan.hold_cached().await;
                }
                Some(Ev::Drafted(k, a)) => self.plan.add_drafted(k, a),
                Some(Ev::Tokens(n)) => {
                    if let Some(piece) = self.token(&mut out, n).await {
                        return Some(piece);
                    }
                }
                Some(Ev::Done) => {
                    self.over = true;
                    return Some(Ok(self.done(out)));
                }
                None => {
                    self.over = true;
                    return Some(Err(std::io::Error::other("the engine stopped")));
                }
            }
        }
    }

    /// `n` more tokens of one step: the piece to send when a chunk is due (or the fault
    /// that ends the stream); a stalled stream never returns.
    async fn token(&mut self, out: &mut String, n: usize) -> Option<Result<Bytes, std::io::Error>> {
        let from = self.generated;
        self.generated += n.max(1);
        let hit = |at: Option<usize>| at.is_some_and(|a| a > from && a <= self.generated);
        if hit(self.plan.stall_at) {
            // A stalled stream: the connection stays open, nothing more comes.
            std::future::pending::<()>().await;
        }
        if hit(self.plan.cut_at) {
            self.over = true;
            return Some(Err(std::io::Error::other(
                "simulated disconnect (fault option `disconnect_rate`)",
            )));
        }
        let pending = self.generated - self.sent;
        let boundary = hit(Some(self.plan.reasoning));
        if pending >= self.plan.per_chunk || boundary || self.generated == self.plan.target {
            out.push_str(&flush(self));
            return Some(Ok(Bytes::from(std::mem::take(out))));
        }
        None
    }

    /// The last piece: tokens not sent yet, the usage chunk if asked for, `[DONE]`.
    fn done(&mut self, mut out: String) -> Bytes {
        out.push_str(&flush(self));
        if self.plan.include_usage {
            let usage = api::usage(self.plan.prompt_len, self.generated, self.plan.cached);
            let chunk = self.plan.head.usage_chunk(usage, self.plan.version);
            out.push_str(&event(&chunk));
        }
        out.push_str("data: [DONE]\n\n");
        Bytes::from(out)
    }
}

/// The chunk(s) for the tokens generated since the last one.
fn flush(st: &mut State) -> String {
    let (from, to) = (st.sent, st.generated);
    if from == to {
        return String::new();
    }
    st.sent = to;
    let p = &st.plan;
    let finish = (to >= p.target).then_some(p.finish);
    let last_usage = p.usage_in_last && finish.is_some();
    let usage = if last_usage {
        Some(api::usage(p.prompt_len, to, p.cached))
    } else {
        p.continuous
            .then(|| api::running_usage(p.head.kind, p.prompt_len, to))
    };
    let reasoning = to <= p.reasoning;
    let mut chunk = p
        .head
        .token_chunk(&p.text(from, to), reasoning, finish, usage);
    if let Some((k, a)) = p.drafted.filter(|_| last_usage) {
        chunk["timings"] = serde_json::json!({"draft_n": k, "draft_n_accepted": a});
    }
    event(&chunk)
}

/// The whole answer of a non-streamed request; `None` when the engine stopped first.
pub async fn collect(
    mut rx: mpsc::UnboundedReceiver<Ev>,
    mut plan: StreamPlan,
    _guard: CancelOnDrop,
) -> Option<Value> {
    let mut generated = 0;
    let mut done = false;
    while let Some(ev) = rx.recv().await {
        match ev {
            Ev::Cached(n) => {
                plan.cached = n;
                plan.hold_cached().await;
            }
            Ev::Tokens(n) => generated += n,
            Ev::Drafted(..) => {}
            Ev::Done => {
                done = true;
                break;
            }
        }
    }
    if !done {
        return None;
    }
    let split = plan.reasoning.min(generated);
    let reasoning = plan.text(0, split);
    let content = plan.text(split, generated);
    Some(plan.head.full(
        reasoning.trim_start(),
        &content,
        plan.finish,
        api::usage(plan.prompt_len, generated, plan.cached),
    ))
}
