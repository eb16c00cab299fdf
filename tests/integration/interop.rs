//! `import` of the peers' own result files (tests/fixtures/peers, how they were made in its
//! README) and `export --format benchmark-report`, validated against llm-d's published
//! Benchmark Report v0.2.1 schema (a verbatim copy in tests/fixtures/llm-d).

use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::repo_path;
use benchspec::results::Record;
use serde_json::Value;
use std::path::Path;

pub(super) fn fixture(name: &str) -> String {
    repo_path(&format!("tests/fixtures/peers/{name}"))
}

pub(super) fn read_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(super) fn import(tool: &str, file: &str, out: &Path) -> Vec<Record> {
    let d = Bench::new(&["import", tool, file, "--out", out.to_str().unwrap()]).run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(out.join("report.html").is_file() && out.join("report.md").is_file());
    benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap()
}

pub(super) fn close(a: f64, b: f64, tol: f64) -> bool {
    ((a - b) / b).abs() <= tol
}

#[test]
fn guidellm_keeps_its_own_statistics() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let file = fixture("guidellm-0.8.1-poisson.json");
    let records = import("guidellm", &file, &out);
    let peer = read_json(&file);
    let m = &peer["benchmarks"][0]["metrics"];
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r.cell, "import/guidellm/1");
    assert_eq!(r.token_source.map(|t| t.as_str()), Some("imported"));
    let ttft = m["time_to_first_token_ms"]["successful"]["median"]
        .as_f64()
        .unwrap();
    let got = r.ttft_ms.unwrap().p50;
    assert!(
        close(got, ttft, 0.005),
        "TTFT p50 {got} vs guidellm's {ttft}"
    );
    let p99 = m["time_to_first_token_ms"]["successful"]["percentiles"]["p99"]
        .as_f64()
        .unwrap();
    assert!(close(r.ttft_ms.unwrap().p99, p99, 0.005));
    let e2e = m["request_latency"]["successful"]["median"]
        .as_f64()
        .unwrap()
        * 1000.0;
    assert!(
        close(r.open.e2e_ms.unwrap().p50, e2e, 0.005),
        "request latency s → ms"
    );
    assert_eq!(
        r.completed,
        m["request_totals"]["successful"].as_u64().unwrap()
    );
    assert_eq!(r.open.rate_offered.map(|x| x.0), Some(3.0));
    let manifest = read_json(out.join("manifest.json").to_str().unwrap());
    assert_eq!(manifest["imported_from"]["tool"], "guidellm");
    assert_eq!(manifest["imported_from"]["version"], "0.8.1");
    taken_like_any_run(&out, &dir.path().join("h.sqlite"));
}

/// The imported run in `out`: `compare` and `history` (`db`) take it like any run, the
/// history naming its tool.
fn taken_like_any_run(out: &std::path::Path, db: &std::path::Path) {
    let same = Bench::new(&["compare", out.to_str().unwrap(), out.to_str().unwrap()]).run();
    assert_eq!(same.code, 0, "{}", same.stdout);
    let add = Bench::new(&[
        "history",
        "add",
        out.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ])
    .run();
    assert_eq!(add.code, 0, "{}", add.stderr);
    let list = Bench::new(&[
        "history",
        "list",
        "--format",
        "json",
        "--db",
        db.to_str().unwrap(),
    ])
    .run();
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list[0]["tool"], "guidellm");
    assert_eq!(list[0]["spec"], "guidellm gemma");
}

#[test]
fn aiperf_and_vllm_keep_their_own_statistics() {
    let dir = Dir::new();
    let file = fixture("aiperf-0.13.0-rate4.json");
    let r = &import("aiperf", &file, &dir.path().join("a"))[0];
    let peer = read_json(&file);
    assert_eq!(r.cell, "import/aiperf/1");
    let want = peer["time_to_first_token"]["p50"].as_f64().unwrap();
    assert!(close(r.ttft_ms.unwrap().p50, want, 0.005));
    assert!(close(
        r.total_tok_s.unwrap(),
        peer["output_token_throughput"]["avg"].as_f64().unwrap(),
        0.005
    ));
    assert_eq!(r.completed, 63);
    assert_eq!(r.open.rate_offered.map(|x| x.0), Some(4.0));

    let file = fixture("vllm-0.34.0-rate4.json");
    let r = &import("vllm", &file, &dir.path().join("v"))[0];
    let peer = read_json(&file);
    assert_eq!(r.cell, "import/vllm/1");
    assert!(close(
        r.ttft_ms.unwrap().p50,
        peer["median_ttft_ms"].as_f64().unwrap(),
        0.005
    ));
    assert!(close(
        r.ttft_ms.unwrap().p90,
        peer["p90_ttft_ms"].as_f64().unwrap(),
        0.005
    ));
    assert!(close(
        r.open.tpot_ms.unwrap().p99,
        peer["p99_tpot_ms"].as_f64().unwrap(),
        0.005
    ));
    assert_eq!(r.completed, peer["completed"].as_u64().unwrap());
}

#[test]
fn a_file_of_another_tool_is_refused_saying_what_is_read() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let d = Bench::new(&[
        "import",
        "vllm",
        &fixture("aiperf-0.13.0-rate4.json"),
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(d.code, 2, "{}", d.stderr);
    assert!(
        d.stderr.contains("aiperf-0.13.0-rate4.json") && d.stderr.contains("--save-result"),
        "{}",
        d.stderr
    );
    assert!(!out.join("results.jsonl").exists());
}

/// Every exported file validates against the Benchmark Report v0.2.1 schema: a simulator
/// run's decode and load cells, and an imported run's cell.
#[test]
fn exported_reports_validate_against_the_schema() {
    let schema = read_json(&repo_path(
        "tests/fixtures/llm-d/br_v0_2_1_json_schema.json",
    ));
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let dir = Dir::new();
    let spec = "version: 1
name: export
hardware: {gpu: H200 NVL, gpu_count: 1}
engine: {kind: sim, sim: {profile: tiny, time_scale: 4}}
model: {served_name: tiny}
workload: {max_output_tokens: 32}
matrix: {contexts: [256], concurrency: [2]}
phases: {prefill: {enabled: false}, decode: {duration: 300ms}, load: {rates: [20], duration: 1s}}
";
    let (_records, run) = super::open::run_spec_paused(spec);
    let imported = dir.path().join("imported");
    import(
        "guidellm",
        &fixture("guidellm-0.8.1-poisson.json"),
        &imported,
    );
    for (src, want) in [(run.path().join("run"), 2), (imported, 1)] {
        let out = dir.path().join(format!("br-{want}"));
        let d = Bench::new(&[
            "export",
            src.to_str().unwrap(),
            "--format",
            "benchmark-report",
            "--out",
            out.to_str().unwrap(),
        ])
        .run();
        assert_eq!(d.code, 0, "{}", d.stderr);
        let files: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), want, "{files:?}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let doc: Value = serde_saphyr::from_str(&text).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&doc)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:#?}\n{text}", f.display());
            assert_eq!(doc["version"], "0.2.1");
            let ttft = &doc["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"];
            assert_eq!(ttft["units"], "ms");
            assert!(ttft["p50"].as_f64().unwrap() > 0.0);
            // Timestamps quoted: a YAML 1.1 reader (PyYAML) keeps them strings.
            assert!(
                text.contains("start: \"") || text.contains("start: '"),
                "{text}"
            );
        }
    }
}

/// An imported run's report shows the peer's offered and achieved rates and names the peer
/// as what measured it.
#[test]
fn imported_reports_show_the_peers_rate_and_identity() {
    let dir = Dir::new();
    // (tool, file, who, offered, achieved): the offered rate is AIPerf's
    // `input_config.phases[0].rate`, guidellm's `benchmarks[0].config.strategy.rate`, vLLM's
    // `request_rate` (4, 3, 4); the achieved AIPerf's `request_throughput.avg`, guidellm's
    // `metrics.requests_per_second.successful.mean`, vLLM's `request_throughput`, to two
    // decimals.
    for (tool, file, who, offered, achieved) in [
        (
            "aiperf",
            "aiperf-0.13.0-rate4.json",
            "AIPerf 0.13.0",
            "4 req/s",
            "/request_throughput/avg",
        ),
        (
            "guidellm",
            "guidellm-0.8.1-poisson.json",
            "GuideLLM 0.8.1",
            "3 req/s",
            "/benchmarks/0/metrics/requests_per_second/successful/mean",
        ),
        (
            "vllm",
            "vllm-0.34.0-rate4.json",
            "vLLM bench serve (version not stated)",
            "4 req/s",
            "/request_throughput",
        ),
    ] {
        let out = dir.path().join(tool);
        import(tool, &fixture(file), &out);
        let peer = read_json(&fixture(file));
        let achieved = format!("{:.2}", peer.pointer(achieved).unwrap().as_f64().unwrap());
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        let by = format!("Measured by {who}, imported by benchspec v");
        assert!(md.contains(&by) && html.contains(&by), "{tool}: {md}");
        let row = md
            .lines()
            .find(|l| l.contains(&format!("| {offered} | {achieved} |")));
        assert!(row.is_some(), "{tool}: no row offering {offered}: {md}");
        assert!(md.contains(&format!(": {offered}")), "{tool}: {md}");
        assert!(!md.contains(": 0 req/s"), "{md}");
        // No setting the peer's file does not state (a prompt cache, a maximum output).
        assert!(
            !md.contains("Prompt cache") && !md.contains("Max output"),
            "{md}"
        );
        assert!(
            md.contains(&format!("{who} (imported by benchspec v")),
            "{md}"
        );
    }
}

/// A peer benchmark that offered no rate (AIPerf at a concurrency) shows "—", not 0.
#[test]
fn a_peer_without_a_rate_shows_a_dash() {
    let dir = Dir::new();
    let mut peer = read_json(&fixture("aiperf-0.13.0-rate4.json"));
    let phase = &mut peer["input_config"]["phases"][0];
    phase.as_object_mut().unwrap().remove("rate");
    phase["type"] = "concurrency".into();
    phase["concurrency"] = 8.into();
    let file = dir.path().join("conc.json");
    std::fs::write(&file, peer.to_string()).unwrap();
    let out = dir.path().join("c");
    let r = &import("aiperf", file.to_str().unwrap(), &out)[0];
    assert_eq!(r.open.rate_offered, None);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| — | 4.13 |"), "{md}");
}

/// `--engine` takes the spec's own names: `llama-cpp` is written into the spec; `llamacpp`
/// is refused by the command line, naming the right spelling.
#[test]
fn the_engine_kinds_are_the_specs() {
    let dir = Dir::new();
    let out = dir.path().join("l");
    let file = fixture("vllm-0.34.0-rate4.json");
    let d = Bench::new(&[
        "import",
        "vllm",
        &file,
        "--out",
        out.to_str().unwrap(),
        "--engine",
        "llama-cpp",
    ])
    .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    let spec = std::fs::read_to_string(out.join("spec.yaml")).unwrap();
    assert!(spec.contains("kind: llama-cpp"), "{spec}");
    let other = dir.path().join("m");
    let d = Bench::new(&[
        "import",
        "vllm",
        &file,
        "--out",
        other.to_str().unwrap(),
        "--engine",
        "llamacpp",
    ])
    .run();
    assert_eq!(d.code, 2, "{}", d.stderr);
    assert!(d.stderr.contains("llama-cpp"), "{}", d.stderr);
    assert!(!other.exists());
    let help = Bench::new(&["import", "--help"]).run();
    assert!(
        help.stdout.contains("llama-cpp") && !help.stdout.contains("llamacpp"),
        "{}",
        help.stdout
    );
}

/// `import` into a folder that holds something: exit 2, saying to choose an empty or new
/// `--out` (import has no `--resume`), and nothing written there.
#[test]
fn import_into_a_non_empty_folder_says_what_to_do() {
    let dir = Dir::new();
    let out = dir.path().join("full");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let file = fixture("vllm-0.34.0-rate4.json");
    let d = Bench::new(&["import", "vllm", &file, "--out", out.to_str().unwrap()]).run();
    assert_eq!(d.code, 2, "{}", d.stderr);
    assert!(d.stderr.contains("empty or new `--out`"), "{}", d.stderr);
    assert!(!d.stderr.contains("--resume"), "{}", d.stderr);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn a_file_given_twice_is_refused() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let file = fixture("vllm-0.34.0-rate4.json");
    let d = Bench::new(&[
        "import",
        "vllm",
        &file,
        &file,
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(d.code, 2, "{}", d.stderr);
    assert!(d.stderr.contains("given twice"), "{}", d.stderr);
    assert!(!out.join("results.jsonl").exists());
}

/// vLLM's file states no min, max or p95 of TTFT, TPOT and ITL (nor per-request values of
/// TPOT and ITL): the record says which values stand in for them instead of passing them off
/// as the peer's.
#[test]
fn a_vllm_import_says_which_statistics_its_file_does_not_state() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let file = fixture("vllm-0.34.0-rate4.json");
    let records = import("vllm", &file, &out);
    let peer = read_json(&file);
    let w = records[0].warnings.join("\n");
    for metric in ["tpot", "itl"] {
        assert!(peer.get(format!("min_{metric}_ms")).is_none());
        assert!(
            w.contains(&format!("states no min, p90, p95, max of {metric}"))
                || w.contains(&format!("states no min, p95, max of {metric}")),
            "{metric}: {w}"
        );
    }
}
