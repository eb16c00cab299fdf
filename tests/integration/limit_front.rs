//! The diagnosis (docs/results.md, `limit`) of a load whose requests wait in the simulator's
//! API server (its one tokenizer, src/sim/generate.rs `api_server`) — before the engine's
//! scheduler, where vLLM's running and waiting gauges do not count them, as in vLLM itself.
//! The newcomer's pf.yaml: 16K prompts at 60 req/s on h200-gemma-4-e2b (cap 256) was
//! judged `compute` with 5 of 46 requests in the batch.

use benchspec::results::Record;

fn cell<'a>(records: &'a [Record], id: &str) -> &'a Record {
    let found = records.iter().find(|r| r.cell == id);
    found.unwrap_or_else(|| panic!("no {id} in {records:#?}"))
}

#[test]
fn requests_waiting_in_the_api_server_are_not_judged_compute() {
    let _cpu = super::cpu();
    let yaml = "version: 1
name: front end
engine:
  kind: sim
  sim: {profile: h200-gemma-4-e2b, max_num_seqs: 256}
model: {served_name: gemma, max_model_len: 131072}
workload: {max_output_tokens: 32}
matrix: {contexts: [16K], concurrency: [1]}
phases:
  prefill: {enabled: false}
  decode: {enabled: false}
  load: {rates: [4, 60], duration: 3s}
telemetry: {interval: 100ms}
report: {formats: []}
";
    let (records, _dir) = super::open::run_spec_paused(yaml);
    let r = cell(&records, "load/16K/r60");
    let s = r.server.as_ref().unwrap_or_else(|| panic!("{r:#?}"));
    eprintln!(
        "{:?} {:?} {:?} {s:?} {:?}",
        r.avg_active, r.open.rate_achieved, r.open.e2e_ms, r.limit
    );
    // By hand: the API server's one tokenizer takes 16,384 × 1.7 µs = 27.9 ms a prompt
    // (src/sim/profile.rs), so at most 1 / 0.0279 = 35.9 req/s get through; 60 are offered.
    let achieved = r.open.rate_achieved.unwrap_or(f64::NAN);
    assert!(achieved <= 35.9 * 1.02, "{achieved}");
    assert!(r.open.saturated.is_some(), "{r:#?}");
    // Little's law, client side: in flight = completion rate × mean E2E (seconds).
    let e2e_s = r.open.e2e_ms.map_or(f64::NAN, |e| e.mean / 1e3);
    let active = r.avg_active.unwrap_or(f64::NAN);
    let little = achieved * e2e_s;
    assert!(
        (active - little).abs() <= 0.15 * little,
        "{active} vs {achieved} × {e2e_s}"
    );
    // The simulator's own /metrics: running + waiting far under the client's in flight.
    let engine = s.running_mean.unwrap_or(f64::NAN) + s.waiting_max.unwrap_or(f64::NAN);
    assert!(
        active >= 2.0 * engine + 2.0,
        "{active} in flight, {engine} in the engine"
    );
    let l = r.limit.as_ref().unwrap_or_else(|| panic!("{r:#?}"));
    assert_eq!(l.kind, None, "{l:#?}");
    let gap = l.evidence.iter().find(|e| e.name == "before_scheduler");
    let gap = gap.map_or(f64::NAN, |e| e.value);
    assert!((gap - (active - engine)).abs() < 1e-9, "{l:#?}");
    assert!(l.suggestion.contains("API server"), "{}", l.suggestion);
}
