//! Engine dialects (docs/guide.md, "Tokenizers and dialects"), each against the simulator speaking it:
//! SGLang (usage only at the end, `/tokenize` without messages, KV capacity in
//! `/get_server_info`, `sglang:` metrics), TensorRT-LLM's `trtllm-serve` (no `/tokenize`: a
//! local tokenizer sizes the prompts; JSON iteration statistics on `/metrics`) and a hosted
//! OpenAI-compatible API (no `/tokenize`, `ignore_eos` refused, `max_completion_tokens` on
//! chat, output lengths that vary, HTTP 429 with `retry-after`).

use super::cli::{Bench, tempdir::Dir};
use benchspec::results::{Record, Status, TokenSource};
use benchspec::sim::{Options, Sim, SimDialect, profile};
use std::time::Duration;

fn sim(dialect: SimDialect, f: impl FnOnce(&mut Options)) -> (tokio::runtime::Runtime, Sim) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut opts = Options::new(profile::profile("tiny").unwrap());
        opts.dialect = dialect;
        f(&mut opts);
        benchspec::sim::start(listener, opts).unwrap()
    });
    (rt, sim)
}

/// Run `spec` (its `{url}` replaced) and return the records, the manifest and the stderr.
fn run(spec: &str, url: &str) -> (Vec<Record>, serde_json::Value, String, i32) {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let fixture = super::repo_path("tests/fixtures/sim-tokenizer");
    let text = spec.replace("{url}", url).replace("{tokenizer}", &fixture);
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &text)
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    let manifest = std::fs::read_to_string(out.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    (records, manifest, done.stderr, done.code)
}

#[test]
fn sglang_streams_usage_at_the_end_and_states_its_kv_capacity() {
    let (rt, sim) = sim(SimDialect::Sglang, |_| {});
    let spec = "version: 1\nname: sglang\nengine: {kind: sglang, base_url: '{url}'}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [512], concurrency: [2]}\nphases: {decode: {duration: 1s}}\n";
    let (records, manifest, stderr, code) = run(spec, &sim.base_url());
    assert_eq!(code, 0, "{stderr}");
    let decode = records.iter().find(|r| r.cell == "decode/512/c2").unwrap();
    assert_eq!(decode.status, Status::Valid, "{decode:#?}");
    // No usage per chunk: tokens are counted per chunk and reconciled with the final usage.
    assert_eq!(decode.token_source, Some(TokenSource::Chunks));
    assert_eq!(
        decode.server_prompt_tokens,
        Some(512),
        "SGLang's /tokenize sized it"
    );
    assert_eq!(
        decode.server.as_ref().map(|s| s.source.as_str()),
        Some("sglang"),
        "{decode:#?}"
    );
    let kv = profile::profile("tiny").unwrap().kv_tokens;
    assert_eq!(
        manifest["engine"]["kv_tokens"], kv,
        "from /get_server_info: {manifest}"
    );
    // SGLang's /tokenize counts no chat messages: chat needs a local tokenizer, said at
    // validate time.
    let chat = spec.replace("max_output_tokens: 32", "max_output_tokens: 32, api: chat");
    let (_, _, stderr, code) = run(&chat, &sim.base_url());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not chat messages"), "{stderr}");
    rt.block_on(sim.stop());
}

#[test]
fn trtllm_has_no_tokenize_and_a_local_tokenizer_sizes_prompts() {
    let (rt, sim) = sim(SimDialect::Trtllm, |_| {});
    let spec = "version: 1\nname: trtllm\nengine: {kind: trtllm, base_url: '{url}'}\nmodel: {served_name: tiny, max_model_len: 4096}\nworkload: {max_output_tokens: 32, tokenizer: '{tokenizer}'}\nmatrix: {contexts: [512], concurrency: [2]}\nphases: {decode: {duration: 1s}}\ntelemetry: {interval: 100ms}\n";
    for api in ["completions", "chat"] {
        let spec = spec.replace(
            "max_output_tokens: 32",
            &format!("max_output_tokens: 32, api: {api}"),
        );
        let (records, manifest, stderr, code) = run(&spec, &sim.base_url());
        // A call of /tokenize would have failed the run: the simulator answers 404.
        assert_eq!(code, 0, "{api}: {stderr}");
        // The KV capacity from the iteration statistics: blocks × tokens per block.
        let kv = profile::profile("tiny").unwrap().kv_tokens;
        assert_eq!(manifest["engine"]["kv_tokens"], kv, "{api}: {manifest}");
        for r in &records {
            assert_eq!(r.status, Status::Valid, "{api}: {r:#?}");
            assert_eq!(
                r.server_prompt_tokens,
                Some(r.prompt_tokens),
                "{api}: {r:#?}"
            );
        }
        // trtllm-serve's /metrics is JSON iteration statistics, read as the engine's view:
        // the 2 requests sent at once were running (none waiting), in a KV cache far from full.
        let decode = records.iter().find(|r| r.cell == "decode/512/c2").unwrap();
        let s = decode.server.as_ref().unwrap();
        assert_eq!(s.source, "trtllm", "{api}: {s:#?}");
        assert_eq!(s.running_max, Some(2.0), "{api}: {s:#?}");
        // Requests of 32 tokens turn over every few tens of ms, and an iteration between one's
        // end and its replacement shows one running: the mean is above 1, not near 2 (it read
        // 1.45 in one run of three on this machine).
        assert!(
            s.running_mean.is_some_and(|m| m > 1.0 && m <= 2.0),
            "{api}: {s:#?}"
        );
        assert_eq!(s.waiting_max, Some(0.0), "{api}: {s:#?}");
        assert!(
            s.kv_usage_max.is_some_and(|k| k > 0.0 && k < 0.1),
            "{api}: {s:#?}"
        );
    }
    // Without a local tokenizer the spec is refused before anything runs.
    let server = spec.replace(", tokenizer: '{tokenizer}'", "");
    let (_, _, stderr, code) = run(&server, &sim.base_url());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`trtllm-serve` has no `/tokenize`"),
        "{stderr}"
    );
    rt.block_on(sim.stop());
}

const OPENAI: &str = "version: 1\nname: hosted\nengine: {kind: openai, base_url: '{url}'}\nmodel: {served_name: tiny, max_model_len: 4096}\nworkload: {max_output_tokens: 200, tokenizer: '{tokenizer}'}\nmatrix: {contexts: [256], concurrency: [2]}\nphases: {prefill: {enabled: false}, decode: {duration: 2s}}\n";

#[test]
fn a_hosted_api_gets_no_ignore_eos_and_its_lengths_vary() {
    // The simulator refuses `ignore_eos` and `continuous_usage_stats` with HTTP 400 here,
    // and `max_tokens` on chat (OpenAI's newer models take only `max_completion_tokens`).
    let (rt, sim) = sim(SimDialect::Openai, |_| {});
    for api in ["completions", "chat"] {
        let spec = OPENAI.replace(
            "max_output_tokens: 200",
            &format!("max_output_tokens: 200, api: {api}"),
        );
        let (records, _, stderr, code) = run(&spec, &sim.base_url());
        assert_eq!(code, 0, "{api}: {stderr}");
        let r = records.iter().find(|r| r.cell == "decode/256/c2").unwrap();
        assert_eq!(r.status, Status::Valid, "{api}: {r:#?}");
        assert!(r.error_kinds.is_empty(), "{api}: {r:#?}");
        assert!(r.completed >= 4, "{api}: {r:#?}");
        // The model stopped by itself, before the 200 asked for: recorded, not a failure.
        let per_request = r.output_tokens.unwrap() as f64 / r.completed as f64;
        assert!(per_request < 200.0, "{api}: {r:#?}");
    }
    rt.block_on(sim.stop());
}

#[test]
fn a_429_storm_is_counted_and_retry_after_respected() {
    let wait = Duration::from_millis(400);
    let (rt, sim) = sim(SimDialect::Openai, |o| {
        o.faults.rate_limit_rate = 0.6;
        o.faults.retry_after = wait;
    });
    let (records, _, stderr, _) = run(OPENAI, &sim.base_url());
    let r = records
        .iter()
        .find(|r| r.cell == "decode/256/c2")
        .unwrap_or_else(|| panic!("{stderr}"));
    let limited = r.error_kinds.get("rate_limited").copied().unwrap_or(0);
    assert!(limited > 0, "{r:#?}");
    assert_eq!(r.error_kinds.len(), 1, "only rate limits: {r:#?}");
    // Never retried inside the window: every refused request is one counted error. Each slot
    // waits out `retry-after` before its next request: at most one 429 per slot per 400 ms
    // of the window (and its warm-up), where a 50 ms back-off would allow eight.
    let bound = 2.0 * (r.measured_s.unwrap() + 1.0) / wait.as_secs_f64() + 2.0;
    assert!((limited as f64) <= bound, "{limited} > {bound}: {r:#?}");
    assert_eq!(
        r.status,
        Status::Invalid,
        "a storm is past the error threshold"
    );
    rt.block_on(sim.stop());
}

#[test]
fn the_sim_tokenizer_fixture_counts_as_the_simulator_does() {
    let t = benchspec::client::local::LocalTokenizer::load(std::path::Path::new(
        &super::repo_path("tests/fixtures/sim-tokenizer"),
    ))
    .unwrap();
    for text in [
        "decode-512-c2 the of and\n to in is extraordinary, 12345678 é!",
        "  spaces\tand\nlines  ",
    ] {
        assert_eq!(
            t.count(text, benchspec::client::Api::Completions).unwrap() as usize,
            benchspec::sim::tokenizer::count(text),
            "{text:?}"
        );
    }
}

#[test]
fn open_loop_arrivals_wait_out_a_rate_limit_as_queue_time() {
    let (rt, sim) = sim(SimDialect::Openai, |o| {
        o.faults.rate_limit_rate = 0.5;
        o.faults.retry_after = Duration::from_millis(500);
    });
    let spec = OPENAI.replace(
        "phases: {prefill: {enabled: false}, decode: {duration: 2s}}",
        "phases: {prefill: {enabled: false}, decode: {enabled: false}, load: {rates: [10], arrivals: constant, duration: 2s}}",
    );
    let (records, _, stderr, _) = run(&spec, &sim.base_url());
    let r = records
        .iter()
        .find(|r| r.cell == "load/256/r10")
        .unwrap_or_else(|| panic!("{stderr}"));
    let limited = r.error_kinds.get("rate_limited").copied().unwrap_or(0);
    assert!(limited > 0, "{r:#?}");
    // Every scheduled request was sent once (none retried), and those due during a
    // `retry-after` waited for it: queue time, apart from TTFT.
    assert_eq!(r.requests_started, 20, "{r:#?}");
    let queue = r.open.queue_ms.unwrap();
    assert!(queue.max >= 300.0, "{queue:?}");
    rt.block_on(sim.stop());
}
