//! `benchspec run` against the embedded simulator, every metric checked against the
//! simulator's own ground truth: its performance model replayed in virtual time
//! (`sim::calibrate`) and its step costs. Tolerances are written beside each check.

use super::Edit;
use benchspec::cli::exit::Exits;
use benchspec::plan::RunConfig;
use benchspec::results::{Record, Status, TokenSource};
use benchspec::run::{self, RunOptions};
use benchspec::sim::{calibrate, profile};
use benchspec::spec::{self, Stage};

use super::cli::tempdir::Dir;

fn run_spec(yaml: &str) -> (Vec<Record>, run::RunSummary, Dir) {
    let dir = Dir::new();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).unwrap();
    let path = path.to_string_lossy().into_owned();
    let loaded = spec::parse(&path, yaml, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let out = dir.path().join("run");
    let opts = RunOptions {
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    let summary = run::run(
        &RunConfig::new(&loaded),
        &opts,
        &run::Interrupt::new(),
        &|_| {},
    )
    .unwrap();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    // Every line is a whole record that the committed schema accepts.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(super::repo_path("schemas/result-v1.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(validator.is_valid(&v), "{line}");
    }
    for f in ["spec.yaml", "plan.json", "manifest.json"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    (records, summary, dir)
}

fn within(what: &str, got: f64, want: f64, tolerance: f64) {
    let ratio = got / want;
    assert!(
        (ratio - 1.0).abs() <= tolerance,
        "{what}: measured {got:.3}, ground truth {want:.3} (ratio {ratio:.3}, tolerance {tolerance})"
    );
}

const H200: &str = "
version: 1
name: ground truth
engine:
  kind: sim
  sim: {profile: h200-gemma-4-e2b}
model:
  served_name: gemma
workload:
  max_output_tokens: 256
matrix:
  contexts: [8K]
  concurrency: [1, 4]
phases:
  decode:
    duration: 3s
";

#[test]
fn decode_and_prefill_match_the_simulators_ground_truth() {
    let _cpu = super::cpu();
    let p = profile::profile("h200-gemma-4-e2b").unwrap();
    let (records, summary, _dir) = run_spec(H200);
    assert_eq!(summary.exit().code(), 0, "{records:#?}");
    let ids: Vec<&str> = records.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(ids, ["prefill/8K", "decode/8K/c1", "decode/8K/c4"]);
    let prefill = &records[0];
    assert_eq!(
        (prefill.prompt_tokens, prefill.server_prompt_tokens),
        (8192, Some(8192)),
        "exact prompt"
    );
    // Prefill: cold TTFT of 8K tokens is ~140 ms; the HTTP round trip adds well under 5%.
    within(
        "prefill tok/s",
        prefill.prefill_tok_s.unwrap(),
        calibrate::prefill_tok_s(&p, 8192),
        0.05,
    );
    for (r, c) in records[1..].iter().zip([1u32, 4]) {
        decode_cell_matches(&p, r, c);
        warm_ttft_matches(&p, r, c);
    }
}

/// The decode cell `r` at concurrency `c` against the model of `p`: valid, exact prompts,
/// the window, total and per-request tok/s, TBT, streams in flight, requests and tokens.
fn decode_cell_matches(p: &profile::Profile, r: &Record, c: u32) {
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    assert_eq!(r.server_prompt_tokens, Some(8192));
    assert_eq!(r.token_source, Some(TokenSource::Usage));
    // The window closes exactly at the duration (to the millisecond it is recorded in).
    assert!(
        (r.measured_s.unwrap() - 3.0).abs() < 1e-3,
        "{:?}",
        r.measured_s
    );
    // Total tok/s: the same cell replayed in virtual time; timer and HTTP jitter < 5%.
    within(
        "total tok/s",
        r.total_tok_s.unwrap(),
        calibrate::decode_tok_s(p, 8192, c as usize, 3.0, 256),
        0.05,
    );
    // TBT: one scheduler step at batch C over ~8.3K KV tokens each.
    let step_ms = 1e3 * (p.step_s + p.decode_s(c as usize, u64::from(c) * (8192 + 128)));
    within("TBT p50", r.tbt_ms.unwrap().p50, step_ms, 0.05);
    within(
        "per-request tok/s",
        r.per_request_tok_s.unwrap(),
        1e3 / step_ms,
        0.05,
    );
    // Closed loop: C streams in flight but for the replacement gaps (TTFT of ~50 ms per
    // ~1 s request).
    assert!(
        r.avg_active.unwrap() >= 0.9 * f64::from(c) && r.avg_active.unwrap() <= f64::from(c) + 1e-9,
        "{:?}",
        r.avg_active
    );
    // 256-token requests last ~1 s: several finish inside a 3 s window.
    assert!(
        r.completed >= u64::from(c) && r.requests_started >= r.completed,
        "{r:#?}"
    );
    // Output tokens agree with the rate.
    within(
        "output tokens",
        r.output_tokens.unwrap() as f64,
        r.total_tok_s.unwrap() * 3.0,
        0.001,
    );
}

/// Warm TTFT of the decode cell `r` at concurrency `c`: API delay, the cached prefix, one
/// step. At C > 1 the C replacement requests arrive within a millisecond of each other and
/// are admitted one or several per step, so the mean lies between one request alone and all
/// C in one step (the virtual-time replay, where they arrive at the same instant).
fn warm_ttft_matches(p: &profile::Profile, r: &Record, c: u32) {
    let truth = calibrate::decode_cell(p, 8192, c as usize, 3.0, 256);
    let alone_ms = 1e3
        * (p.api_delay_s(8192)
            + p.tokenizer_s(8192)
            + p.cached_request_s
            + p.cached_token_s * 8176.0
            + p.step_s);
    let mean = r.ttft_ms.unwrap().mean;
    if c == 1 {
        // Never below the model; above it by the simulator's own request parsing (a few
        // milliseconds for an 8K prompt, more on a busy machine).
        let model = truth.ttft_mean_s * 1e3;
        assert!(
            mean >= model * 0.95 && mean <= model * 1.25 + 5.0,
            "TTFT mean {mean} ms, modelled {model} ms"
        );
    } else {
        assert!(
            mean >= alone_ms * 0.95 && mean <= truth.ttft_mean_s * 1e3 * 1.10,
            "TTFT mean {mean} outside [{alone_ms}, {}]",
            truth.ttft_mean_s * 1e3
        );
    }
    assert_eq!(r.errors, 0);
}

#[test]
fn chat_ttft_counts_reasoning_and_multi_token_chunks_count_right() {
    let _cpu = super::cpu();
    let p = profile::profile("h200-gemma-4-e2b").unwrap();
    let yaml = H200
        .edit(
            "  sim: {profile: h200-gemma-4-e2b}",
            "  sim: {profile: h200-gemma-4-e2b, reasoning_tokens: 40, tokens_per_chunk: 4}",
        )
        .edit(
            "  max_output_tokens: 256",
            "  api: chat\n  max_output_tokens: 256",
        )
        .edit("  concurrency: [1, 4]", "  concurrency: [2]")
        .edit("decode:\n", "prefill: {enabled: false}\n  decode:\n");
    let (records, _, _dir) = run_spec(&yaml);
    assert_eq!(
        records[0].status,
        Status::Skipped,
        "a disabled phase's cells are recorded as skipped"
    );
    let r = records.iter().find(|r| r.cell == "decode/8K/c2").unwrap();
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let step_ms = 1e3 * (p.step_s + p.decode_s(2, 2 * (8192 + 128)));
    // Four tokens per chunk: TBT is still the time per token, not per chunk.
    within("TBT p50", r.tbt_ms.unwrap().p50, step_ms, 0.05);
    within(
        "total tok/s",
        r.total_tok_s.unwrap(),
        calibrate::decode_tok_s(&p, 8192, 2, 3.0, 256),
        0.08,
    );
    // TTFT ends at the first reasoning chunk: had it waited for content (40 tokens), it would
    // be 40 steps (~150 ms) longer.
    let warm_ms = 1e3
        * (p.api_delay_s(8192)
            + p.tokenizer_s(8192)
            + p.cached_request_s
            + p.cached_token_s * 8192.0
            + 4.0 * step_ms);
    assert!(
        r.ttft_ms.unwrap().p50 < warm_ms * 1.6,
        "TTFT {:?} vs {warm_ms}",
        r.ttft_ms
    );
}

#[test]
fn attaching_to_a_server_without_the_model_says_what_is_there() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        benchspec::sim::start(
            listener,
            benchspec::sim::Options::new(profile::profile("tiny").unwrap()),
        )
        .unwrap()
    });
    let yaml = format!(
        "version: 1\nname: t\nengine: {{kind: vllm, base_url: '{}'}}\nmodel: {{served_name: gemma}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n",
        sim.base_url()
    );
    let loaded = spec::parse("t.yaml", &yaml, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let dir = Dir::new();
    let opts = RunOptions {
        out: Some(dir.path().join("run")),
        ..RunOptions::default()
    };
    let err = run::run(
        &RunConfig::new(&loaded),
        &opts,
        &run::Interrupt::new(),
        &|_| {},
    )
    .err()
    .unwrap();
    assert_eq!(err.exit().code(), 3);
    assert_eq!(
        err.to_string(),
        format!(
            "the engine at {} serves `tiny`, not `gemma`; fix `model.served_name` or the server",
            sim.base_url()
        )
    );
    https_against_plain_http_cannot_be_reached(&yaml, &dir);
    rt.block_on(sim.stop());
    let err = run::run(
        &RunConfig::new(&loaded),
        &RunOptions {
            out: Some(dir.path().join("run2")),
            ..RunOptions::default()
        },
        &run::Interrupt::new(),
        &|_| {},
    )
    .err()
    .unwrap();
    assert_eq!(err.exit().code(), 3);
    assert!(err.to_string().contains("cannot be reached"), "{err}");
}

/// https is spoken (rustls): against a plain-HTTP server (`yaml` names one) the handshake
/// fails, reported as an engine that cannot be reached.
fn https_against_plain_http_cannot_be_reached(yaml: &str, dir: &Dir) {
    let https = yaml.edit("http://", "https://");
    let tls = spec::parse("t.yaml", &https, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let err = run::run(
        &RunConfig::new(&tls),
        &RunOptions {
            out: Some(dir.path().join("tls")),
            ..RunOptions::default()
        },
        &run::Interrupt::new(),
        &|_| {},
    )
    .err()
    .unwrap();
    assert_eq!(err.exit().code(), 3);
    assert!(err.to_string().contains("cannot be reached"), "{err}");
}

#[test]
fn llama_cpp_dialect_counts_chunks_and_reconciles_with_the_final_usage() {
    let _cpu = super::cpu();
    // A llama.cpp-speaking server (usage only inside the last chunk, `/tokenize` with
    // `content`), sending 2 tokens per chunk: counted per chunk, then reconciled.
    let p = profile::profile("h200-gemma-4-e2b").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut opts = benchspec::sim::Options::new(p.clone());
        opts.dialect = benchspec::sim::SimDialect::LlamaCpp;
        opts.tokens_per_chunk = 2;
        benchspec::sim::start(listener, opts).unwrap()
    });
    let yaml = format!(
        "version: 1\nname: t\nengine: {{kind: llama-cpp, base_url: '{}'}}\nmodel: {{served_name: gemma}}\nworkload: {{max_output_tokens: 256}}\nmatrix: {{contexts: [8K], concurrency: [2]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 3s}}}}\n",
        sim.base_url()
    );
    let (records, _, _dir) = run_spec(&yaml);
    rt.block_on(sim.stop());
    let r = records.iter().find(|r| r.cell == "decode/8K/c2").unwrap();
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    assert_eq!(r.token_source, Some(TokenSource::Chunks));
    assert_eq!(
        r.server_prompt_tokens,
        Some(8192),
        "llama.cpp's /tokenize counts the same prompt"
    );
    let step_ms = 1e3 * (p.step_s + p.decode_s(2, 2 * (8192 + 128)));
    within(
        "TBT p50 (per token, not per chunk)",
        r.tbt_ms.unwrap().p50,
        step_ms,
        0.05,
    );
    within(
        "total tok/s",
        r.total_tok_s.unwrap(),
        calibrate::decode_tok_s(&p, 8192, 2, 3.0, 256),
        0.08,
    );
}

fn external_sim(
    f: impl FnOnce(&mut benchspec::sim::Options),
) -> (tokio::runtime::Runtime, benchspec::sim::Sim) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut opts = benchspec::sim::Options::new(profile::profile("tiny").unwrap());
        f(&mut opts);
        benchspec::sim::start(listener, opts).unwrap()
    });
    (rt, sim)
}

fn prefix_hits(rt: &tokio::runtime::Runtime, sim: &benchspec::sim::Sim) -> (f64, f64) {
    let text = rt.block_on(async {
        benchspec::client::http_builder()
            .no_proxy()
            .build()
            .unwrap()
            .get(format!("{}/metrics", sim.base_url()))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    (
        value("vllm:prefix_cache_queries_total"),
        value("vllm:prefix_cache_hits_total"),
    )
}

#[test]
fn warm_cache_reuses_prompts_and_cold_cache_never_does() {
    for (cache, want_hits) in [("warm", true), ("cold", false)] {
        let (rt, sim) = external_sim(|_| {});
        let yaml = format!(
            "version: 1\nname: t\nengine: {{kind: vllm, base_url: '{}'}}\nmodel: {{served_name: tiny}}\nworkload: {{max_output_tokens: 32, prompt_cache: {cache}}}\nmatrix: {{contexts: [2K], concurrency: [2]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 1s}}}}\n",
            sim.base_url()
        );
        let (records, _, _dir) = run_spec(&yaml);
        let r = records.iter().find(|r| r.cell == "decode/2K/c2").unwrap();
        assert_eq!(r.status, Status::Valid, "{cache}: {r:#?}");
        assert_eq!(r.server_prompt_tokens, Some(2048));
        let (queries, hits) = prefix_hits(&rt, &sim);
        rt.block_on(sim.stop());
        let fraction = hits / queries;
        if want_hits {
            assert!(
                fraction > 0.8,
                "warm: {hits} of {queries} prompt tokens from the prefix cache"
            );
        } else {
            // Prompts share only a body after a unique header: no full block of a new prompt
            // can be a prefix hit.
            assert!(
                fraction < 0.01,
                "cold: {hits} of {queries} prompt tokens from the prefix cache"
            );
        }
    }
}

#[test]
fn request_count_mode_runs_exactly_the_requests() {
    let (rt, sim) = external_sim(|_| {});
    let yaml = format!(
        "version: 1\nname: t\nengine: {{kind: vllm, base_url: '{}'}}\nmodel: {{served_name: tiny}}\nworkload: {{max_output_tokens: 64}}\nmatrix: {{contexts: [1K], concurrency: [3]}}\nphases: {{prefill: {{enabled: false}}, decode: {{mode: request-count, requests: 10}}}}\n",
        sim.base_url()
    );
    let (records, _, _dir) = run_spec(&yaml);
    rt.block_on(sim.stop());
    let r = records.iter().find(|r| r.cell == "decode/1K/c3").unwrap();
    assert_eq!(r.completed, 10, "{r:#?}");
    assert_eq!(r.output_tokens, Some(640));
    assert_eq!(
        r.status,
        Status::Invalid,
        "the last round has fewer than 3 in flight: {r:#?}"
    );
    assert!(
        r.reasons.iter().all(|x| x.starts_with("average active")),
        "{:?}",
        r.reasons
    );
}

#[test]
fn stalled_streams_fail_by_kind_and_the_cell_says_so() {
    let (rt, sim) = external_sim(|o| o.faults.stall_rate = 1.0);
    let yaml = format!(
        "version: 1\nname: t\nengine: {{kind: vllm, base_url: '{}'}}\nmodel: {{served_name: tiny}}\nworkload: {{max_output_tokens: 400, stall_timeout: 300ms, prompt_cache: cold}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 1s}}}}\n",
        sim.base_url()
    );
    let (records, summary, _dir) = run_spec(&yaml);
    rt.block_on(sim.stop());
    let r = records.iter().find(|r| r.cell == "decode/1K/c1").unwrap();
    assert_ne!(r.status, Status::Valid, "{r:#?}");
    assert!(
        r.error_kinds.get("stall_timeout").copied().unwrap_or(0) >= 1,
        "{r:#?}"
    );
    assert_eq!(summary.exit().code(), 1);
}
