//! `export --format benchmark-report` field by field: each value what llm-d's Benchmark Report
//! v0.2.1 schema (tests/fixtures/llm-d) says it is, checked against the records, the requests
//! and the peers' own files (tests/fixtures/peers), never a figure made up.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::interop::{close, fixture, import, read_json};
use super::repo_path;
use serde_json::Value;
use std::path::Path;

/// `export DIR` into `DIR/br`: each cell's report by cell id, each valid against the schema.
fn export(run: &Path) -> std::collections::BTreeMap<String, Value> {
    let out = run.join("br");
    let d = Bench::new(&[
        "export",
        run.to_str().unwrap(),
        "--format",
        "benchmark-report",
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    let schema = read_json(&repo_path(
        "tests/fixtures/llm-d/br_v0_2_1_json_schema.json",
    ));
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    std::fs::read_dir(&out)
        .unwrap()
        .map(|e| {
            let doc: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap())
                    .unwrap();
            let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
            let cell = doc["scenario"]["load"]["metadata"]["description"]
                .as_str()
                .unwrap()
                .to_string();
            (cell, doc)
        })
        .collect()
}

fn aggregate<'a>(doc: &'a Value, part: &str, field: &str) -> &'a Value {
    &doc["results"]["request_performance"]["aggregate"][part][field]
}

/// An imported run exports the peer as the load's tool, its lengths as the peer saw them
/// (AIPerf's prompts ranged 935–1099: not `fixed`), its own request rate and output lengths.
#[test]
fn an_imported_run_exports_the_peers_identity_lengths_and_rates() {
    let dir = Dir::new();
    let file = fixture("aiperf-0.13.0-rate4.json");
    let out = dir.path().join("a");
    import("aiperf", &file, &out);
    let peer = read_json(&file);
    let docs = export(&out);
    let doc = &docs["import/aiperf/1"];
    let load = &doc["scenario"]["load"]["standardized"];
    assert_eq!(load["tool"], "aiperf", "{load:#}");
    assert_eq!(load["tool_version"], peer["aiperf_version"]);
    let isl = &load["input_seq_len"];
    assert_eq!(isl["distribution"], "other", "{isl:#}");
    assert_eq!(isl["min"], 935);
    assert_eq!(isl["max"], 1099);
    // Output lengths ranged 16–128: not enforced, not written.
    assert!(load.get("output_seq_len").is_none(), "{load:#}");
    assert_eq!(load["rate_qps"], peer["input_config"]["phases"][0]["rate"]);
    let out_len = aggregate(doc, "requests", "output_length");
    let avg = peer["output_sequence_length"]["avg"].as_f64().unwrap();
    assert!(close(out_len["mean"].as_f64().unwrap(), avg, 1e-9));
    assert_eq!(out_len["max"], 128.0);
    let rate = aggregate(doc, "throughput", "request_rate")["mean"]
        .as_f64()
        .unwrap();
    assert!(close(
        rate,
        peer["request_throughput"]["avg"].as_f64().unwrap(),
        1e-9
    ));
    assert!(
        doc["run"]["description"]
            .as_str()
            .unwrap()
            .starts_with("AIPerf 0.13.0, imported by benchspec")
    );

    // guidellm's outputs were all 64 tokens: fixed at 64; its prompts 610–656.
    let file = fixture("guidellm-0.8.1-poisson.json");
    let out = dir.path().join("g");
    import("guidellm", &file, &out);
    let docs = export(&out);
    let load = &docs["import/guidellm/1"]["scenario"]["load"]["standardized"];
    assert_eq!(load["tool"], "guidellm");
    assert_eq!(load["tool_version"], "0.8.1");
    assert_eq!(load["output_seq_len"]["distribution"], "fixed");
    assert_eq!(load["output_seq_len"]["value"], 64.0);
    assert_eq!(load["input_seq_len"]["distribution"], "other");
    assert_eq!(load["input_seq_len"]["min"], 610);
    assert_eq!(load["input_seq_len"]["max"], 656);
}

/// A simulator run's prefill, decode and load cells: each field what the schema means.
#[test]
fn exported_fields_mean_what_the_schema_says() {
    let spec = "version: 1
name: export fields
engine: {kind: sim, sim: {profile: tiny, time_scale: 4}}
model: {served_name: tiny}
workload: {max_output_tokens: 32}
matrix: {contexts: [256], concurrency: [2]}
phases:
  prefill: {repeats: 3}
  decode: {duration: 300ms}
  load: {rates: [20], duration: 1s, input: {distribution: uniform, spread: 0.5}}
";
    let (records, run) = super::open::run_spec_paused(spec);
    let docs = export(&run.path().join("run"));
    // Prefill: three cold requests one after another — no request rate, one output token.
    let p = &docs["prefill/256"];
    assert!(
        aggregate(p, "throughput", "request_rate").is_null(),
        "{p:#}"
    );
    assert_eq!(aggregate(p, "requests", "output_length")["mean"], 1.0);
    assert_eq!(aggregate(p, "requests", "input_length")["mean"], 256.0);
    assert!(p["run"]["time"].get("duration").is_none());
    // Decode: the window's tokens belong to requests it cut, so no per-request output length;
    // its rate is completions in the window over its length.
    let d = &docs["decode/256/c2"];
    let rd = records.iter().find(|r| r.cell == "decode/256/c2").unwrap();
    assert!(aggregate(d, "requests", "output_length").is_null(), "{d:#}");
    let want = rd.completed as f64 / rd.measured_s.unwrap();
    let got = aggregate(d, "throughput", "request_rate")["mean"]
        .as_f64()
        .unwrap();
    assert!(close(got, want, 1e-9), "{got} vs {want}");
    assert_eq!(
        d["scenario"]["load"]["standardized"]["output_seq_len"]["value"],
        32.0
    );
    the_load_cell_means_what_it_sent(&docs["load/256/r20"], &run.path().join("run"));
}

/// Load (`l`, exported from the run in `run`): the mean of its finished requests' output
/// tokens (requests.jsonl), at most 32; its input lengths uniform over 128..=384; its rate.
fn the_load_cell_means_what_it_sent(l: &serde_json::Value, run: &std::path::Path) {
    let text = std::fs::read_to_string(run.join("requests.jsonl")).unwrap();
    let outs: Vec<f64> = super::requests_of(&text)
        .into_iter()
        .filter(|l| l.cell == "load/256/r20")
        .filter_map(|l| match l.request {
            benchspec::rundir::Request::Open(o) if o.error.is_none() => {
                Some(o.output_tokens as f64)
            }
            _ => None,
        })
        .collect();
    let mean = outs.iter().sum::<f64>() / outs.len() as f64;
    let got = aggregate(l, "requests", "output_length")["mean"]
        .as_f64()
        .unwrap();
    assert!(
        got <= 32.0 && (got - mean).abs() <= 0.05,
        "{got} vs {mean} of {outs:?}"
    );
    let isl = &l["scenario"]["load"]["standardized"]["input_seq_len"];
    assert_eq!(isl["distribution"], "uniform", "{isl:#}");
    assert_eq!(
        (isl["min"].as_u64(), isl["max"].as_u64()),
        (Some(128), Some(384))
    );
    assert_eq!(l["scenario"]["load"]["standardized"]["rate_qps"], 20.0);
}
