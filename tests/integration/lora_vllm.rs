//! LoRA on real vLLM: its CPU build (0.32) launched by benchspec with `--enable-lora
//! --lora-modules` over three rank-8 adapters made here for the tiny test model
//! (`scripts/make-lora-adapter`), one slot (`--max-loras 1`), and a 1:1:1 mix sent to it.
//! What the records claim is held against vLLM's own: its `/v1/models` listing (readiness
//! refuses an adapter it does not list) and its `vllm:lora_requests_info` gauge.

use super::cli::Bench;
use benchspec::results::Status;

/// `NAME=PATH` of adapters a, b, c made in `dir` by the repository's script.
fn adapters(dir: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new(super::root().join("scripts/make-lora-adapter"))
        .arg(dir)
        .args(["a", "b", "c"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// vLLM launched on `port` with the adapters `modules` (`NAME=PATH ...`) in one slot, and a
/// load cell over a mix of a, b, c and zz (which vLLM does not serve).
fn spec(port: u16, modules: &str) -> String {
    format!(
        "version: 1\nname: lora\nhardware: {{type: cpu}}\n\
         engine:\n  kind: vllm\n  backend: cpu\n  base_url: http://127.0.0.1:{port}\n  launch:\n    command: >-\n      \
         ${{VLLM_BIN}} serve ${{VLLM_MODEL}} --served-model-name tiny --port {port} --host 127.0.0.1\n      \
         --max-model-len 2048 --dtype float32 --enforce-eager --enable-lora --lora-modules {modules}\n      \
         --max-loras 1 --max-lora-rank 8\n    env:\n      VLLM_CPU_KVCACHE_SPACE: \"1\"\n      \
         VLLM_CACHE_ROOT: .cache/vllm/runtime\n      TORCHINDUCTOR_CACHE_DIR: .cache/vllm/runtime/inductor\n    \
         ready_timeout: 5m\n\
         model: {{served_name: tiny, max_model_len: 2048}}\n\
         workload: {{max_output_tokens: 16, adapters: {{a: 1, b: 1, c: 1, zz: 1}}}}\n\
         matrix: {{contexts: [256], concurrency: [1]}}\n\
         phases: {{prefill: {{enabled: false}}, decode: {{enabled: false}}, load: {{rates: [4], arrivals: constant, duration: 3s}}}}\n"
    )
}

#[test]
fn vllm_serves_a_lora_mix_and_says_so() {
    let Some(env) = super::vllm::installed() else {
        return;
    };
    let _cpu = super::cpu();
    let dir = super::cli::tempdir::Dir::new();
    let modules = adapters(dir.path()).join(" ");
    let port = super::free_port();
    let spec = spec(port, &modules);
    // `zz` is not among vLLM's `--lora-modules`: refused at readiness, where the spec names it.
    let run = |text: &str, out: &std::path::Path| {
        let b = Bench::new(&["run", "--out", out.to_str().unwrap()]).spec("lora.yaml", text);
        env.iter().fold(b, |b, (k, v)| b.env(k, v)).run()
    };
    let refused = run(&spec, &dir.path().join("refused"));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("lora.yaml:19:"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("adapter `zz`") && refused.stderr.contains("`a`, `b`, `c`"),
        "vLLM's /v1/models lists the three: {}",
        refused.stderr
    );
    let out = dir.path().join("run");
    let done = run(&spec.replace(", zz: 1", ""), &out);
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap_or_default();
    assert_eq!(done.code, 0, "{}\n{log}", done.stderr);
    for name in ["a", "b", "c"] {
        assert!(
            log.contains(&format!("Loaded new LoRA adapter: name '{name}'")),
            "{log}"
        );
    }
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let r = records.iter().find(|r| r.cell == "load/256/r4").unwrap();
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let rows = r.by_adapter.as_deref().unwrap_or_default();
    assert_eq!(rows.len(), 3, "{r:#?}");
    assert_eq!(
        rows.iter().map(|u| u.requests).sum::<u64>(),
        r.requests_started
    );
    // vLLM's own gauge: one slot, and only adapters of the mix ever running.
    let lora = r.lora.as_ref().unwrap_or_else(|| panic!("no lora: {r:#?}"));
    assert_eq!(lora.max_lora, Some(1), "{lora:?}");
    assert!(lora.running_adapters_max <= 1, "{lora:?}");
    assert!(
        !lora.adapters_seen.is_empty()
            && lora
                .adapters_seen
                .iter()
                .all(|a| ["a", "b", "c"].contains(&a.as_str())),
        "{lora:?}"
    );
}
