//! The load driver at scale, measured the way `benchspec run` really drives it: a paced
//! server (this file, re-run with `--serve`) streams vLLM-shaped chunks of one token each,
//! flushed one by one every `gap`, and records its own TTFT for every request; the real
//! `benchspec` binary runs one decode cell against it. Server and client are pinned to
//! different cores (`taskset`). For each case it prints, as medians of 3 runs: client CPU µs
//! per chunk, achieved vs offered tok/s, and client TTFT p50/p99 minus the server's own.
//!
//! Run: `cargo bench --bench load` (about 12 minutes); `BENCH_LOAD_QUICK=1` runs 1 repeat of
//! 4 s windows; `BENCH_LOAD_CASES=256x10,1024x40` picks cases (streams x gap in ms, gap 0 for
//! no gap); `BENCH_LOAD_BIN=path/to/benchspec` drives another build of the binary.

mod paced;

use paced::{MODEL, serve};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let gap_us = args.get(i + 1).and_then(|g| g.parse().ok()).unwrap_or(0);
        serve(Duration::from_micros(gap_us));
        return;
    }
    orchestrate();
}

// ---------------------------------------------------------------- the orchestration

/// One case: streams, the gap between a stream's tokens, and the client's cores.
#[derive(Clone, Copy)]
struct Case {
    streams: u32,
    gap_ms: u64,
    all_cores: bool,
}

#[derive(Default, Clone, Copy)]
struct Got {
    us_per_chunk: f64,
    achieved: f64,
    offered: f64,
    ttft_p50_delta: f64,
    ttft_p99_delta: f64,
    busy: f64,
}

fn cases() -> Vec<Case> {
    let pick = std::env::var("BENCH_LOAD_CASES").ok();
    let parsed: Option<Vec<(u32, u64)>> = pick.as_deref().map(|p| {
        p.split(',')
            .filter_map(|c| {
                let (s, g) = c.split_once('x')?;
                Some((s.trim().parse().ok()?, g.trim().parse().ok()?))
            })
            .collect()
    });
    let base = parsed.unwrap_or_else(|| {
        vec![
            (1, 10),
            (64, 10),
            (256, 10),
            (1024, 40),
            (1, 0),
            (16, 0),
            (64, 0),
            (256, 0),
        ]
    });
    let mut out = Vec::new();
    for all_cores in [false, true] {
        out.extend(base.iter().map(|&(streams, gap_ms)| Case {
            streams,
            gap_ms,
            all_cores,
        }));
    }
    out
}

fn orchestrate() {
    let quick = std::env::var_os("BENCH_LOAD_QUICK").is_some();
    let (repeats, window_s) = if quick { (1, 4) } else { (3, 10) };
    // `BENCH_LOAD_BIN` measures another build (an older commit's, for a before/after).
    let own = env!("CARGO_BIN_EXE_benchspec").to_string();
    let bin = std::env::var("BENCH_LOAD_BIN").unwrap_or(own);
    let bin = bin.as_str();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "client: `benchspec run`, {window_s} s windows, medians of {repeats}; server pinned to core 0, \
         one-core client pinned to core 1 with --client-threads 1; all-core client unpinned with \
         --client-threads {cores}"
    );
    println!(
        "| client | streams x gap | offered tok/s | achieved | client CPU µs/chunk | busy | TTFT p50 − server | TTFT p99 − server |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for case in cases() {
        let mut runs: Vec<Got> = (0..repeats)
            .filter_map(|_| one(bin, case, window_s, cores))
            .collect();
        if runs.is_empty() {
            println!(
                "| {} | {} x {} ms | failed |",
                who(case),
                case.streams,
                case.gap_ms
            );
            continue;
        }
        let med = |f: fn(&Got) -> f64, runs: &mut Vec<Got>| {
            runs.sort_by(|a, b| f(a).total_cmp(&f(b)));
            runs.get(runs.len() / 2).map(f).unwrap_or(0.0)
        };
        let offered = med(|g| g.offered, &mut runs);
        println!(
            "| {} | {} x {} | {} | {:.0} | {:.2} | {:.0}% | {:+.2} ms | {:+.2} ms |",
            who(case),
            case.streams,
            if case.gap_ms == 0 {
                "no gap".to_string()
            } else {
                format!("{} ms", case.gap_ms)
            },
            if offered > 0.0 {
                format!("{offered:.0}")
            } else {
                "-".into()
            },
            med(|g| g.achieved, &mut runs),
            med(|g| g.us_per_chunk, &mut runs),
            med(|g| g.busy, &mut runs) * 100.0,
            med(|g| g.ttft_p50_delta, &mut runs),
            med(|g| g.ttft_p99_delta, &mut runs),
        );
    }
}

fn who(case: Case) -> &'static str {
    if case.all_cores {
        "all cores"
    } else {
        "one core"
    }
}

fn one(bin: &str, case: Case, window_s: u64, cores: usize) -> Option<Got> {
    let server = paced::Spawned::start(case.gap_ms * 1000)?;
    drive(bin, &server.url, case, window_s, cores)
}

fn drive(bin: &str, url: &str, case: Case, window_s: u64, cores: usize) -> Option<Got> {
    let dir = std::env::temp_dir().join(format!("benchspec-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    let tokens = if case.gap_ms == 0 { 4096 } else { 256 };
    let spec = format!(
        "version: 1\nname: load bench\nengine: {{kind: vllm, base_url: \"{url}\"}}\n\
         model: {{served_name: {MODEL}, max_model_len: 131072}}\n\
         workload: {{max_output_tokens: {tokens}, stall_timeout: 60s}}\n\
         matrix: {{contexts: [256], concurrency: [{}]}}\n\
         phases: {{prefill: {{enabled: false}}, decode: {{duration: {window_s}s}}}}\n",
        case.streams
    );
    let spec_path = dir.join("load.yaml");
    std::fs::write(&spec_path, spec).ok()?;
    let out = dir.join("run");
    let mut cmd = if case.all_cores {
        let mut c = Command::new(bin);
        c.args(["run", "--client-threads", &cores.to_string()]);
        c
    } else {
        let mut c = Command::new("taskset");
        c.args(["-c", "1", bin, "run", "--client-threads", "1"]);
        c
    };
    cmd.arg(&spec_path).arg("--out").arg(&out).arg("--quiet");
    let _ = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let rec = decode_record(&out.join("results.jsonl"))?;
    let server = fetch_ttft(url)?;
    let _ = std::fs::remove_dir_all(&dir);
    got(case, &rec, &server)
}

fn decode_record(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["phase"] == "decode")
}

/// The server's own TTFT p50/p99 (ms) of the measured requests since the last call.
fn fetch_ttft(url: &str) -> Option<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    rt.block_on(async {
        let (host, port) = url.strip_prefix("http://")?.split_once(':')?;
        let mut s = tokio::net::TcpStream::connect((host, port.parse::<u16>().ok()?))
            .await
            .ok()?;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        s.write_all(b"GET /bench/ttft HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.ok()?;
        serde_json::from_str(buf.split("\r\n\r\n").nth(1)?).ok()
    })
}

fn got(case: Case, rec: &Value, server: &Value) -> Option<Got> {
    let f = |v: &Value| v.as_f64();
    let tokens = f(&rec["output_tokens"])?;
    let cpu_s = f(&rec["client"]["cpu_s"])?;
    let per_stream = if case.gap_ms == 0 {
        0.0
    } else {
        1000.0 / case.gap_ms as f64
    };
    Some(Got {
        us_per_chunk: cpu_s / tokens.max(1.0) * 1e6,
        achieved: f(&rec["total_tok_s"])?,
        offered: per_stream * f64::from(case.streams),
        ttft_p50_delta: f(&rec["ttft_ms"]["p50"])? - f(&server["p50_ms"])?,
        ttft_p99_delta: f(&rec["ttft_ms"]["p99"])? - f(&server["p99_ms"])?,
        busy: f(&rec["client"]["cpu_busy"])?,
    })
}
