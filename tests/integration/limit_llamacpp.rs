//! The diagnosis of what limits a cell (docs/results.md, `limit`) on the real llama.cpp
//! server (`scripts/llamacpp-server.py`, SmolLM2-135M on CPU, `/metrics` on): `--parallel 1`
//! and `--parallel 4`, each with a capacity search over 1 to 4 requests at once under a TPOT
//! SLO both meet (probes at 1, then 4). A probe is judged from its own window, with no
//! neighbour to compare: one slot runs one request and defers the rest, so `--parallel 1`'s
//! 4-stream probe is `scheduler` by llama.cpp's `requests_processing` (1, the cap) and
//! `requests_deferred`; four slots run all four and are never called scheduler-limited.
//! (A decode plateau, 2 → 4 streams, was tried first: on this shared 2-core machine one
//! slot's throughput moved by more than the plateau's 10% from cell to cell — 23.5 → 12.0,
//! 2.5 → 19.5 (a cold first cell), 44.3 → 27.3 tok/s — so whether a plateau was seen was
//! chance.) Each variant is run on its own (`--only`) while this test scrapes the server's
//! own `/metrics`, so the evidence is checked against llama.cpp's gauges, not against
//! benchspec's reading of them.

use super::cli::{Bench, tempdir::Dir};
use super::limit::watched;
use benchspec::results::Record;
use benchspec::results::limit::LimitKind;

const GAUGES: [&str; 3] = [
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:kv_cache_usage_ratio",
];

fn spec(port: u16) -> String {
    format!(
        "version: 1
name: limit llama.cpp
hardware: {{type: cpu}}
engine:
  kind: llama-cpp
  base_url: http://127.0.0.1:{port}
  launch:
    command: >-
      .cache/llamacpp/venv/bin/python scripts/llamacpp-server.py
      --model .cache/llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf
      --alias smollm2 --port {port} --ctx 4096 --parallel 4 --threads 2
    ready_timeout: 2m
    stop_timeout: 10s
  sweep: {{--parallel: [1, 4]}}
model: {{served_name: smollm2, max_model_len: 1024}}
workload: {{max_output_tokens: 16, ignore_eos: true}}
matrix: {{contexts: [128], concurrency: [1]}}
phases:
  prefill: {{enabled: false}}
  decode: {{enabled: false}}
  capacity: {{min: 1, max: 4, duration: 3s}}
slo: {{tpot: {{p90: 1s}}}}
telemetry: {{interval: 200ms}}
report: {{formats: []}}
"
    )
}

fn evidence(r: &Record, name: &str) -> f64 {
    let l = r.limit.as_ref().unwrap();
    l.evidence
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.value)
        .unwrap_or_else(|| panic!("no {name} in {l:#?}"))
}

#[test]
fn one_slot_is_the_scheduler_by_llama_cpps_own_metrics_and_four_are_not() {
    let _cpu = super::cpu();
    let root = super::root();
    assert!(
        root.join(".cache/llamacpp/venv/bin/python").exists()
            && root
                .join(".cache/llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf")
                .exists(),
        "the real test engine is missing: run `scripts/install-llamacpp` (the test command `scripts/test` does)"
    );
    let port = super::free_port();
    let dir = Dir::new();
    let file = dir.path().join("spec.yaml");
    std::fs::write(&file, spec(port)).unwrap();
    let out = dir.path().join("run");
    // The launch command's relative paths resolve against the working directory: the root.
    let run = |only: &str, resume: bool| {
        let mut b = Bench::new(&["run", "--only", only])
            .arg(&file)
            .arg("--out")
            .arg(&out);
        if resume {
            b = b.arg("--resume");
        }
        b.run()
    };
    let (one, seen1) = watched(port, GAUGES, || run("parallel-1/*", false));
    assert!(one.code <= 1, "{}", one.stderr);
    let (four, seen4) = watched(port, GAUGES, || run("parallel-4/*", true));
    assert!(four.code <= 1, "{}", four.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    eprintln!("llama.cpp's own gauges, most seen: --parallel 1 {seen1:?}, --parallel 4 {seen4:?}");
    for r in &records {
        eprintln!(
            "{}: {:?} tok/s, server {:?}, limit {:?}",
            r.cell, r.total_tok_s, r.server, r.limit
        );
    }

    // --parallel 1: llama.cpp itself never processed more than 1 and deferred the others: 3,
    // or all 4 in the moment a finished request still holds the slot as the next arrives
    // (seen).
    assert_eq!(
        seen1[0], 1.0,
        "llama.cpp's requests_processing, --parallel 1"
    );
    assert!(
        (1.0..=4.0).contains(&seen1[1]),
        "llama.cpp's requests_deferred, --parallel 1: {}",
        seen1[1]
    );
    let c4 = records
        .iter()
        .find(|r| r.cell == "parallel-1/capacity/128/c4")
        .unwrap();
    let l = c4.limit.as_ref().unwrap_or_else(|| panic!("{c4:#?}"));
    assert_eq!(l.kind, Some(LimitKind::Scheduler), "{l:#?}");
    assert!(l.suggestion.contains("--parallel"), "{}", l.suggestion);
    assert_eq!(evidence(c4, "cap"), 1.0);
    assert_eq!(evidence(c4, "server.running_max"), seen1[0]);
    let waiting = evidence(c4, "server.waiting_max");
    assert!(
        waiting >= 1.0 && waiting <= seen1[1],
        "{waiting} vs llama.cpp's {}",
        seen1[1]
    );
    assert!(
        one.stderr.contains("parallel-1/capacity/128/c4: scheduler"),
        "{}",
        one.stderr
    );

    // --parallel 4: llama.cpp ran more than one at once, and no cell is called scheduler.
    assert!(
        seen4[0] > 1.0,
        "requests_processing, --parallel 4: {seen4:?}"
    );
    for r in records
        .iter()
        .filter(|r| r.variant.as_deref() == Some("parallel-4"))
    {
        let kind = r.limit.as_ref().and_then(|l| l.kind);
        assert_ne!(
            kind,
            Some(LimitKind::Scheduler),
            "{}: {:?}",
            r.cell,
            r.limit
        );
    }
}
