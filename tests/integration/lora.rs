//! LoRA adapters (`workload.adapters`) against the simulator serving them
//! (`sim::lora`): what the records claim per adapter held against the simulator's own
//! counters (`benchspec_sim:lora_requests_total`, `…lora_loads_total`), the effect of
//! `max_loras`, and bad input refused where it stands.

use super::cli::Bench;
use benchspec::results::{Record, Status};
use benchspec::sim::lora::LoraOptions;
use benchspec::sim::profile;
use std::collections::BTreeMap;

/// A simulator on 127.0.0.1 serving `tiny` with adapters a, b, c in `max_loras` slots,
/// each load costing 40 ms.
pub(super) fn sim_with(max_loras: usize) -> (tokio::runtime::Runtime, benchspec::sim::Sim) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut opts = benchspec::sim::Options::new(profile::profile("tiny").unwrap());
        opts.lora = Some(LoraOptions {
            adapters: vec!["a".into(), "b".into(), "c".into()],
            max_loras,
            load_s: 0.04,
        });
        benchspec::sim::start(listener, opts).unwrap()
    });
    (rt, sim)
}

/// The simulator's own LoRA counters: requests per adapter, and loads.
pub(super) fn counters(rt: &tokio::runtime::Runtime, base: &str) -> (BTreeMap<String, u64>, u64) {
    let text = rt.block_on(async {
        let http = benchspec::client::http_builder()
            .no_proxy()
            .build()
            .unwrap();
        let r = http.get(format!("{base}/metrics")).send().await.unwrap();
        r.text().await.unwrap()
    });
    let mut per = BTreeMap::new();
    let mut loads = 0;
    for line in text.lines() {
        let value = || line.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
        if let Some(rest) = line.strip_prefix("benchspec_sim:lora_requests_total{lora_name=\"") {
            per.insert(rest.split('"').next().unwrap().to_string(), value());
        } else if line.starts_with("benchspec_sim:lora_loads_total ") {
            loads = value();
        }
    }
    (per, loads)
}

/// A load cell of 12 req/s for 3 s over the adapters `mix`, against `base`; cold prompts, so
/// that no request is sent before the window (primes would draw adapters too).
pub(super) fn spec(base: &str, mix: &str) -> String {
    format!(
        "version: 1\nname: t\nengine: {{kind: vllm, base_url: '{base}'}}\nmodel: {{served_name: tiny}}\n\
         workload: {{max_output_tokens: 16, seed: 3, prompt_cache: cold, adapters: {mix}}}\n\
         matrix: {{contexts: [256], concurrency: [1]}}\n\
         phases: {{prefill: {{enabled: false}}, decode: {{enabled: false}}, load: {{rates: [12], arrivals: constant, duration: 3s}}}}\n"
    )
}

/// Run `text`; its code, stderr, records and `report.md`.
fn run(text: &str) -> (i32, String, Vec<Record>, String) {
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("lora.yaml", text)
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    (done.code, done.stderr, records, report)
}

/// Each adapter's requests in `by_adapter` are the simulator's own count of them, and the
/// mix is near its weights; the engine's LoRA gauge is read into `lora`.
#[test]
fn by_adapter_agrees_with_the_simulators_own_counts() {
    let _cpu = super::cpu();
    let (rt, sim) = sim_with(3);
    let base = sim.base_url();
    let (code, stderr, records, report) = run(&spec(&base, "{a: 2, b: 1, c: 1}"));
    let (per, loads) = counters(&rt, &base);
    rt.block_on(sim.stop());
    assert_eq!(code, 0, "{stderr}");
    let r = records.iter().find(|r| r.cell == "load/256/r12").unwrap();
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let rows = r.by_adapter.as_deref().unwrap_or_default();
    let claimed: BTreeMap<String, u64> = rows
        .iter()
        .map(|u| (u.adapter.clone(), u.requests))
        .collect();
    assert_eq!(claimed, per, "records vs the simulator's count");
    assert_eq!(claimed.values().sum::<u64>(), r.requests_started);
    assert!(
        (35..=37).contains(&r.requests_started),
        "12 req/s for 3 s: {r:#?}"
    );
    // 2:1:1 of 36: a gets about 18 (binomial sd 3).
    assert!((9..=27).contains(&per["a"]), "{per:?}");
    assert!(
        rows.iter()
            .all(|u| u.ttft_ms_p50.is_some() && u.total_tok_s.is_some())
    );
    assert_eq!(loads, 3, "three slots: each adapter loaded once");
    let lora = r.lora.as_ref().unwrap_or_else(|| panic!("{r:#?}"));
    assert_eq!(lora.max_lora, Some(3));
    assert!(
        lora.running_adapters_max <= 3 && lora.readings > 0,
        "{lora:?}"
    );
    // The report's Adapters table: a row per adapter, its requests as recorded.
    assert!(report.contains("## Adapters"), "{report}");
    for u in rows {
        let row = format!("| `load/256/r12` | {} | {} |", u.adapter, u.requests);
        assert!(report.contains(&row), "{row} in:\n{report}");
    }
}

/// Three adapters in one slot: every switch is a load (more than three, each 40 ms, and the
/// requests behind a switch wait), against none after the first use with three slots.
#[test]
fn one_slot_for_three_adapters_costs_loads() {
    let _cpu = super::cpu();
    let mut seen = Vec::new();
    for max_loras in [1, 3] {
        let (rt, sim) = sim_with(max_loras);
        let base = sim.base_url();
        let (code, stderr, records, _) = run(&spec(&base, "{a: 1, b: 1, c: 1}"));
        let (requests, loads) = counters(&rt, &base);
        rt.block_on(sim.stop());
        assert_eq!(code, 0, "{stderr}");
        let r = records.iter().find(|r| r.cell == "load/256/r12").unwrap();
        assert_eq!(
            r.lora.as_ref().and_then(|l| l.max_lora),
            Some(max_loras as u64)
        );
        // Every adapter the simulator ran a request on is seen, with one slot too (its
        // gauge keeps each label set it was set with, as vLLM's does; it kept only the
        // latest, and the window saw one or two of the three).
        let ran: Vec<&String> = requests
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(a, _)| a)
            .collect();
        let seen_by_record: Vec<&String> = r
            .lora
            .as_ref()
            .map(|l| l.adapters_seen.iter().collect())
            .unwrap_or_default();
        assert_eq!(seen_by_record, ran, "max_loras {max_loras}");
        seen.push((loads, r.ttft_ms.unwrap().p50));
    }
    let ((one, ttft_one), (three, ttft_three)) = (seen[0], seen[1]);
    assert_eq!(three, 3, "three slots: a load per adapter, then none");
    assert!(
        one > 6,
        "one slot: {one} loads for 36 requests over 3 adapters"
    );
    assert!(
        ttft_one > ttft_three + 10.0,
        "TTFT p50 {ttft_one} ms with one slot vs {ttft_three} ms with three"
    );
}

/// An adapter the server does not list is refused before anything is measured, pointing at
/// it in the spec (exit 2); an empty mix and a weight of 0 are refused on load.
#[test]
fn bad_adapters_are_refused_where_they_stand() {
    let _cpu = super::cpu();
    let (rt, sim) = sim_with(1);
    let text = spec(&sim.base_url(), "{a: 1, zz: 1}");
    let (code, stderr, records, _) = run(&text);
    rt.block_on(sim.stop());
    assert_eq!(code, 2, "{stderr}");
    assert!(records.is_empty());
    assert!(stderr.contains("lora.yaml:5:"), "{stderr}");
    assert!(
        stderr.contains("adapter `zz`") && stderr.contains("`a`"),
        "{stderr}"
    );
    for (mix, says) in [("{}", "empty adapter mix"), ("{a: 1, b: 0}", "weight 0")] {
        let done = Bench::new(&["validate"])
            .spec("lora.yaml", &spec("http://127.0.0.1:1", mix))
            .run();
        assert_eq!(done.code, 2, "{mix}: {}", done.stderr);
        assert!(
            done.stderr.contains("lora.yaml:5:"),
            "{mix}: {}",
            done.stderr
        );
        assert!(done.stderr.contains(says), "{mix}: {}", done.stderr);
    }
}

/// With `kind: sim`, an adapter the simulator does not serve is refused at validate, where
/// the mix names it (it was found only at readiness).
#[test]
fn an_adapter_the_simulator_does_not_serve_is_refused_at_validate() {
    let text = "version: 1\nname: t\nengine:\n  kind: sim\n  sim: {lora: {adapters: [a, b]}}\nmodel: {served_name: m}\nmatrix: {contexts: [1K], concurrency: [1]}\nworkload:\n  adapters: {a: 1, zz: 1}\n";
    let done = Bench::new(&["validate"]).spec("t.yaml", text).run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(done.stderr.contains("t.yaml:9:"), "{}", done.stderr);
    assert!(
        done.stderr
            .contains("adapter `zz` is not served: the simulator serves a, b"),
        "{}",
        done.stderr
    );
    let ok = text.replace("zz: 1", "b: 1");
    let done = Bench::new(&["validate"]).spec("t.yaml", &ok).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
}

/// The shipped example on the paused clock: every measured cell is broken down over its three
/// adapters, the rows adding up to the cell, and the simulator's gauge says one slot. The
/// decode cell is invalid, as it should be: with four streams over three adapters and one
/// slot, the engine runs only those on the resident adapter, the rest waiting for it.
#[test]
fn the_shipped_lora_spec_breaks_cells_down_by_adapter() {
    let text = std::fs::read_to_string(super::repo_path("specs/lora.yaml")).unwrap();
    let (records, _dir) = super::open::run_spec_paused(&text);
    let measured: Vec<&Record> = records
        .iter()
        .filter(|r| r.status != Status::Skipped)
        .collect();
    assert_eq!(
        measured.len(),
        2,
        "decode/2K/c4 and load/2K/r8: {records:#?}"
    );
    for r in measured {
        let rows = r.by_adapter.as_deref().unwrap_or_default();
        let names: Vec<&str> = rows.iter().map(|u| u.adapter.as_str()).collect();
        assert_eq!(names, ["sql", "summarize", "support"], "{}", r.cell);
        assert_eq!(
            rows.iter().map(|u| u.requests).sum::<u64>(),
            r.requests_started
        );
        assert_eq!(
            r.lora.as_ref().and_then(|l| l.max_lora),
            Some(1),
            "{}",
            r.cell
        );
        if r.cell == "decode/2K/c4" {
            assert_eq!(r.status, Status::Invalid, "{r:#?}");
            assert!(r.reasons[0].contains("of 4 requests at once"), "{r:#?}");
        }
    }
}
