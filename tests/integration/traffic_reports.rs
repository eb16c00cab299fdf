//! What the requests carried — images, speculative decoding, LoRA adapters — in
//! `results.csv`, `results.json` and `benchspec compare`, each number held against the
//! simulator's own `/metrics` counters or a figure worked by hand.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `run --out DIR/NAME` of `spec` through the CLI (which writes the reports): the run
/// directory.
fn run(dir: &Dir, name: &str, spec: &str) -> PathBuf {
    let out = dir.path().join(name);
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec(&format!("{name}.yaml"), spec)
        .run();
    assert_eq!(done.code, 0, "{name}: {}", done.stderr);
    out
}

/// `results.csv` of `run`: each row by its cell, column name → value.
fn csv_rows(run: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut rd = csv::Reader::from_path(run.join("results.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    rd.records()
        .map(Result::unwrap)
        .map(|r| {
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            (row["cell"].clone(), row)
        })
        .collect()
}

/// `compare BASE NEW --format json`, parsed.
fn compare_json(base: &Path, new: &Path) -> serde_json::Value {
    let done = Bench::new(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "json",
    ])
    .run();
    assert!(done.code <= 1, "{}", done.stderr);
    serde_json::from_str(&done.stdout).unwrap_or_else(|e| panic!("{e}: {}", done.stdout))
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?} in {row:?}", row[col]))
}

/// One image a prompt, then two: the CSV's image columns add up to the simulator's own
/// counters, `results.json` carries the same, and `compare` sets them side by side.
#[test]
fn images_in_csv_json_and_compare_agree_with_the_simulator() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let mut runs = Vec::new();
    for count in [1u64, 2] {
        let (rt, sim) = super::images::sim_with(super::images::patch16());
        let images = format!("{{count: {count}, width: 64, height: 48}}");
        let spec = super::images::spec_for(&sim.base_url(), &images);
        let out = run(&dir, &format!("n{count}"), &spec);
        let rows = csv_rows(&out);
        let (mut total, mut requests) = (0.0, 0.0);
        for row in rows.values() {
            // By hand: ⌈64/16⌉ · ⌈48/16⌉ = 12 tokens an image.
            assert_eq!(num(row, "images_per_request"), count as f64, "{row:?}");
            assert_eq!(num(row, "image_tokens"), 12.0 * count as f64, "{row:?}");
            assert_eq!(num(row, "image_text_prompt_tokens"), 256.0, "{row:?}");
            total += num(row, "images_total");
            requests += num(row, "images_total") / num(row, "images_per_request");
        }
        let seen = super::images::counter(&rt, &sim, "benchspec_sim:images_total");
        let charged = super::images::counter(&rt, &sim, "benchspec_sim:image_tokens_total");
        assert_eq!(total, seen as f64, "CSV images vs the simulator's");
        assert_eq!(requests * 12.0 * count as f64, charged as f64);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
                .unwrap();
        let in_json: f64 = json["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["record"]["images"]["total"].as_f64())
            .sum();
        assert_eq!(in_json, seen as f64, "results.json vs the simulator's");
        runs.push(out);
    }
    let c = compare_json(&runs[0], &runs[1]);
    let rows = c["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{c:#}");
    for r in rows {
        let i = &r["images"];
        assert_eq!(i["base_per_request"], 1.0, "{r:#}");
        assert_eq!(i["new_per_request"], 2.0, "{r:#}");
        assert_eq!(i["image_tokens_change"], 12.0, "24 − 12 by hand: {r:#}");
    }
    let md = Bench::new(&[
        "compare",
        runs[0].to_str().unwrap(),
        runs[1].to_str().unwrap(),
    ])
    .run();
    assert!(
        md.stdout.contains("Images in the prompts")
            && md.stdout.contains("| 1.00 → 2.00 | 12.0 → 24.0 (+12.0) |"),
        "{}",
        md.stdout
    );
}

/// The shipped speculative spec: the CSV's columns are the record's, and the acceptance the
/// simulator's model gives (0.6 a token, 3 drafted: (0.6 + 0.36 + 0.216) / 3 = 0.392).
#[test]
fn spec_decode_in_the_csv() {
    let text = std::fs::read_to_string(super::repo_path("specs/speculative.yaml")).unwrap();
    let (records, dir) = super::open::run_spec_paused(&text);
    let out = dir.path().join("run");
    let done = Bench::new(&["report", out.to_str().unwrap(), "--format", "csv"]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let rows = csv_rows(&out);
    let r = records.iter().find(|r| r.cell == "decode/1K/c8").unwrap();
    let s = r.spec_decode.as_ref().unwrap();
    let row = &rows["decode/1K/c8"];
    assert_eq!(num(row, "spec_draft_tokens"), s.draft_tokens as f64);
    assert_eq!(num(row, "spec_accepted_tokens"), s.accepted_tokens as f64);
    assert_eq!(num(row, "spec_drafts"), s.drafts.unwrap() as f64);
    assert_eq!(row["spec_source"], "vllm-metrics");
    let rate = num(row, "spec_acceptance_rate");
    assert!((rate - 0.392).abs() < 0.03, "{rate}");
    assert!(
        (rate - s.accepted_tokens as f64 / s.draft_tokens as f64).abs() < 1e-3,
        "{row:?}"
    );
}

/// A run of the adapters `mix` against a simulator of its own into `dir/name`, its CSV's
/// `by_adapter_requests` checked against the simulator's own count: the run directory and
/// that count (adapters asked for at least once).
fn mix_run(dir: &Dir, name: &str, mix: &str) -> (PathBuf, BTreeMap<String, u64>) {
    let (rt, sim) = super::lora::sim_with(3);
    let base = sim.base_url();
    let out = run(dir, name, &super::lora::spec(&base, mix));
    let (mut per, _) = super::lora::counters(&rt, &base);
    // The simulator lists every adapter it serves, 0 for one never asked for.
    per.retain(|_, n| *n > 0);
    rt.block_on(sim.stop());
    let rows = csv_rows(&out);
    let row = &rows["load/256/r12"];
    let claimed: BTreeMap<String, u64> = row["by_adapter_requests"]
        .split("; ")
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(claimed, per, "{name}: CSV vs the simulator's own count");
    assert_eq!(num(row, "lora_max_lora"), 3.0);
    (out, per)
}

/// Two mixes on two simulators: the CSV's `by_adapter_requests` are each simulator's own
/// count per adapter, and `compare` pairs the adapters, one only in the base run.
#[test]
fn adapters_in_csv_and_compare_agree_with_the_simulator() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let mut runs = Vec::new();
    let mut counted = Vec::new();
    for (name, mix) in [("abc", "{a: 2, b: 1, c: 1}"), ("ab", "{a: 1, b: 1}")] {
        let (out, per) = mix_run(&dir, name, mix);
        counted.push(per);
        runs.push(out);
    }
    let c = compare_json(&runs[0], &runs[1]);
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cell"] == "load/256/r12")
        .unwrap_or_else(|| panic!("{c:#}"));
    let got: Vec<(String, Option<u64>, Option<u64>)> = row["adapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["adapter"].as_str().unwrap().to_string(),
                a["base_requests"].as_u64(),
                a["new_requests"].as_u64(),
            )
        })
        .collect();
    let want: Vec<(String, Option<u64>, Option<u64>)> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                counted[0].get(*n).copied(),
                counted[1].get(*n).copied(),
            )
        })
        .collect();
    assert_eq!(got, want, "{row:#}");
    let md = Bench::new(&[
        "compare",
        runs[0].to_str().unwrap(),
        runs[1].to_str().unwrap(),
    ])
    .run();
    let line = format!("| `load/256/r12` | c | {} → — |", counted[0]["c"]);
    assert!(
        md.stdout.contains("LoRA adapters") && md.stdout.contains(&line),
        "{line} in\n{}",
        md.stdout
    );
}
