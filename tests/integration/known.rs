//! The twin against an independent server whose timing is known (not the simulator: no steps,
//! no batches). Each request's prompt is prefilled at 20,000 tokens per second, one prompt at
//! a time; then each of its output tokens takes 5 ms + 1 ms × the requests decoding at that
//! moment, on its own deadline. The server speaks vLLM's OpenAI-compatible API (usage at the
//! end of the stream) and keeps its own log of every request's mean time per token.

use super::cli::{Bench, tempdir::Dir};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Prompt tokens per second of the prefill.
const PREFILL_TOK_S: f64 = 20_000.0;

#[derive(Default)]
struct Known {
    /// Requests past their prefill, still streaming.
    decoding: AtomicUsize,
    /// One prefill at a time.
    prefill: tokio::sync::Mutex<()>,
    /// Each finished request's mean seconds per output token after the first.
    log: Mutex<Vec<f64>>,
}

/// Ends a request's decoding however its stream ends (a client may hang up).
struct Decoding(Arc<Known>);

impl Drop for Decoding {
    fn drop(&mut self) {
        self.0.decoding.fetch_sub(1, Ordering::SeqCst);
    }
}

fn json(v: &Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

async fn tokenize(body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let ids = benchspec::sim::tokenizer::encode(req["prompt"].as_str().unwrap_or(""));
    json(&json!({"count": ids.len(), "max_model_len": 32768, "tokens": ids}))
}

fn chunk(text: &str, finish: Option<&str>) -> Bytes {
    let v = json!({"id": "cmpl-known", "object": "text_completion", "model": "known",
        "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish}]});
    Bytes::from(format!("data: {v}\n\n"))
}

/// One streamed completion under the known timing.
async fn complete(State(k): State<Arc<Known>>, body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let prompt = benchspec::sim::tokenizer::count(req["prompt"].as_str().unwrap_or(""));
    let max = req["max_tokens"].as_u64().unwrap_or(16).max(1) as usize;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        {
            let _one = k.prefill.lock().await;
            tokio::time::sleep(Duration::from_secs_f64(prompt as f64 / PREFILL_TOK_S)).await;
        }
        k.decoding.fetch_add(1, Ordering::SeqCst);
        let _d = Decoding(k.clone());
        let first = Instant::now();
        let mut at = first;
        for i in 0..max {
            if i > 0 {
                let active = k.decoding.load(Ordering::SeqCst) as f64;
                at += Duration::from_secs_f64(0.005 + 0.001 * active);
                tokio::time::sleep_until(at).await;
            }
            let finish = (i + 1 == max).then_some("length");
            if tx.send(Ok(chunk(" tok", finish))).await.is_err() {
                return;
            }
        }
        if max > 1 {
            let per = first.elapsed().as_secs_f64() / (max - 1) as f64;
            k.log.lock().unwrap().push(per);
        }
        let usage = json!({"id": "cmpl-known", "object": "text_completion", "model": "known", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": max, "total_tokens": prompt + max}});
        let _ = tx.send(Ok(Bytes::from(format!("data: {usage}\n\n")))).await;
        let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The server on 127.0.0.1, port 0, on its own runtime: its URL and its state.
fn start() -> (tokio::runtime::Runtime, String, Arc<Known>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let known = Arc::new(Known::default());
    let app = Router::new()
        .route("/v1/models", get(|| async {
            json(&json!({"object": "list", "data": [{"id": "known", "object": "model", "max_model_len": 32768}]}))
        }))
        .route("/version", get(|| async { json(&json!({"version": "known-1"})) }))
        .route("/tokenize", post(tokenize))
        .route("/v1/completions", post(complete))
        .with_state(known.clone());
    let url = rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await });
        url
    });
    (rt, url, known)
}

const SPEC: &str = "version: 1
name: known
engine: {kind: vllm, base_url: '{url}'}
model: {served_name: known}
workload: {max_output_tokens: 256}
matrix: {contexts: {contexts}, concurrency: {concurrency}}
telemetry: {server: false}
phases: {prefill: {enabled: false}, decode: {duration: 3s}}
";

fn spec(url: &str, contexts: &str, concurrency: &str) -> String {
    SPEC.replace("{url}", url)
        .replace("{contexts}", contexts)
        .replace("{concurrency}", concurrency)
}

/// Fitted on contexts {256, 1K} × concurrency {1, 4}, the twin predicts {512, 2K} × {2, 8}
/// within 12% (per-request tok/s and TBT), and run as an engine it reproduces the measured
/// c=8 cells within 15% (measured: within 6% and 2.5%).
#[test]
fn a_twin_of_a_known_server() {
    let _cpu = super::cpu();
    let (_rt, url, known) = start();
    let dir = Dir::new();
    let (outs, specs) = run_fit_and_check(&dir, &url);
    // The server's own log: the client's TBT is the server's time per token.
    let log = known.log.lock().unwrap().clone();
    assert!(log.len() >= 10, "{log:?}");
    let fitted = benchspec::rundir::read_records(&outs[0].join("results.jsonl")).unwrap();
    the_client_times_what_the_server_logs(&log, &fitted);
    let twin = dir.path().join("twin.toml");
    let fit = Bench::new(&[
        "fit",
        outs[0].to_str().unwrap(),
        "--out",
        twin.to_str().unwrap(),
    ])
    .run();
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    let doc = super::twin::predict_json(&specs[1], &twin);
    let measured = benchspec::rundir::read_records(&outs[1].join("results.jsonl")).unwrap();
    predicted_within_12_percent(&doc, &measured);
    intervals_cover_the_cells_never_fitted(&doc, &measured);
    // The twin as an engine, on the measured c=8 cells and a fitted one (1K/c4).
    let twin_text = std::fs::read_to_string(&twin).unwrap();
    the_twin_as_an_engine_on_a_fitted_cell(&twin_text, &fitted);
    the_twin_as_an_engine_on_the_c8_cells(&twin_text, &measured);
    held_out_cells_of_both_runs(&dir, &outs);
}

/// Run the spec against the server at `url` on the cells to fit ({256, 1K} × {1, 4}) and on
/// those to check ({512, 2K} × {2, 8}): their run directories and spec files, in `dir`.
fn run_fit_and_check(dir: &Dir, url: &str) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    let mut outs = Vec::new();
    let mut specs = Vec::new();
    for (name, contexts, conc) in [
        ("fit", "[256, 1K]", "[1, 4]"),
        ("check", "[512, 2K]", "[2, 8]"),
    ] {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, spec(url, contexts, conc)).unwrap();
        let out = dir.path().join(name);
        let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
            .arg(&path)
            .run();
        assert_eq!(done.code, 0, "{}", done.stderr);
        outs.push(out);
        specs.push(path);
    }
    (outs, specs)
}

/// The client's median gap at 256/c1 against the server's least mean time per token in its
/// `log` (the server's timer ticks in milliseconds): within 5%.
fn the_client_times_what_the_server_logs(log: &[f64], fitted: &[benchspec::results::Record]) {
    let one = fitted
        .iter()
        .find(|r| r.cell == "decode/256/c1")
        .unwrap()
        .tbt_ms
        .unwrap()
        .p50;
    let server = log.iter().cloned().fold(f64::MAX, f64::min) * 1e3;
    assert!(
        (one - server).abs() / server < 0.05,
        "client TBT {one} ms, server {server} ms"
    );
}

/// The twin's prediction `doc` of the 8 checked cells against their `measured` records:
/// per-request tok/s and TBT within 12%.
fn predicted_within_12_percent(doc: &Value, measured: &[benchspec::results::Record]) {
    let mut errors =
        super::twin::decode_errors(doc, measured, "per_request_tok_s", |r| r.per_request_tok_s);
    errors.extend(super::twin::decode_errors(
        doc,
        measured,
        "tbt_ms_p50",
        |r| r.tbt_ms.map(|s| s.p50),
    ));
    eprintln!("known server, twin's error on the predicted cells: {errors:?}");
    assert_eq!(errors.len(), 8);
    assert!(errors.iter().all(|(_, e)| e.abs() <= 12.0), "{errors:?}");
}

/// The intervals, earned by leaving fitted cells out, cover the cells never fitted as
/// often as their stated level allows (4 left-out cells earn 80%: 2 of 4, 95% of the
/// time). Measured: 4 of 4, then 3 of 4 — the c8 cells lie a doubling beyond the fitted
/// concurrencies and the twin misses them by 2.5–3.1% run after run, where one widening of
/// a ±1.2% interval reaches 2.4%.
fn intervals_cover_the_cells_never_fitted(doc: &Value, measured: &[benchspec::results::Record]) {
    let covered = measured
        .iter()
        .filter(|r| r.cell.starts_with("decode/"))
        .filter(|r| {
            let c = doc["cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["cell"] == r.cell.as_str())
                .unwrap();
            let (v, h) = (
                c["per_request_tok_s"].as_f64().unwrap(),
                c["interval"]["per_request_tok_s"].as_f64().unwrap(),
            );
            (v - r.per_request_tok_s.unwrap()).abs() <= h
        })
        .count();
    eprintln!("known server: {covered} of 4 cells inside their 90% interval: {doc:#}");
    let level = doc["intervals"]["tok_s"]["level"].as_f64().unwrap();
    assert!(
        covered >= super::twin::min_inside_at(4, level),
        "{covered} of 4 at level {level}"
    );
}

/// The twin (`twin_text`) as an engine on the fitted cell 1K/c4: its total tok/s within 3%
/// and its TTFT within 10% of the `fitted` record.
fn the_twin_as_an_engine_on_a_fitted_cell(twin_text: &str, fitted: &[benchspec::results::Record]) {
    let own = spec("", "[1K]", "[4]").replace(
        "engine: {kind: vllm, base_url: ''}",
        "engine: {kind: sim, sim: {twin: twin.toml}}",
    );
    let (again, _run) = super::open::run_spec_with_files(&own, &[("twin.toml", twin_text)]);
    let (sim, meas) = (
        again.iter().find(|r| r.cell == "decode/1K/c4").unwrap(),
        fitted.iter().find(|r| r.cell == "decode/1K/c4").unwrap(),
    );
    let pairs = [
        (
            "tok/s",
            sim.total_tok_s.unwrap(),
            meas.total_tok_s.unwrap(),
            0.03,
        ),
        (
            "TTFT",
            sim.ttft_ms.unwrap().p50,
            meas.ttft_ms.unwrap().p50,
            0.10,
        ),
    ];
    for (what, got, want, tol) in pairs {
        eprintln!(
            "known server, the twin as an engine on fitted decode/1K/c4: {what} {got} vs {want}"
        );
        assert!((got - want).abs() / want <= tol, "{what}: {got} vs {want}");
    }
}

/// The twin (`twin_text`) as an engine on the two c=8 cells never fitted: total tok/s within
/// 15% of the `measured` records.
fn the_twin_as_an_engine_on_the_c8_cells(twin_text: &str, measured: &[benchspec::results::Record]) {
    let engine = spec("", "[512, 2K]", "[8]").replace(
        "engine: {kind: vllm, base_url: ''}",
        "engine: {kind: sim, sim: {twin: twin.toml}}",
    );
    let (records, _run) = super::open::run_spec_with_files(&engine, &[("twin.toml", twin_text)]);
    let mut engine_errors = Vec::new();
    for r in measured.iter().filter(|r| r.cell.ends_with("/c8")) {
        let sim = records.iter().find(|s| s.cell == r.cell).unwrap();
        let (want, got) = (r.total_tok_s.unwrap(), sim.total_tok_s.unwrap());
        engine_errors.push((r.cell.clone(), (got - want) / want * 100.0));
    }
    eprintln!("known server, the twin as an engine vs measured total tok/s: {engine_errors:?}");
    assert_eq!(engine_errors.len(), 2);
    assert!(
        engine_errors.iter().all(|(_, e)| e.abs() <= 15.0),
        "{engine_errors:?}"
    );
}

/// Both runs together (four contexts), one cell in four held out: the intervals earned on
/// the fitted cells cover the held-out cells' tok/s as a calibrated 90% interval would. Their TTFT is printed,
/// not held: this server prefills one prompt at a time in its engine, where the twin's
/// decode TTFT is the API server's (seen ±11.6% from 4 left-out cells, 1 of 2 inside).
fn held_out_cells_of_both_runs(dir: &Dir, outs: &[std::path::PathBuf]) {
    let both = dir.path().join("both.toml");
    let fit = Bench::new(&["fit", "--holdout", "0.25", "--out", both.to_str().unwrap()])
        .arg(&outs[0])
        .arg(&outs[1])
        .run();
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    eprintln!("known server, both runs: {}{}", fit.stderr, fit.stdout);
    let t: toml::Value = toml::from_str(&std::fs::read_to_string(&both).unwrap()).unwrap();
    // Held to what a true 90% interval achieves 95% of the time over this many cells.
    let h = &t["holdout"];
    let n = h["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"].as_str() == Some("per_request_tok_s"))
        .count();
    let c = h["covered"].as_float().unwrap_or(0.0);
    assert!(super::twin::covers_enough(c, n), "{c} of {n}: {h:#?}");
}
