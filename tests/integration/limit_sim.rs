//! The diagnosis (docs/results.md, `limit`) of the embedded simulator (`kind: sim`) whose spec
//! states no cap: the simulator's own `max_num_seqs` is its profile's (tiny: 32,
//! src/sim/profile.rs), so a scheduler holding requests back at it is named, not left
//! "not judged".

use benchspec::results::limit::LimitKind;

#[test]
fn the_simulators_own_cap_names_the_scheduler_without_one_in_the_spec() {
    let _cpu = super::cpu();
    // 64 streams of 256 + 256 tokens: 64 × 32 blocks of 16 fit tiny's 65,536 KV tokens
    // twice over, so only the 32 slots hold requests back; 256 output tokens make the
    // per-request overhead (TTFT, a few ms against ~320 ms of decode) too small for the 64
    // streams' ready queue to add 10%: 32 → 64 is a plateau.
    let yaml = "version: 1
name: sim cap
engine:
  kind: sim
  sim: {profile: tiny}
model: {served_name: tiny}
workload: {max_output_tokens: 256, ignore_eos: true}
matrix: {contexts: [256], concurrency: [16, 32, 64]}
phases: {prefill: {enabled: false}, decode: {duration: 2s}}
telemetry: {interval: 100ms}
report: {formats: []}
";
    let (records, _dir) = super::open::run_spec_paused(yaml);
    for r in &records {
        eprintln!(
            "{}: {:?} tok/s, server {:?}, limit {:?}",
            r.cell, r.total_tok_s, r.server, r.limit
        );
    }
    let cap = benchspec::sim::profile::profile("tiny")
        .unwrap()
        .max_num_seqs as f64;
    assert_eq!(cap, 32.0);
    let c32 = records.iter().find(|r| r.cell == "decode/256/c32").unwrap();
    let c64 = records.iter().find(|r| r.cell == "decode/256/c64").unwrap();
    let l = c32.limit.as_ref().unwrap_or_else(|| panic!("{c32:#?}"));
    assert_eq!(l.kind, Some(LimitKind::Scheduler), "{l:#?}");
    let ev = |name: &str| {
        l.evidence
            .iter()
            .find(|e| e.name == name)
            .map(|e| (e.value, e.source.clone()))
            .unwrap_or_else(|| panic!("no {name} in {l:#?}"))
    };
    assert_eq!(ev("cap"), (cap, "the spec's engine.sim.profile".into()));
    // The simulator's own gauges, as its /metrics gave them for the 64-stream cell: 32
    // running at most, at most 64 − 32 = 32 waiting.
    let s = c64.server.as_ref().unwrap();
    assert_eq!(s.running_max, Some(cap));
    // Its KV gauge agrees: 32 requests of at most (256 + 256) / 16 = 32 blocks hold at most
    // 1,024 of tiny's 4,096 blocks, 0.25 (seen: 0.25 at c64).
    let kv = s.kv_usage_max.unwrap();
    assert!(kv > 0.0 && kv <= 0.25, "{kv}");
    assert_eq!(ev("server.running_max").0, cap);
    let waiting = ev("server.waiting_max").0;
    assert!((1.0..=32.0).contains(&waiting), "{waiting}");
    assert!(
        l.suggestion.contains("engine.sim.max_num_seqs"),
        "{}",
        l.suggestion
    );
    let c16 = records.iter().find(|r| r.cell == "decode/256/c16").unwrap();
    assert!(c16.limit.is_none(), "{:?}", c16.limit);
}
