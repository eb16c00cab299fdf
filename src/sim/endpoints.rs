//! The simulator's informational endpoints: `/version`, `/v1/models`, `/tokenize` (vLLM's and
//! llama.cpp's shapes), `/apply-template` and `/metrics` in Prometheus text with vLLM's names.

use super::api::{self, TokenizeRequest};
use super::http::{Shared, error, json_response, unix_now};
use super::tokenizer;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

pub(super) async fn version(State(s): State<Arc<Shared>>) -> Response {
    json_response(StatusCode::OK, &json!({"version": s.opts.profile.version}))
}

pub(super) async fn models(State(s): State<Arc<Shared>>) -> Response {
    let p = &s.opts.profile;
    let model = json!({"id": s.opts.served_name, "object": "model", "created": unix_now(), "owned_by": "vllm",
        "root": s.opts.served_name, "parent": null, "max_model_len": p.max_model_len, "permission": []});
    json_response(StatusCode::OK, &json!({"object": "list", "data": [model]}))
}

pub(super) async fn tokenize(State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    let req: TokenizeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestError",
                &format!("invalid request body: {e}"),
                None,
            );
        }
    };
    // llama.cpp's shape: `{"content"}` in, `{"tokens"}` out.
    if let Some(content) = &req.content {
        return json_response(
            StatusCode::OK,
            &json!({"tokens": tokenizer::encode(content)}),
        );
    }
    let ids = match (&req.messages, &req.prompt) {
        (Some(m), _) => tokenizer::encode(&api::chat_prompt(m, req.add_generation_prompt)),
        (None, Some(p)) => tokenizer::encode(p),
        (None, None) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestError",
                "either `prompt` or `messages` must be given",
                None,
            );
        }
    };
    json_response(
        StatusCode::OK,
        &json!({"count": ids.len(), "max_model_len": s.opts.profile.max_model_len, "tokens": ids, "token_strs": null}),
    )
}

/// llama.cpp's `/apply-template`: the chat template applied, as text.
pub(super) async fn apply_template(body: Bytes) -> Response {
    match serde_json::from_slice::<TokenizeRequest>(&body) {
        Ok(TokenizeRequest {
            messages: Some(m), ..
        }) => json_response(
            StatusCode::OK,
            &json!({"prompt": api::chat_prompt(&m, true)}),
        ),
        _ => error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            "`messages` must be given",
            None,
        ),
    }
}

pub(super) async fn metrics_text(State(s): State<Arc<Shared>>) -> Response {
    let m = s.metrics.lock().map(|m| m.clone()).unwrap_or_default();
    let labels = format!("{{engine=\"0\",model_name=\"{}\"}}", s.opts.served_name);
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        out.push_str(&format!("{sample}{labels} {value}\n"));
    };
    metric(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        format!("{:.1}", m.running as f64),
    );
    metric(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        format!("{:.1}", m.waiting as f64),
    );
    metric(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        format!("{}", m.kv_usage),
    );
    metric(
        "vllm:prefix_cache_queries",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        format!("{:.1}", m.prefix_queries as f64),
    );
    metric(
        "vllm:prefix_cache_hits",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        format!("{:.1}", m.prefix_hits as f64),
    );
    metric(
        "vllm:prompt_tokens",
        "counter",
        "Number of prefill tokens processed.",
        format!("{:.1}", m.prompt_tokens as f64),
    );
    metric(
        "vllm:generation_tokens",
        "counter",
        "Number of generation tokens processed.",
        format!("{:.1}", m.generation_tokens as f64),
    );
    metric(
        "vllm:num_preemptions",
        "counter",
        "Cumulative number of preemption from the engine.",
        format!("{:.1}", m.preemptions as f64),
    );
    metric(
        "vllm:request_success",
        "counter",
        "Count of successfully processed requests.",
        format!("{:.1}", m.finished as f64),
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        out,
    )
        .into_response()
}
