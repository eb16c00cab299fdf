//! `/v1/completions` and `/v1/chat/completions`: a request checked as vLLM checks it (body,
//! model, prompt, length), the `failure_rate` fault drawn, the request submitted to the
//! engine's driver, and its tokens streamed back as SSE or collected into one body.

use super::api::{self, EndpointKind, GenRequest, Head};
use super::driver::Msg;
use super::engine::NewRequest;
use super::entry::Ticket;
use super::http::{Shared, error, json_response, unix_now};
use super::stream::{self, StreamPlan};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

/// A request that passed vLLM's checks.
struct Admitted {
    req: GenRequest,
    ids: Vec<u32>,
    limit: usize,
    /// The LoRA adapter its `model` names (`super::lora`).
    adapter: Option<usize>,
}

/// Serve one generation request.
pub(super) async fn generate(
    State(s): State<Arc<Shared>>,
    body: Bytes,
    kind: EndpointKind,
) -> Response {
    // vLLM's TTFT and E2E histograms count from here: the API server's time is in them.
    let arrived = tokio::time::Instant::now();
    if let Some(refused) = super::dialect::refused_field(s.opts.dialect, kind, &body) {
        return refused;
    }
    let (req, ids, limit, adapter) = match admit(&s, &body) {
        Ok(a) => (a.req, a.ids, a.limit, a.adapter),
        Err(response) => return *response,
    };
    let opts = &s.opts;
    let key = s.next_key.fetch_add(1, Ordering::Relaxed);
    if let Some(refused) = faulted(&s, key) {
        return refused;
    }
    // Held until the request is submitted: the next one enters the engine after it.
    let entered = api_server(&s, ids.len()).await;
    let target = stream::target(&req, limit, &ids, opts.seed);
    let length = stream::at_limit(&req, target, limit);
    let prompt_len = ids.len();
    let (tx, rx) = mpsc::unbounded_channel();
    let accept = acceptance(opts, &req);
    let submit = Msg::Submit {
        key,
        accept,
        req: NewRequest {
            tokens: ids,
            target,
            // A completion's answer is resent as streamed (sessions); a chat answer comes
            // back inside the template, after its reasoning.
            output_seed: (kind == EndpointKind::Completion).then_some(opts.seed ^ key),
            adapter,
        },
        arrived,
        length,
        tx,
    };
    let submitted = s.tx.send(submit);
    drop(entered);
    if submitted.is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableError",
            "the engine is shutting down",
            None,
        );
    }
    let head = head(kind, key, req.model.as_deref().unwrap_or(&opts.served_name));
    let plan = StreamPlan::new(&req, opts, key, (prompt_len, target, length), head);
    let guard = stream::CancelOnDrop {
        key,
        tx: s.tx.clone(),
    };
    if req.stream {
        respond_stream(stream::sse(rx, plan, guard))
    } else {
        respond_whole(rx, plan, guard).await
    }
}

/// The head of the answer's chunks: its id, time and model (the adapter asked for, if any:
/// vLLM answers with the name the request gave).
fn head(kind: EndpointKind, key: u64, model: &str) -> Head {
    Head {
        id: format!("{}-{key:032x}", kind.id_prefix()),
        created: unix_now(),
        model: model.to_string(),
        kind,
    }
}

/// The acceptance probability of `req`'s draft tokens, when the engine speculates: its
/// prompt's kind of text's.
fn acceptance(opts: &super::Options, req: &GenRequest) -> Option<f64> {
    let sp = opts.speculation.as_ref()?;
    let words = super::tokenizer::OUTPUT_WORDS;
    Some(sp.acceptance_of(crate::text::guess(&req.prompt_text(), &words)))
}

/// The answer of a request that did not ask to stream: its tokens collected into one body.
async fn respond_whole(
    rx: mpsc::UnboundedReceiver<super::driver::Ev>,
    plan: StreamPlan,
    guard: stream::CancelOnDrop,
) -> Response {
    match stream::collect(rx, plan, guard).await {
        Some(body) => json_response(StatusCode::OK, &body),
        None => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "the engine stopped",
            None,
        ),
    }
}

/// The answer of a request the fault options refuse: a rate limit (429) or a failure (500).
fn faulted(s: &Shared, key: u64) -> Option<Response> {
    let opts = &s.opts;
    if stream::unit(opts.seed, key, 9) < opts.faults.rate_limit_rate {
        return Some(super::dialect::rate_limited(s));
    }
    (stream::unit(opts.seed, key, 1) < opts.faults.failure_rate).then(|| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "simulated engine failure (fault option `failure_rate`)",
            None,
        )
    })
}

/// The LoRA adapter `req` names (`None`: the base model); vLLM's 404 for a model it does not
/// serve.
fn model_of(opts: &super::Options, req: &GenRequest) -> Result<Option<usize>, Box<Response>> {
    let lora = opts.lora.as_ref();
    let adapter = req
        .model
        .as_deref()
        .and_then(|m| lora.and_then(|l| super::lora::Slots::find(l, m)));
    match req
        .model
        .as_deref()
        .filter(|m| *m != opts.served_name && adapter.is_none())
    {
        Some(model) => Err(Box::new(error(
            StatusCode::NOT_FOUND,
            "NotFoundError",
            &format!(
                "The model `{model}` does not exist. Valid aliases: {}.",
                opts.served_name
            ),
            Some("model"),
        ))),
        None => Ok(adapter),
    }
}

/// The checks vLLM 0.32 makes before it schedules a request, with its error bodies (even
/// for `stream: true`, the error is one JSON body): an unknown model is 404; a prompt that
/// leaves no room in `max_model_len` is 400; a prompt plus `max_tokens` over it is not
/// refused, its output stops where the context is full (`finish_reason: length`).
fn admit(s: &Shared, body: &[u8]) -> Result<Admitted, Box<Response>> {
    let bad = |message: &str| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            message,
            None,
        ))
    };
    let req: GenRequest =
        serde_json::from_slice(body).map_err(|e| bad(&format!("invalid request body: {e}")))?;
    let opts = &s.opts;
    let adapter = model_of(opts, &req)?;
    let mut ids = req.prompt_ids().map_err(|e| bad(&e.to_string()))?;
    let images = req.images().map_err(|e| bad(&e.to_string()))?;
    if let Some(why) = opts.images.refusal(&images) {
        s.images.refused.fetch_add(1, Ordering::Relaxed);
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            &why,
            Some("image"),
        )));
    }
    let image_tokens = opts.images.ids(&images);
    let charged = image_tokens.len() as u64;
    ids.extend(image_tokens);
    let max_len = usize::try_from(opts.profile.max_model_len).unwrap_or(usize::MAX);
    if ids.len() >= max_len {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            &api::too_long(ids.len(), max_len),
            Some("input_tokens"),
        )));
    }
    let limit = req.limit(ids.len(), max_len).min(max_len - ids.len());
    // Counted once admitted: a refused request charged nothing.
    s.images
        .images
        .fetch_add(images.len() as u64, Ordering::Relaxed);
    s.images.tokens.fetch_add(charged, Ordering::Relaxed);
    Ok(Admitted {
        req,
        ids,
        limit,
        adapter,
    })
}

fn respond_stream<S>(events: S) -> Response
where
    S: futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(events))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The API server's time on a prompt of `tokens`: its one tokenizer takes requests in
/// arrival order; the rest of its time runs in parallel, and grows with the requests the
/// engine is running (the same process streams their output), read on arrival and again
/// when the parallel part is done, the smaller counting: streams that ended meanwhile no
/// longer slow it, and those that began meanwhile did not for most of its time. Requests
/// leave it for the engine in arrival order, as from a queue: a request enters at its own
/// time or once every request that arrived before it has entered (or was given up),
/// whichever is later; a short prompt never overtakes a long one sent just before it. The
/// ticket returned is dropped once the request is submitted, which lets the next one go.
async fn api_server(s: &Shared, tokens: usize) -> Ticket<'_> {
    let profile = &s.opts.profile;
    let ticket = s.entry.ticket();
    let tokenized = match s.tokenizer.lock() {
        Ok(mut free) => {
            let start = (*free).max(tokio::time::Instant::now());
            *free = start + Duration::from_secs_f64(profile.tokenizer_s(tokens));
            *free
        }
        Err(_) => tokio::time::Instant::now(),
    };
    let running = || s.metrics.lock().map_or(0, |m| m.running);
    let on_arrival = running();
    let parallel_done = tokenized + Duration::from_secs_f64(profile.api_delay_s(tokens));
    tokio::time::sleep_until(parallel_done).await;
    let others = if profile.api_load_all {
        (running() + s.entry.held()).saturating_sub(1)
    } else {
        on_arrival.min(running())
    };
    let load = Duration::from_secs_f64(profile.api_load_s(others));
    tokio::time::sleep_until(parallel_done + load).await;
    ticket.turn().await;
    ticket
}

#[cfg(test)]
mod tests {
    use crate::sim::{InProcess, Options, profile};
    use axum::body::Body;
    use serde_json::{Value, json};

    /// The cached tokens the simulator reports for `prompt`, sent `after` into the test.
    async fn cached(sim: InProcess, prompt: String, after: u64) -> (u64, u64) {
        tokio::time::sleep(std::time::Duration::from_millis(after)).await;
        let body = json!({"model": "gemma", "prompt": prompt, "max_tokens": 1});
        let req = axum::http::Request::post("/v1/completions")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap_or_default();
        let resp = sim.call(req).await;
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let u = &v["usage"];
        (
            u["prompt_tokens"].as_u64().unwrap_or(0),
            u["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(u64::MAX),
        )
    }

    /// A long prompt A, then 8 ms later a short B sharing A's first 512 tokens. Worked by
    /// hand on the `h200-gemma-4-e2b` profile: A leaves the API server at 20.4 ms
    /// (tokenizer, 12,000 × 1.7 µs) + 44.1 ms (27.4 ms + 12,000 × 1.38 µs + 12,000² ×
    /// 1.22e-12 s) = 64.5 ms; B on its own would leave at 21.4 + 28.2 = 49.6 ms, prefill
    /// by 58.4 ms and put the shared blocks in the cache before A arrives (A: 512 cached,
    /// B: 0). In arrival order B enters after A; A's 12,000 tokens take two steps of at
    /// most 8,192, the second publishes A's blocks, then admits B: A 0 cached, B 512.
    #[tokio::test(start_paused = true)]
    async fn a_later_request_never_overtakes_an_earlier_one_into_the_engine() {
        let Some(p) = profile::profile("h200-gemma-4-e2b") else {
            panic!("no h200-gemma-4-e2b profile");
        };
        let sim = InProcess::start(Options::new(p));
        let word = |i: usize| format!("w{i}");
        let shared: Vec<String> = (0..512).map(word).collect();
        let a: Vec<String> = shared
            .iter()
            .cloned()
            .chain((0..11_488).map(|i| format!("a{i}")))
            .collect();
        let b: Vec<String> = shared
            .iter()
            .cloned()
            .chain((0..88).map(|i| format!("b{i}")))
            .collect();
        let (first, second) = tokio::join!(
            cached(sim.clone(), a.join(" "), 0),
            cached(sim.clone(), b.join(" "), 8)
        );
        assert_eq!(first, (12_000, 0), "A found what B put in the cache");
        assert_eq!(second, (600, 512), "B finds A's first 512 tokens");
    }
}
