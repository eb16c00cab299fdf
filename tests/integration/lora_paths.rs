//! LoRA adapters on every path a server is started or results are joined: each engine
//! variant's server checked at readiness as the spec's engine is (and a trace replay), and
//! `merge` of split shards keeping `by_adapter`, held against the simulator's own counters.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use benchspec::results::Status;
use std::collections::BTreeMap;

/// Two variants of the simulator serving adapters: `both` serves `a` and `b`, `only_a`
/// (second) serves `a` alone; the workload asks for both.
const VARIANTS: &str = "version: 1
name: lora variants
engine:
  kind: sim
  sim: {profile: tiny, lora: {adapters: [a, b], max_loras: 2, load: 10ms}}
  variants:
    - name: both
    - name: only_a
      sim: {lora: {adapters: [a], max_loras: 2, load: 10ms}}
model: {served_name: tiny}
workload:
  max_output_tokens: 16
  adapters:
    a: 1
    b: 1
matrix: {contexts: [256], concurrency: [2]}
phases: {prefill: {enabled: false}, decode: {duration: 500ms}}
";

/// A variant whose server does not list an adapter of the mix is refused as the spec's
/// engine would be — exit 2, the adapter and where the spec names it — before any of its
/// cells, and the cells of the variant measured before it are kept.
#[test]
fn a_variant_without_an_adapter_is_refused_and_nothing_measured_is_lost() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("v.yaml", VARIANTS)
        .run();
    assert_eq!(done.code, 2, "{}\n{}", done.stdout, done.stderr);
    // `b: 1` is line 15 of the spec.
    assert!(done.stderr.contains("v.yaml:15:"), "{}", done.stderr);
    assert!(
        done.stderr.contains("adapter `b`") && done.stderr.contains("variant `only_a`"),
        "{}",
        done.stderr
    );
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let measured: Vec<_> = records
        .iter()
        .filter(|r| r.status != Status::Skipped)
        .collect();
    let ids: Vec<&str> = measured.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(ids, ["both/decode/256/c2"], "{records:#?}");
    let r = measured[0];
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let names: Vec<&str> = r
        .by_adapter
        .iter()
        .flatten()
        .map(|u| u.adapter.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(out.join("report.md").exists(), "the measured cell reported");
}

/// A trace replay is refused the same way (it runs on the spec's engine, checked once).
#[test]
fn a_replay_without_an_adapter_is_refused_where_the_spec_names_it() {
    let _cpu = super::cpu();
    let trace = std::fs::read_to_string(super::repo_path("specs/traces/sample.jsonl")).unwrap();
    let text = "version: 1
name: lora replay
engine: {kind: sim, sim: {profile: tiny, lora: {adapters: [a]}}}
model: {served_name: tiny}
workload:
  adapters: {a: 1, zz: 1}
matrix: {contexts: [4K], concurrency: [1]}
phases: {prefill: {enabled: false}, decode: {enabled: false}, replay: {trace: sample.jsonl}}
";
    let dir = Dir::new();
    std::fs::write(dir.path().join("sample.jsonl"), trace).unwrap();
    let spec = dir.path().join("r.yaml");
    std::fs::write(&spec, text).unwrap();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains("r.yaml:6:") && done.stderr.contains("adapter `zz`"),
        "{}",
        done.stderr
    );
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    assert!(records.is_empty(), "{records:#?}");
}

/// `run --shard K/2 --split-load --start-at AT` of `spec` into `dir/name`.
fn split_shard(
    dir: &std::path::Path,
    spec: &std::path::Path,
    k: u32,
    at: &str,
) -> std::path::PathBuf {
    let out = dir.join(format!("s{k}"));
    let shard = format!("{k}/2");
    let done = Bench::new(&[
        "run",
        "-q",
        "--shard",
        &shard,
        "--split-load",
        "--start-at",
        at,
    ])
    .arg("--out")
    .arg(&out)
    .arg(spec)
    .run();
    assert_eq!(done.code, 0, "shard {k}: {}", done.stderr);
    out
}

/// The load cell's `by_adapter` of the run in `dir`: adapter → requests.
fn by_adapter(dir: &std::path::Path) -> BTreeMap<String, u64> {
    let records = benchspec::rundir::read_records(&dir.join("results.jsonl")).unwrap();
    let r = records
        .iter()
        .find(|r| r.cell == "load/256/r12")
        .unwrap_or_else(|| panic!("{records:#?}"));
    r.by_adapter
        .iter()
        .flatten()
        .map(|u| (u.adapter.clone(), u.requests))
        .collect()
}

/// Two shards of a LoRA load cell against one simulator, started together and merged: the
/// whole cell's `by_adapter` counts are the shards' added and the simulator's own count of
/// requests per adapter.
#[test]
fn merged_split_shards_keep_by_adapter() {
    let _cpu = super::cpu();
    let (rt, sim) = super::lora::sim_with(3);
    let base = sim.base_url();
    let dir = Dir::new();
    let spec = dir.path().join("lora.yaml");
    std::fs::write(&spec, super::lora::spec(&base, "{a: 2, b: 1, c: 1}")).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let at = benchspec::results::rfc3339_ms(now + 4.0);
    let (one, two) = std::thread::scope(|s| {
        let (d, sp, at) = (dir.path(), spec.as_path(), at.as_str());
        let one = s.spawn(move || split_shard(d, sp, 1, at));
        let two = s.spawn(move || split_shard(d, sp, 2, at));
        (one.join().unwrap(), two.join().unwrap())
    });
    let (mut per, _) = super::lora::counters(&rt, &base);
    rt.block_on(sim.stop());
    per.retain(|_, n| *n > 0);
    let out = dir.path().join("merged");
    let done = Bench::new(&["merge", "--out", out.to_str().unwrap()])
        .arg(&one)
        .arg(&two)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let mut added = by_adapter(&one);
    for (k, n) in by_adapter(&two) {
        *added.entry(k).or_default() += n;
    }
    added.retain(|_, n| *n > 0);
    let mut merged = by_adapter(&out);
    assert_eq!(merged.len(), 3, "a row per adapter of the mix: {merged:?}");
    merged.retain(|_, n| *n > 0);
    assert_eq!(merged, added, "the shards' counts added");
    assert_eq!(merged, per, "the simulator's own count per adapter");
    assert!(per.values().sum::<u64>() >= 30, "12 req/s for 3 s: {per:?}");
}
