//! The cell measurements on a scripted engine and tokio's paused clock: every time is
//! exact, so the window's accounting and the verdicts are checked to the microsecond, in
//! milliseconds of wall time, whatever else the machine is doing.

use super::{Ctx, prefill};
use crate::client::scripted::{Asked, Reply, Scripted};
use crate::client::{Client, Failure};
use crate::plan::{self, Cell, Measure, Plan};
use crate::results::record::utc_now;
use crate::results::{Record, Status};
use std::sync::Arc;
use std::time::Duration;

/// The plan of a spec on an engine that is never contacted (the transport is scripted).
fn plan_of(matrix: &str, phases: &str) -> Plan {
    let text = format!(
        "version: 1\nname: scripted\nengine: {{kind: vllm, base_url: 'http://127.0.0.1:9'}}\n\
         model: {{served_name: m, max_model_len: 100000}}\n\
         workload: {{max_output_tokens: 64}}\nmatrix: {matrix}\nphases: {phases}\n"
    );
    plan::config::of_yaml(&text).sizing_plan()
}

/// A context of cells measured through `script`.
fn ctx(plan: &Plan, script: Scripted) -> Arc<Ctx> {
    let settings = crate::client::Settings {
        base: "http://127.0.0.1:9".into(),
        others: Vec::new(),
        balance: crate::client::Balance::default(),
        model: "m".into(),
        api: crate::client::Api::Completions,
        dialect: crate::client::ClientDialect::Serving,
        key: None,
        stall: Duration::from_secs(30),
        ignore_eos: true,
        pool: 1,
        adapters: Vec::new(),
        adapter_seed: 0,
        temperature: 0.0,
    };
    let client = match Client::new(settings) {
        Ok(c) => c.with_transport(Arc::new(script)),
        Err(e) => panic!("a client: {e}"),
    };
    Arc::new(Ctx::new(
        client,
        &plan.workload,
        false,
        crate::footprint::Probe::default(),
    ))
}

fn cell<'a>(plan: &'a Plan, id: &str) -> &'a Cell {
    match plan.cells.iter().find(|c| c.id == id) {
        Some(c) => c,
        None => panic!(
            "no cell {id} in {:?}",
            plan.cells.iter().map(|c| &c.id).collect::<Vec<_>>()
        ),
    }
}

async fn measure(cx: &Arc<Ctx>, c: &Cell) -> Record {
    let rec = Record::new(c, utc_now(), &Default::default());
    match c.measure {
        Measure::Prefill(how) => prefill(cx, c, how, rec).await,
        Measure::Decode(load) => {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            super::decode(cx.clone(), c, load, rec, tx).await
        }
        _ => panic!("not a closed-loop cell: {}", c.id),
    }
}

/// An engine whose steps slow down with the batch: 10 ms + 2 ms per request in flight when
/// the request arrives. (tokio's timer has a millisecond grain: whole milliseconds keep the
/// gaps exact; a TTFT is exact to within that grain, as `sent` falls between ticks.)
fn batched(a: Asked) -> Reply {
    Reply {
        tbt: Duration::from_millis(10 + 2 * a.in_flight as u64),
        ..steady(a)
    }
}

/// An engine streaming a token every 15 ms, the first 40 ms after the send.
fn steady(a: Asked) -> Reply {
    Reply {
        ttft: Duration::from_millis(40),
        tbt: Duration::from_millis(15),
        tokens: a.max_tokens,
        failure: None,
        message: None,
    }
}

/// Whether `got` is within `tol` of `want`.
fn near(got: Option<f64>, want: f64, tol: f64) -> bool {
    got.is_some_and(|g| (g - want).abs() <= tol)
}

const DECODE: &str = "{prefill: {enabled: false}, decode: {duration: 10s}}";

#[tokio::test(start_paused = true)]
async fn a_decode_window_counts_exactly_what_the_engine_streamed() {
    let plan = plan_of("{contexts: [1K], concurrency: [4]}", DECODE);
    let c = cell(&plan, "decode/1K/c4");
    let rec = measure(&ctx(&plan, Scripted::new(steady)), c).await;
    assert_eq!(rec.status, Status::Valid, "{:?}", rec.reasons);
    // Every gap is 15 ms (to the histogram's grain), every TTFT 40 ms (to the timer's).
    let tbt = rec.tbt_ms.as_ref();
    for got in [tbt.map(|s| s.min), tbt.map(|s| s.p50), tbt.map(|s| s.max)] {
        assert!(near(got, 15.0, 0.01), "{tbt:?}");
    }
    let ttft = rec.ttft_ms.as_ref();
    assert!(near(ttft.map(|s| s.min), 40.0, 1.0), "{ttft:?}");
    assert!(near(ttft.map(|s| s.max), 40.0, 1.0), "{ttft:?}");
    // A request: 64 tokens in 40 + 63 × 15 = 985 ms, replaced at once: four always active.
    let active = rec.avg_active.unwrap_or_default();
    assert!((active - 4.0).abs() < 1e-6, "average active {active}");
    let total = rec.total_tok_s.unwrap_or_default();
    let expected = 4.0 * 64.0 / 0.985;
    assert!(
        (total / expected - 1.0).abs() < 0.01,
        "total {total} against {expected}"
    );
    assert_eq!(rec.errors, 0);
}

#[tokio::test(start_paused = true)]
async fn more_streams_show_the_slower_steps_they_cause() {
    let plan = plan_of("{contexts: [1K], concurrency: [1, 8]}", DECODE);
    let cx = ctx(&plan, Scripted::new(batched));
    let one = measure(&cx, cell(&plan, "decode/1K/c1")).await;
    let eight = measure(&cx, cell(&plan, "decode/1K/c8")).await;
    let p50 = |r: &Record| r.tbt_ms.as_ref().map(|s| s.p50);
    assert!(near(p50(&one), 12.0, 0.01), "{:?}", one.tbt_ms);
    assert!(near(p50(&eight), 26.0, 0.02), "{:?}", eight.tbt_ms);
    let per = |r: &Record| r.per_request_tok_s.unwrap_or_default();
    assert!(
        per(&one) > 2.0 * per(&eight),
        "{} vs {}",
        per(&one),
        per(&eight)
    );
}

#[tokio::test(start_paused = true)]
async fn failed_requests_are_counted_by_kind_and_make_the_cell_invalid() {
    let plan = plan_of("{contexts: [1K], concurrency: [2]}", DECODE);
    let script = Scripted::new(|a: Asked| Reply {
        failure: (a.n % 5 == 4).then_some(Failure::Http(500)),
        tokens: if a.n % 5 == 4 { 0 } else { a.max_tokens },
        ..steady(a)
    });
    let rec = measure(&ctx(&plan, script), cell(&plan, "decode/1K/c2")).await;
    assert!(rec.errors > 0);
    assert_eq!(rec.error_kinds.get("http_500"), Some(&rec.errors));
    assert_eq!(rec.status, Status::Invalid);
    assert!(
        rec.reasons.iter().any(|r| r.contains("error")),
        "{:?}",
        rec.reasons
    );
}

#[tokio::test(start_paused = true)]
async fn a_standalone_prefill_reports_the_median_of_its_cold_requests() {
    let plan = plan_of(
        "{contexts: [2K], concurrency: [1]}",
        "{prefill: {mode: standalone, repeats: 3}, decode: {enabled: false}}",
    );
    // The second request is slow: the median ignores it.
    let script = Scripted::new(|a: Asked| Reply {
        ttft: Duration::from_millis(if a.n == 1 { 900 } else { 100 + 10 * a.n }),
        ..steady(a)
    });
    let rec = measure(&ctx(&plan, script), cell(&plan, "prefill/2K")).await;
    assert_eq!(rec.status, Status::Valid, "{:?}", rec.reasons);
    let ttft = rec.ttft_ms.as_ref().map(|s| s.p50);
    assert!(near(ttft, 120.0, 1.0), "{ttft:?}");
    let rate = rec.prefill_tok_s.unwrap_or_default();
    assert!(
        (rate / (2048.0 / 0.12) - 1.0).abs() < 0.01,
        "prefill {rate}"
    );
}

/// vLLM's answer to a prompt over `max_model_len` (tests/fixtures/vllm/error-too-long.json).
const TOO_LONG: &str = "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=4097)";

/// A cell every request of which the engine refused says why in the engine's own words: a
/// prefill cell's "every request failed", a decode cell's failed warm-up.
#[tokio::test(start_paused = true)]
async fn a_cell_the_engine_refused_gives_the_engines_words() {
    let refuse = |a: Asked| Reply {
        tokens: 0,
        failure: Some(Failure::Http(400)),
        message: Some(TOO_LONG),
        ..steady(a)
    };
    let cases = [
        (
            "{prefill: {mode: standalone, repeats: 2}, decode: {enabled: false}}",
            "prefill/2K",
            "every request failed (HTTP 400: ",
        ),
        (
            DECODE,
            "decode/2K/c2",
            "every warm-up request failed (HTTP 400: ",
        ),
    ];
    for (phases, id, opening) in cases {
        let plan = plan_of("{contexts: [2K], concurrency: [2]}", phases);
        let rec = measure(&ctx(&plan, Scripted::new(refuse)), cell(&plan, id)).await;
        assert_eq!(rec.status, Status::Failed, "{id}");
        let want = format!("{opening}{TOO_LONG})");
        assert!(rec.reasons.contains(&want), "{id}: {:?}", rec.reasons);
        assert!(
            rec.error_kinds.get("http_400").is_some_and(|n| *n >= 2),
            "{id}"
        );
    }
}
