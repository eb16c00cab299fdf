//! The measuring client's own cost, in two arms that differ only in the HTTP/1.1 client under
//! the generation request: `h1` (benchspec's own, what `run` uses) and `hyper`
//! (`hyper::client::conn::http1`, its `Connection` polled in the request's own task, plugged
//! in through the `Generate` seam; `hyper_arm`). Both read the body with the same SSE and
//! chunk code. The client runs on a current-thread runtime on this thread, pinned to core 1;
//! the server is another process pinned to core 0 (`taskset`). Arms alternate run by run;
//! every figure is the median of 3 runs.
//!
//! - `instant`: C streams against the simulator's `instant` profile (no modelled time, many
//!   tokens per read): chunks/s ingested and the client thread's CPU seconds per million
//!   tokens.
//! - `paced`: 256 streams × 100 tok/s against the paced server of the `load` bench (one
//!   token per chunk, one chunk every 10 ms per stream, 256-token requests, closed loop for
//!   8 s): client CPU µs per chunk, and client TTFT p50/p99 minus the server's own.
//!
//! Run: `cargo bench --bench client` (about 90 s); `BENCH_CLIENT_PACED_ONLY=1` runs the
//! paced case alone. The cost of the real shape of `run` (the multi-thread runtime, the
//! measuring window) is `cargo bench --bench load`.
//!
//! Seen on the 2-core dev machine (shared, noisy; medians of 3, server on core 0, client on
//! core 1):
//!
//! | case | h1 | hyper | hyper / h1 |
//! |---|---:|---:|---:|
//! | instant, 1 stream: CPU s per 1M chunks | 1.90 / 1.70 | 2.00 / 2.10 | 1.05× / 1.24× |
//! | instant, 16 streams | 1.65 / 1.63 | 2.30 / 2.35 | 1.39× / 1.45× |
//! | instant, 128 streams | 1.63 / 1.65 | 2.02 / 2.08 | 1.25× / 1.26× |
//! | paced 256 × 100 tok/s: CPU µs per chunk | 8.28 / 9.54 / 9.54 | 9.23 / 10.49 / 11.94 | 1.12× / 1.10× / 1.25× |
//! | paced: TTFT p50 − server | +0.83 / +0.93 / +1.02 ms | +0.79 / +0.80 / +0.95 ms | |
//! | paced: TTFT p99 − server | +2.93 / +3.31 / +2.92 ms | +1.30 / +0.97 / +2.16 ms | |
//!
//! (two invocations, a third of the paced case alone; each figure a median of 3 runs;
//! ~240K chunks/s ingested by either arm in the instant case, 25.5K tok/s of 25.6K offered
//! in the paced one, no failed request.)

mod hyper_arm;
mod paced;

use benchspec::client::Client;
use benchspec::spec::{self, Stage};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Arm {
    H1,
    Hyper,
}

const ARMS: [Arm; 2] = [Arm::H1, Arm::Hyper];

impl Arm {
    fn name(self) -> &'static str {
        match self {
            Arm::H1 => "h1",
            Arm::Hyper => "hyper",
        }
    }
}

fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

/// `benchspec sim --profile instant` on a free port, pinned to core 0; killed when dropped.
struct Sim {
    child: Child,
    url: String,
}

impl Sim {
    fn start() -> Option<Sim> {
        let mut child = Command::new("taskset")
            .args(["-c", "0", env!("CARGO_BIN_EXE_benchspec")])
            .args(["sim", "--port", "0", "--profile", "instant", "--quiet"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        BufReader::new(child.stderr.take()?)
            .read_line(&mut line)
            .ok()?;
        let url = line.split_whitespace().find(|w| w.starts_with("http://"))?;
        Some(Sim {
            url: url.to_string(),
            child,
        })
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(url: &str, model: &str, streams: usize, arm: Arm) -> Option<Client> {
    let yaml = format!(
        "version: 1\nname: b\nengine: {{kind: vllm}}\nmodel: {{served_name: {model}}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
    );
    let loaded = spec::parse("b.yaml", &yaml, Stage::Validate, &|_| None).ok()?;
    let settings = benchspec::plan::RunConfig::new(&loaded)
        .engine()
        .client_settings(url.to_string(), None, streams);
    let stall = settings.stall;
    let client = Client::new(settings).ok()?;
    Some(match arm {
        Arm::H1 => client,
        Arm::Hyper => client.with_transport(Arc::new(hyper_arm::HyperArm::new(url, stall))),
    })
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
}

/// Chunks/s and CPU s per 1M tokens of `streams` requests of `tokens` each.
fn instant_run(url: &str, streams: usize, tokens: u64, arm: Arm) -> Option<(f64, f64)> {
    let client = client(url, "instant", streams, arm)?;
    let rt = runtime()?;
    let cpu0 = thread_cpu_s();
    let start = Instant::now();
    let chunks: u64 = rt.block_on(async {
        let tasks: Vec<_> = (0..streams)
            .map(|_| {
                let client = client.clone();
                async move {
                    let mut n = 0u64;
                    let req = client.prepare("a b c", tokens);
                    let out = client.generate(&req, |_| n += 1).await;
                    if out.failure.is_some() { 0 } else { n }
                }
            })
            .collect();
        futures_util::future::join_all(tasks)
            .await
            .into_iter()
            .sum()
    });
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_s() - cpu0;
    (chunks > 0).then(|| (chunks as f64 / wall, cpu / chunks as f64 * 1e6))
}

/// One paced run's figures.
#[derive(Clone, Copy, Default)]
struct Paced {
    us_per_chunk: f64,
    tok_s: f64,
    ttft_p50_delta_ms: f64,
    ttft_p99_delta_ms: f64,
    failed: u64,
}

/// `streams` slots sending 256-token requests back to back for `window` to the paced server.
fn paced_run(url: &str, streams: usize, window: Duration, arm: Arm) -> Option<Paced> {
    let client = client(url, paced::MODEL, streams, arm)?;
    let rt = runtime()?;
    // Forget the server's TTFT records of earlier runs.
    rt.block_on(client.get_json("/bench/ttft")).ok()?;
    let cpu0 = thread_cpu_s();
    let start = Instant::now();
    let per_slot: Vec<(u64, u64, Vec<f64>)> = rt.block_on(async {
        let slots = (0..streams).map(|_| async {
            let req = client.prepare("a b c", 256);
            let (mut chunks, mut failed, mut ttft) = (0u64, 0u64, Vec::new());
            while start.elapsed() < window {
                let mut first = None;
                let out = client
                    .generate(&req, |c| {
                        chunks += 1;
                        first.get_or_insert(c.at - c.sent);
                    })
                    .await;
                match (out.failure, first) {
                    (None, Some(f)) => ttft.push(f.as_secs_f64() * 1e3),
                    _ => failed += 1,
                }
            }
            (chunks, failed, ttft)
        });
        futures_util::future::join_all(slots).await
    });
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_s() - cpu0;
    let server = rt.block_on(client.get_json("/bench/ttft")).ok()?;
    let chunks: u64 = per_slot.iter().map(|s| s.0).sum();
    let failed = per_slot.iter().map(|s| s.1).sum();
    let mut ttft: Vec<f64> = per_slot.into_iter().flat_map(|s| s.2).collect();
    ttft.sort_by(f64::total_cmp);
    let q = |p: f64| ttft.get(((ttft.len() as f64 - 1.0) * p) as usize).copied();
    Some(Paced {
        us_per_chunk: cpu / chunks.max(1) as f64 * 1e6,
        tok_s: chunks as f64 / wall,
        ttft_p50_delta_ms: q(0.5)? - server["p50_ms"].as_f64()?,
        ttft_p99_delta_ms: q(0.99)? - server["p99_ms"].as_f64()?,
        failed,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Pin this process's main thread (and the threads it starts later) to core 1.
fn pin_to_core_1() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores >= 2
        && Command::new("taskset")
            .args(["-p", "-c", "1", &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn instant_table() {
    let Some(sim) = Sim::start() else {
        println!("the simulator did not start");
        return;
    };
    println!("| streams | arm | chunks/s ingested | client CPU s per 1M tokens |");
    println!("|---:|---|---:|---:|");
    for streams in [1usize, 16, 128] {
        let tokens = (400_000 / streams as u64).min(100_000);
        let mut runs: Vec<(Arm, f64, f64)> = Vec::new();
        for _ in 0..3 {
            for arm in ARMS {
                if let Some((rate, cpu)) = instant_run(&sim.url, streams, tokens, arm) {
                    runs.push((arm, rate, cpu));
                }
            }
        }
        let mut cpus = Vec::new();
        for arm in ARMS {
            let of = |f: fn(&(Arm, f64, f64)) -> f64| {
                median(runs.iter().filter(|r| r.0 == arm).map(f).collect())
            };
            let (rate, cpu) = (of(|r| r.1), of(|r| r.2));
            cpus.push(cpu);
            println!("| {streams} | {} | {rate:.0} | {cpu:.2} |", arm.name());
        }
        println!("| {streams} | hyper / h1 | | {:.2}× |", cpus[1] / cpus[0]);
    }
}

fn paced_table() {
    let Some(server) = paced::Spawned::start(10_000) else {
        println!("the paced server did not start");
        return;
    };
    println!(
        "\n| 256 streams × 100 tok/s | achieved tok/s | client CPU µs/chunk | TTFT p50 − server | TTFT p99 − server | failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut runs: Vec<(Arm, Paced)> = Vec::new();
    for _ in 0..3 {
        for arm in ARMS {
            if let Some(p) = paced_run(&server.url, 256, Duration::from_secs(8), arm) {
                runs.push((arm, p));
            }
        }
    }
    let mut cpus = Vec::new();
    for arm in ARMS {
        let of = |f: fn(&Paced) -> f64| {
            median(
                runs.iter()
                    .filter(|r| r.0 == arm)
                    .map(|r| f(&r.1))
                    .collect(),
            )
        };
        cpus.push(of(|p| p.us_per_chunk));
        println!(
            "| {} | {:.0} | {:.2} | {:+.2} ms | {:+.2} ms | {:.0} |",
            arm.name(),
            of(|p| p.tok_s),
            of(|p| p.us_per_chunk),
            of(|p| p.ttft_p50_delta_ms),
            of(|p| p.ttft_p99_delta_ms),
            of(|p| p.failed as f64),
        );
    }
    println!("| hyper / h1 | | {:.2}× | | | |", cpus[1] / cpus[0]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let gap_us = args.get(i + 1).and_then(|g| g.parse().ok()).unwrap_or(0);
        paced::serve(Duration::from_micros(gap_us));
        return;
    }
    let pinned = pin_to_core_1();
    println!(
        "client on {}; servers pinned to core 0; medians of 3\n",
        if pinned {
            "core 1"
        } else {
            "any core (not pinned)"
        }
    );
    if std::env::var_os("BENCH_CLIENT_PACED_ONLY").is_none() {
        instant_table();
    }
    paced_table();
}
