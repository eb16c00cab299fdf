//! What the simulator does differently per API dialect, beyond the stream's shape: which
//! informational endpoints exist, the request fields a hosted API refuses, SGLang's server
//! info, and a hosted API's rate limit (HTTP 429 with `retry-after`).

use super::api::EndpointKind;
use super::http::{Shared, error, json_response};
use super::options::SimDialect;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// 404, as a server without the endpoint answers.
pub(super) fn not_found(path: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "NotFoundError",
        &format!("{path} does not exist on this server"),
        None,
    )
}

/// Whether `/health`, `/version` and `/metrics` exist (a hosted API has none of them).
pub(super) fn informational(d: SimDialect) -> bool {
    d != SimDialect::Openai
}

/// SGLang's `/get_server_info`: the KV cache's capacity among its server arguments.
pub(super) async fn server_info(State(s): State<Arc<Shared>>) -> Response {
    if s.opts.dialect != SimDialect::Sglang {
        return not_found("/get_server_info");
    }
    let p = &s.opts.profile;
    json_response(
        StatusCode::OK,
        &json!({"max_total_num_tokens": p.kv_tokens, "max_running_requests": p.max_num_seqs,
            "context_length": p.max_model_len, "version": p.version}),
    )
}

/// A hosted API refuses fields it does not know, as OpenAI's does:
/// "Unrecognized request argument supplied: ignore_eos"; and its chat endpoint refuses
/// `max_tokens` (its newer models take only `max_completion_tokens`).
pub(super) fn refused_field(d: SimDialect, kind: EndpointKind, body: &[u8]) -> Option<Response> {
    if d != SimDialect::Openai {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    if kind == EndpointKind::Chat && v.get("max_tokens").is_some() {
        return Some(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            Some("max_tokens"),
        ));
    }
    let field = if v.get("ignore_eos").is_some() {
        "ignore_eos"
    } else if v
        .pointer("/stream_options/continuous_usage_stats")
        .is_some()
    {
        "stream_options.continuous_usage_stats"
    } else if v.get("min_tokens").is_some() {
        "min_tokens"
    } else {
        return None;
    };
    Some(error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        &format!("Unrecognized request argument supplied: {field}"),
        Some(field),
    ))
}

/// A 429 with `retry-after` (whole seconds, rounded up) and `retry-after-ms`, as hosted APIs
/// send it.
pub(super) fn rate_limited(s: &Shared) -> Response {
    let wait = s.opts.faults.retry_after;
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_error",
        "Rate limit reached for requests (fault option `rate_limit_rate`)",
        None,
    )
    .into_response();
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        h.insert("retry-after", v);
    }
    if let Ok(v) = HeaderValue::from_str(&wait.as_millis().to_string()) {
        h.insert("retry-after-ms", v);
    }
    r
}
