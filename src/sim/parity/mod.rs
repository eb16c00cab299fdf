//! The simulator held to a real vLLM: its answers diffed against the bytes a real vLLM 0.32
//! (CPU build, a tiny model served as `tiny` with `--max-model-len 4096`) sent, recorded in
//! `tests/fixtures/vllm/` by its `record.sh`. Names, types, label names, units and bucket
//! bounds of `/metrics`; the keys of `/v1/models`, `/version` and `/tokenize`; error bodies;
//! the shape of every SSE chunk; cached tokens in whole blocks.

mod api;
mod metrics;
mod ttft;

use super::{InProcess, Options, profile};
use axum::body::Body;
use axum::http::StatusCode;
use serde_json::Value;

/// The `tiny` profile served as the recording served its model: `tiny`, 4,096 tokens of
/// context, KV blocks of `block` tokens.
fn sim(block: usize) -> InProcess {
    let Some(mut p) = profile::profile("tiny") else {
        panic!("no tiny profile");
    };
    p.max_model_len = 4096;
    p.block_size = block;
    let mut opts = Options::new(p);
    opts.served_name = "tiny".into();
    InProcess::start(opts)
}

/// `GET path` (no body) or `POST path` with `body`: the status and the response body.
async fn call(sim: &InProcess, path: &str, body: Option<&Value>) -> (StatusCode, String) {
    let req = match body {
        Some(b) => axum::http::Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(b.to_string())),
        None => axum::http::Request::get(path).body(Body::empty()),
    };
    let Ok(req) = req else {
        panic!("a request to {path} could not be built");
    };
    let resp = sim.call(req).await;
    let status = resp.status();
    let Ok(bytes) = axum::body::to_bytes(resp.into_body(), usize::MAX).await else {
        panic!("the body of {path} could not be read");
    };
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// JSON text, or a failed test saying what it was.
fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The shape of a JSON value: every key path with the type of its value, values left out
/// (an array's elements each at their index).
fn shape(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out.sort();
    out
}

fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.push(format!("{at}: {kind}"));
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| walk(v, &format!("{at}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| walk(v, &format!("{at}[{i}]"), out)),
        _ => {}
    }
}
