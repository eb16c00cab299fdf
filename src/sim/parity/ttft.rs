//! The meaning of the simulator's TTFT and E2E histograms: as vLLM's, from the request's
//! arrival at the HTTP server, so they agree with what a client measures (on a real vLLM the
//! server's TTFT matched the client's), however long the modelled API server takes.

use super::super::{InProcess, Options, profile};
use axum::body::Body;
use futures_util::StreamExt;
use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;

/// One streamed request: its TTFT and its whole time as the client sees them, seconds.
async fn client_times(sim: InProcess, words: usize) -> (f64, f64) {
    let prompt: Vec<String> = (0..words).map(|i| format!("w{i}")).collect();
    let body = json!({"model": "gemma", "prompt": prompt.join(" "), "max_tokens": 8,
        "ignore_eos": true, "stream": true});
    let Ok(req) = axum::http::Request::post("/v1/completions")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
    else {
        panic!("no request");
    };
    let sent = Instant::now();
    let mut data = sim.call(req).await.into_body().into_data_stream();
    let mut first = None;
    while let Some(Ok(chunk)) = data.next().await {
        if first.is_none() && chunk.starts_with(b"data: {") {
            first = Some(sent.elapsed());
        }
    }
    let first = first.unwrap_or_else(|| panic!("no token came"));
    (first.as_secs_f64(), sent.elapsed().as_secs_f64())
}

/// The sum of a histogram in a `/metrics` text.
fn sum(text: &str, name: &str) -> f64 {
    let prefix = format!("{name}_sum{{");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}_sum in {text}"))
}

/// Four 2K-token requests at once on the seed page's engine, whose API server takes ~30 ms
/// and more under load (the entry queue, the tokenizer, the streams it serves): on the
/// paused clock the server's TTFT and E2E sums are the client's to the microsecond; before,
/// the server's TTFT started after the API server's time and came out far lower.
#[tokio::test(start_paused = true)]
async fn server_ttft_and_e2e_count_from_the_arrival_at_the_http_server() {
    let Some(p) = profile::profile("h200-gemma-4-e2b") else {
        panic!("no h200-gemma-4-e2b profile");
    };
    let api = p.api_delay_s(2048);
    let sim = InProcess::start(Options::new(p));
    let all = futures_util::future::join_all((0..4).map(|_| client_times(sim.clone(), 2048))).await;
    let (ttft, e2e): (f64, f64) = all.iter().fold((0.0, 0.0), |(t, e), (a, b)| (t + a, e + b));
    assert!(
        ttft / 4.0 > api,
        "the API server's time is in the client's TTFT"
    );
    let Ok(req) = axum::http::Request::get("/metrics").body(Body::empty()) else {
        panic!("no request");
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    let resp = sim.call(req).await;
    let Ok(bytes) = axum::body::to_bytes(resp.into_body(), usize::MAX).await else {
        panic!("no metrics");
    };
    let text = String::from_utf8_lossy(&bytes);
    let server_ttft = sum(&text, "vllm:time_to_first_token_seconds");
    let server_e2e = sum(&text, "vllm:e2e_request_latency_seconds");
    assert!(
        (server_ttft - ttft).abs() < 1e-5,
        "server {server_ttft} s, client {ttft} s"
    );
    assert!(
        (server_e2e - e2e).abs() < 1e-5,
        "server {server_e2e} s, client {e2e} s"
    );
}
