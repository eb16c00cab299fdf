//! The simulator's informational endpoints: `/version`, `/v1/models`, `/tokenize` (vLLM's and
//! llama.cpp's shapes), `/apply-template` and `/metrics` in Prometheus text with vLLM's names.

use super::api::{self, TokenizeRequest};
use super::http::{Shared, error, json_response, unix_now};
use super::options::SimDialect;
use super::tokenizer;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

pub(super) async fn version(State(s): State<Arc<Shared>>) -> Response {
    if !super::dialect::informational(s.opts.dialect) {
        return super::dialect::not_found("/version");
    }
    json_response(StatusCode::OK, &json!({"version": s.opts.profile.version}))
}

pub(super) async fn models(State(s): State<Arc<Shared>>) -> Response {
    let p = &s.opts.profile;
    let mut model = json!({"id": s.opts.served_name, "object": "model", "created": unix_now(), "owned_by": "vllm",
        "root": s.opts.served_name, "parent": null, "max_model_len": p.max_model_len, "permission": []});
    // trtllm-serve and hosted APIs list models without their length limit.
    if matches!(s.opts.dialect, SimDialect::Trtllm | SimDialect::Openai)
        && let Some(m) = model.as_object_mut()
    {
        m.remove("max_model_len");
        m.insert("owned_by".into(), "system".into());
    }
    // LoRA adapters after the base, as vLLM lists its `--lora-modules`.
    let mut data = vec![model];
    for name in s.opts.lora.iter().flat_map(|l| &l.adapters) {
        data.push(json!({"id": name, "object": "model", "created": unix_now(), "owned_by": "vllm",
            "root": name, "parent": s.opts.served_name, "max_model_len": p.max_model_len, "permission": []}));
    }
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

pub(super) async fn tokenize(State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    if !s.opts.dialect.tokenizes() {
        return super::dialect::not_found("/tokenize");
    }
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
    if s.opts.dialect == SimDialect::Sglang && req.messages.is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            "SGLang's /tokenize takes `prompt`, not `messages`",
            None,
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
    match s.opts.dialect {
        SimDialect::Openai => return super::dialect::not_found("/metrics"),
        // trtllm-serve's /metrics is JSON iteration statistics, not Prometheus text.
        SimDialect::Trtllm => {
            let stats = s.metrics.lock().map(|m| m.trtllm_iterations());
            return json_response(StatusCode::OK, &stats.unwrap_or_else(|_| json!([])));
        }
        _ => {}
    }
    let sglang = s.opts.dialect == SimDialect::Sglang;
    let text = s
        .metrics
        .lock()
        .map(|m| {
            if sglang {
                m.render_sglang(&s.opts.served_name)
            } else if s.opts.dialect == SimDialect::LlamaCpp && m.spec.is_some() {
                // llama.cpp counts its drafts in each response's timings, not here.
                let mut m = m.clone();
                m.spec = None;
                m.render(&s.opts.served_name)
            } else {
                m.render(&s.opts.served_name)
            }
        })
        .unwrap_or_default()
        + &s.images.render();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        text,
    )
        .into_response()
}
