//! Speculative decoding (docs/results.md, `spec_decode`; docs/spec.md, `workload.text` and
//! `engine.sim.speculative`): the simulator's drafts against what the records claim — the
//! acceptance worked by hand from its model, its own `/metrics` counters read by the test —
//! in both of its dialects; the report's table and `compare`; and real engines: llama.cpp
//! with SmolLM2-135M drafting for itself, vLLM's n-gram speculator. Tolerances are written
//! beside each check.

use super::Edit;
use super::cli::Bench;
use super::open::run_spec_paused;
use benchspec::results::{Record, SpecDecode, SpecSource, Status};

fn shipped() -> String {
    std::fs::read_to_string(super::repo_path("specs/speculative.yaml")).unwrap()
}

fn find<'a>(records: &'a [Record], id: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.cell == id)
        .unwrap_or_else(|| panic!("no {id}: {records:#?}"))
}

fn spec_of(r: &Record) -> &SpecDecode {
    r.spec_decode
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no spec_decode: {r:#?}", r.cell))
}

/// Accepted tokens a draft of `k` when each is accepted with probability `p`, the ones
/// before it accepted: p + p² + … + pᵏ (worked by hand, not by the code under test).
fn accepted_per_draft(p: f64, k: i32) -> f64 {
    (1..=k).map(|i| p.powi(i)).sum()
}

#[test]
fn acceptance_follows_the_kind_of_text_as_the_model_says() {
    // specs/speculative.yaml: 3 draft tokens; acceptance random 0.3, natural 0.6, code 0.9.
    let mut speed = Vec::new();
    for (text, p) in [("random", 0.3), ("natural", 0.6), ("code", 0.9)] {
        let yaml = shipped().edit("text: natural ", &format!("text: {text} "));
        let (records, dir) = run_spec_paused(&yaml);
        let e = accepted_per_draft(p, 3);
        for id in ["decode/1K/c1", "decode/1K/c8"] {
            let r = find(&records, id);
            assert_eq!(r.status, Status::Valid, "{text} {id}: {:?}", r.reasons);
            // Prose and code are sized exactly as the engine counts them, as random words are.
            assert_eq!(r.server_prompt_tokens, Some(1024), "{text} {id}");
            let s = spec_of(r);
            assert_eq!(s.source, SpecSource::VllmMetrics);
            // Thousands of drafts in each window: the rate within 0.03 of the model's.
            let drafts = s.drafts.unwrap();
            assert!(drafts > 1000, "{text} {id}: {drafts} drafts");
            let rate = s.acceptance_rate;
            assert!(
                (rate - e / 3.0).abs() < 0.03,
                "{text} {id}: {rate} vs {}",
                e / 3.0
            );
            let per = s.accepted_per_draft.unwrap();
            assert!((per - e).abs() < 0.09, "{text} {id}: {per} vs {e}");
            let first = s.acceptance_by_position[0];
            assert!(
                (first - p).abs() < 0.04,
                "{text} {id}: position 0 {first} vs {p}"
            );
            // A step drafts 3 and emits 1 + accepted: 3 / (1 + e) drafted per output token
            // (a request's first token and its last short draft make it a little less).
            let d = s.drafted_per_output_token.unwrap();
            let want = 3.0 / (1.0 + e);
            assert!(
                d <= want + 0.03 && d > want - 0.08,
                "{text} {id}: {d} vs {want}"
            );
        }
        speed.push((e, find(&records, "decode/1K/c1").total_tok_s.unwrap()));
        let run = dir.path().join("run");
        let done = Bench::new(&["report", run.to_str().unwrap()]).run();
        assert_eq!(done.code, 0, "{}", done.stderr);
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        assert!(report.contains("## Speculative decoding"), "{report}");
        assert!(report.contains("| `decode/1K/c8` |"), "{report}");
    }
    // The step's cost is the same: one request's speed goes as the tokens a step emits, 1 + e
    // (within 10%: its KV grows at a different pace).
    let (e0, s0) = speed[0];
    for (e, s) in &speed[1..] {
        let want = (1.0 + e) / (1.0 + e0);
        let got = s / s0;
        assert!(
            (got / want - 1.0).abs() < 0.1,
            "speed ×{got}, model ×{want}"
        );
    }
}

#[test]
fn llama_cpp_dialect_reports_drafts_in_each_response() {
    let yaml = shipped().edit(
        "    profile: h200-gemma-4-e2b\n",
        "    profile: h200-gemma-4-e2b\n    dialect: llama-cpp\n",
    );
    let (records, _dir) = run_spec_paused(&yaml);
    let e = accepted_per_draft(0.6, 3);
    for id in ["decode/1K/c1", "decode/1K/c8"] {
        let s = spec_of(find(&records, id));
        assert_eq!(s.source, SpecSource::LlamacppTimings, "{id}");
        // llama.cpp counts no drafts: no per-draft figures, never 0 for them.
        assert_eq!((s.drafts, s.accepted_per_draft), (None, None), "{id}");
        assert!(s.acceptance_by_position.is_empty());
        assert!(s.draft_tokens > 1000, "{id}: {s:?}");
        let rate = s.acceptance_rate;
        assert!((rate - e / 3.0).abs() < 0.03, "{id}: {rate} vs {}", e / 3.0);
        // Drafted per output token over the same responses: exactly their sums' ratio.
        let out = s.output_tokens.unwrap();
        let want = (s.draft_tokens as f64 / out as f64 * 1e4).round() / 1e4;
        assert_eq!(s.drafted_per_output_token, Some(want), "{id}");
    }
}

/// The counters of a vLLM-style exposition `text`: drafts, draft tokens, accepted tokens,
/// generated tokens.
fn counters(text: &str) -> [f64; 4] {
    let samples = benchspec::telemetry::prom::parse(text);
    let sum = |name: &str| -> f64 {
        samples
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .sum()
    };
    [
        sum("vllm:spec_decode_num_drafts_total"),
        sum("vllm:spec_decode_num_draft_tokens_total"),
        sum("vllm:spec_decode_num_accepted_tokens_total"),
        sum("vllm:generation_tokens_total"),
    ]
}

fn get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

#[test]
fn the_records_counts_are_the_simulators_own_over_the_window() {
    let _cpu = super::cpu();
    let mut opts = benchspec::sim::Options::new(benchspec::sim::find_profile("tiny").unwrap());
    opts.speculation = Some(benchspec::sim::Speculation {
        draft_tokens: 4,
        acceptance: [0.5, 0.5, 0.5],
    });
    let sim = benchspec::sim::start_threaded(opts).unwrap();
    let url = sim.base_url();
    let before = counters(&get(&url, "/metrics"));
    assert_eq!(before, [0.0; 4], "a fresh engine");
    let spec = counters_spec(&url);
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("spec.yaml", &spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let s = spec_of(find(&records, "decode/256/c2")).clone();
    // The simulator's totals over the whole run (warm-up and all), read by the test.
    let [drafts, draft_tokens, accepted, generated] = counters(&get(&url, "/metrics"));
    let (w_drafts, w_tokens) = (s.drafts.unwrap() as f64, s.draft_tokens as f64);
    let w_out = s.output_tokens.unwrap() as f64;
    assert!(
        w_drafts <= drafts && w_tokens <= draft_tokens,
        "{s:?} vs {drafts} {draft_tokens}"
    );
    assert!(s.accepted_tokens as f64 <= accepted && w_out <= generated);
    // The window is most of the run (2 s of it; the warm-up a request or two a slot).
    assert!(
        w_tokens > 0.5 * draft_tokens,
        "{w_tokens} of {draft_tokens}"
    );
    // Drafts of 4 (shorter only at a request's end): draft tokens ≤ 4 a draft.
    assert!(
        w_tokens <= 4.0 * w_drafts && w_tokens > 3.5 * w_drafts,
        "{s:?}"
    );
    // The window's acceptance is the run's, within sampling noise (thousands of drafts).
    let total = accepted / draft_tokens;
    assert!(
        (s.acceptance_rate - total).abs() < 0.03,
        "{} vs {total}",
        s.acceptance_rate
    );
    let want = accepted_per_draft(0.5, 4) / 4.0;
    assert!(
        (total - want).abs() < 0.03,
        "the simulator's own {total} vs the model's {want}"
    );
}

/// A decode cell of 2 s against the engine at `url`.
fn counters_spec(url: &str) -> String {
    format!(
        "version: 1
name: spec counters
engine: {{kind: vllm, base_url: '{url}'}}
model: {{served_name: tiny}}
workload: {{max_output_tokens: 64}}
matrix: {{contexts: [256], concurrency: [2]}}
phases: {{prefill: {{enabled: false}}, decode: {{duration: 2s}}}}
telemetry: {{interval: 200ms}}
"
    )
}

#[test]
fn no_speculation_no_block() {
    let _cpu = super::cpu();
    // No speculation, no block: never a 0 for what was not measured.
    let plain = benchspec::sim::start_threaded(benchspec::sim::Options::new(
        benchspec::sim::find_profile("tiny").unwrap(),
    ))
    .unwrap();
    let spec = counters_spec(&plain.base_url());
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("plain");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("plain.yaml", &spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert!(
        records.iter().all(|r| r.spec_decode.is_none()),
        "{records:#?}"
    );
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(!lines.contains("spec_decode"), "{lines}");
}

#[test]
fn compare_shows_the_acceptance_beside_the_speed() {
    let (_, natural) = run_spec_paused(&shipped());
    let (_, code) = run_spec_paused(&shipped().edit("text: natural ", "text: code "));
    let done = Bench::new(&[
        "compare",
        natural.path().join("run").to_str().unwrap(),
        code.path().join("run").to_str().unwrap(),
    ])
    .run();
    assert_eq!(done.code, 0, "faster is no regression: {}", done.stdout);
    let md = &done.stdout;
    assert!(md.contains("Speculative decoding"), "{md}");
    // Acceptance 0.6 → 0.9 a token: 1.176/3 = 0.392 → 2.439/3 = 0.813 by hand, each within
    // sampling noise; the row shows both and the change, beside the tok/s change.
    let row = md
        .lines()
        .find(|l| l.starts_with("| `decode/1K/c8` |") && l.matches('→').count() == 2)
        .unwrap_or_else(|| panic!("{md}"));
    let rates: Vec<f64> = row
        .rsplit('|')
        .nth(1)
        .unwrap()
        .split(['→', '('])
        .take(2)
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert!(
        (rates[0] - 0.392).abs() < 0.03 && (rates[1] - 0.813).abs() < 0.03,
        "{row}"
    );
    assert!(row.contains("(+0.4"), "{row}");
}

/// llama.cpp with a draft model (the same SmolLM2-135M drafting for itself): at temperature
/// 0 the draft proposes what the target picks, so nearly every draft token is accepted; at a
/// high temperature the target samples and far fewer are. Seen on this machine by hand
/// (`--draft-max 8`, one request each): 1.0 (27 of 27) and 0.06 (15 of 237).
#[test]
fn llama_cpp_with_a_draft_model_accepts_nearly_all_when_greedy() {
    let _cpu = super::cpu();
    let root = super::root();
    let model = root.join(".cache/llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.exists(),
        "the real test engine is missing: run `scripts/install-llamacpp`"
    );
    let port = super::free_port();
    // One request of 16 tokens in the window (after its warm-up): this machine runs the
    // model and its draft at a few tokens a second at best, far fewer at a high temperature.
    let text = super::llamacpp::shipped(port)
        .edit(
            "--alias smollm2",
            "--model-draft .cache/llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf --draft-max 4 --alias smollm2",
        )
        .edit("contexts: [256, 1K, 2K]", "contexts: [256]")
        .edit("concurrency: [1, 2, 4]", "concurrency: [1]")
        .edit("max_output_tokens: 64", "max_output_tokens: 16\n  text: natural")
        .edit("    duration: 3s", "    mode: request-count\n    requests: 1");
    let rate = |temperature: &str| {
        let t = with_workload(&text, &format!("  temperature: {temperature}\n"));
        let (records, _dir) = super::llamacpp::run_ok(&t);
        let r = find(&records, "decode/256/c1");
        let s = spec_of(r).clone();
        assert_eq!(s.source, SpecSource::LlamacppTimings, "{r:#?}");
        assert!(
            s.draft_tokens > 0 && s.accepted_tokens <= s.draft_tokens,
            "{s:?}"
        );
        assert_eq!(s.drafts, None, "llama.cpp does not count drafts");
        s.acceptance_rate
    };
    let greedy = rate("0");
    assert!(greedy > 0.9, "greedy: {greedy}");
    let hot = rate("1.5");
    assert!(
        hot < greedy - 0.3,
        "temperature 1.5: {hot}, greedy {greedy}"
    );
}

/// `lines` added at the top of the spec's `workload:` block.
fn with_workload(spec: &str, lines: &str) -> String {
    spec.edit("workload:\n", &format!("workload:\n{lines}"))
}

/// vLLM's CPU build runs its n-gram speculator (prompt lookup): the record's counts are its
/// `vllm:spec_decode_*` counters over the window, which hold vLLM's own invariants — at
/// most 3 draft tokens a draft (`num_speculative_tokens`), and the per-position acceptances
/// adding up to the accepted tokens.
#[test]
fn vllm_ngram_speculation_is_read_from_its_counters() {
    let Some(env) = super::vllm::installed() else {
        return;
    };
    let _cpu = super::cpu();
    let port = super::free_port();
    let dir = super::cli::tempdir::Dir::new();
    let text = super::vllm::shipped(port, &dir.path().join("job"))
        .edit(
            "--enable-prompt-tokens-details",
            "--enable-prompt-tokens-details --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":3}'",
        )
        .edit("contexts: [256, 2K]", "contexts: [256]")
        .edit("concurrency: [1, 4]", "concurrency: [2]")
        .edit("ignore_eos: true", "ignore_eos: true\n  text: natural");
    let out = dir.path().join("run");
    let mut bench = Bench::new(&["run", "--out", out.to_str().unwrap()]).spec("vllm.yaml", &text);
    for (k, v) in &env {
        bench = bench.env(k, v);
    }
    let done = bench.run();
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap_or_default();
    assert_eq!(done.code, 0, "{}\n{log}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let s = spec_of(find(&records, "decode/256/c2")).clone();
    assert_eq!(s.source, SpecSource::VllmMetrics);
    let drafts = s.drafts.unwrap();
    assert!(drafts > 0 && s.draft_tokens <= 3 * drafts, "{s:?}");
    assert!(s.accepted_tokens <= s.draft_tokens, "{s:?}");
    let by_position: f64 = s.acceptance_by_position.iter().sum::<f64>() * drafts as f64;
    assert!(
        (by_position - s.accepted_tokens as f64).abs() <= 0.01 * drafts as f64,
        "{s:?}"
    );
    assert!(s.output_tokens.is_some_and(|o| o > 0), "{s:?}");
}
