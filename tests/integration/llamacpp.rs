//! End to end against a real engine: llama.cpp's server (xllamacpp) with SmolLM2-135M on CPU,
//! installed by the test command (`scripts/install-llamacpp`), launched and stopped by
//! benchspec through `engine.launch`.

use super::Edit;
use super::cli::Bench;
use benchspec::results::Status;

#[test]
fn llama_cpp_end_to_end() {
    let _cpu = super::cpu();
    let root = super::root();
    let python = root.join(".cache/llamacpp/venv/bin/python");
    let model = root.join(".cache/llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        python.exists() && model.exists(),
        "the real test engine is missing: run `scripts/install-llamacpp` (the test command `scripts/test` does)"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(root.join("specs/llamacpp-smollm2.yaml"))
        .unwrap()
        .edit("8080", &port.to_string())
        .edit("contexts: [256, 1K, 2K]", "contexts: [256, 2K]")
        .edit("concurrency: [1, 2, 4]", "concurrency: [1, 4]")
        .edit("duration: 3s", "duration: 2s");
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    // The launch command's relative paths resolve against the working directory: the root.
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("llamacpp.yaml", &text)
        .run();
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
    assert_eq!(done.code, 0, "{}\n{lines}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 6, "{records:#?}");
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{r:#?}");
        assert_eq!(
            r.server_prompt_tokens,
            Some(r.prompt_tokens),
            "the prompt is exactly as long as llama.cpp counts it: {r:#?}"
        );
    }
    let ttft = |cell: &str| {
        records
            .iter()
            .find(|r| r.cell == cell)
            .and_then(|r| r.ttft_ms)
            .map(|t| t.p50)
            .unwrap()
    };
    assert!(
        ttft("prefill/2K") > ttft("prefill/256") * 2.0,
        "TTFT grows with context"
    );
    let decode = records.iter().find(|r| r.cell == "decode/2K/c4").unwrap();
    assert!(
        decode.total_tok_s.unwrap() > 5.0 && decode.tbt_ms.is_some(),
        "{decode:#?}"
    );
    // Its `/metrics` (the launcher turns `endpoint_metrics` on) gives the engine's own view.
    let server = decode.server.as_ref().unwrap();
    assert_eq!(server.source, "llamacpp", "{server:#?}");
    assert!(
        server.running_max.is_some_and(|m| (1.0..=4.0).contains(&m)),
        "llama.cpp ran at most the 4 requests sent at once: {server:#?}"
    );
    assert!(server.waiting_max.is_some(), "{server:#?}");
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"kv_tokens\": 16384"),
        "4 slots × 4,096 from `/props`: {manifest}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the engine is gone"
    );
    let launcher_left = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&format!("--port\0{port}")));
    assert!(!launcher_left, "no llama.cpp process is left behind");
}
