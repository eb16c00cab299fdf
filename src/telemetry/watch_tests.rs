//! Tests only: a cell watched through the observer against real vLLM's `/metrics`
//! (tests/fixtures/vllm/metrics-after.txt, an idle engine: nothing running, KV 0, no
//! preemption), on tokio's clock: a window with no scrape inside gets no gauges, one with a
//! scrape inside keeps the zeros it measured.

use super::*;
use crate::client::Api;
use crate::client::replay::{Answer, replaying};
use crate::results::ServerUse;

const METRICS: &str = include_str!("../../tests/fixtures/vllm/metrics-after.txt");

const PREFILL: &str = r#"{"schema":"benchspec.result.v1","cell":"prefill/4K","phase":"prefill","context":4096,"concurrency":1,"status":"valid","reasons":[],"started_at":"2026-12-02T10:00:00Z","measured_s":0.005,"prompt_tokens":4096,"output_tokens":null,"token_source":null,"total_tok_s":null,"per_request_tok_s":null,"avg_active":null,"requests_started":1,"completed":1,"errors":0,"error_kinds":{},"ttft_ms":null,"tbt_ms":null,"prefill_tok_s":null,"labels":{},"server_prompt_tokens":null}"#;

/// The `server` block of a cell whose window is marked `open_for` after the first scrape and
/// lasts `window`, scraped every 100 ms.
async fn watched(open_for: Duration, window: Duration) -> Option<ServerUse> {
    let metrics = Answer {
        path: "/metrics",
        needle: "",
        status: 200,
        body: METRICS,
    };
    let observer = Observer {
        clients: vec![replaying(Api::Completions, vec![metrics])],
        interval: Duration::from_millis(100),
        samples: gpu::Readings::default(),
        feed: None,
        noted: AtomicBool::new(false),
        drafts: None,
    };
    let marks = std::sync::Arc::new(Marks::default());
    let w = observer.begin(&marks).await;
    tokio::time::sleep(open_for).await;
    marks.open(Instant::now());
    tokio::time::sleep(window).await;
    marks.close(Instant::now());
    let rec: Record = serde_json::from_str(PREFILL).ok()?;
    let rec = observer.finish(w, &marks, rec, 0.9, &|_| {}).await;
    rec.server
}

#[tokio::test(start_paused = true)]
async fn a_window_no_scrape_fell_in_has_no_gauges() {
    // A window opened 10 ms after the first scrape and closed at once (a prefill request of
    // a few ms is as short beside a scrape): the scrape its opening asks for answers 1 ms
    // later (the replay's pace), after it closed.
    let s = watched(Duration::from_millis(10), Duration::ZERO).await;
    let s = s.expect("vLLM's names are known");
    assert_eq!(s.source, "vllm");
    let gauges = [s.running_mean, s.running_max, s.waiting_max, s.kv_usage_max];
    assert_eq!(gauges, [None; 4], "nothing measured the gauges: {s:?}");
    // The counter over the cell was measured: vLLM's num_preemptions_total stayed 0.
    assert_eq!(s.preemptions, Some(0.0));
    // The histograms and prefix counters did not move: no observation, no rate.
    assert_eq!(
        (s.ttft_ms_p50, s.itl_ms_p50, s.prefix_hit_rate),
        (None, None, None)
    );
    let json = serde_json::to_value(&s).unwrap_or_default();
    assert_eq!(json["running_mean"], serde_json::Value::Null);
}

#[tokio::test(start_paused = true)]
async fn a_window_with_scrapes_inside_keeps_the_zeros_they_saw() {
    // 250 ms: the opening scrape and the ones at 100 and 200 ms fall inside.
    let s = watched(Duration::from_millis(10), Duration::from_millis(250)).await;
    let s = s.expect("vLLM's names are known");
    let gauges = [s.running_mean, s.running_max, s.waiting_max, s.kv_usage_max];
    assert_eq!(
        gauges,
        [Some(0.0); 4],
        "vLLM's idle gauges, read inside: {s:?}"
    );
}
