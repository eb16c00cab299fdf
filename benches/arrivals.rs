//! The open-loop arrival scheduler, measured the way `benchspec run` drives it: the paced
//! server (`benches/paced`, re-run with `--serve 0`, pinned to core 0) answers every request
//! with 4 tokens as fast as it can, and the real `benchspec` binary, pinned to core 1 with
//! `--client-threads 1`, runs one load cell of Poisson arrivals at each rate. For each rate it
//! prints, as medians of 3 runs: the rate actually sent, send lateness p50 / p99 / max (the
//! send just before the write against the scheduled arrival), requests in flight at peak, the
//! client's CPU busy fraction, and errors.
//!
//! Run: `cargo bench --bench arrivals` (about 3 minutes); `BENCH_ARRIVALS_QUICK=1` runs 1
//! repeat of 4 s; `BENCH_ARRIVALS_RATES=1000,2000` picks rates (requests per second).

mod paced;

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let gap_us = args.get(i + 1).and_then(|g| g.parse().ok()).unwrap_or(0);
        paced::serve(Duration::from_micros(gap_us));
        return;
    }
    if args.iter().any(|a| a == "--sleep-baseline") {
        sleep_baseline();
        return;
    }
    let quick = std::env::var_os("BENCH_ARRIVALS_QUICK").is_some();
    let (repeats, secs) = if quick { (1, 4) } else { (3, 10) };
    let rates: Vec<u32> = std::env::var("BENCH_ARRIVALS_RATES")
        .ok()
        .map(|r| r.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 1000, 2000]);
    println!(
        "`benchspec run`, one load cell of Poisson arrivals for {secs} s, 64-token prompts, 4 output \
         tokens; server on core 0, client on core 1 (--client-threads 1); medians of {repeats}"
    );
    println!(
        "| offered req/s | sent req/s | lateness p50 | p99 | max | peak in flight | client busy | errors |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for rate in rates {
        let mut runs: Vec<Value> = (0..repeats).filter_map(|_| one(rate, secs)).collect();
        if runs.is_empty() {
            println!("| {rate} | failed |");
            continue;
        }
        let mut med = |path: &[&str]| {
            let f = |v: &Value| {
                path.iter()
                    .fold(v, |v, k| &v[*k])
                    .as_f64()
                    .unwrap_or(f64::NAN)
            };
            runs.sort_by(|a, b| f(a).total_cmp(&f(b)));
            runs.get(runs.len() / 2).map_or(f64::NAN, f)
        };
        println!(
            "| {rate} | {:.1} | {:.3} ms | {:.3} ms | {:.3} ms | {:.0} | {:.0}% | {:.0} |",
            med(&["rate_sent"]),
            med(&["send_lateness_ms", "p50"]),
            med(&["send_lateness_ms", "p99"]),
            med(&["send_lateness_ms", "max"]),
            med(&["peak_active"]),
            med(&["client", "cpu_busy"]) * 100.0,
            med(&["errors"]),
        );
    }
    baseline();
}

/// The machine's own timer noise, for scale: a thread pinned to the client's core sleeping
/// 1 ms 3,000 times, and how late it wakes.
fn baseline() {
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    let out = Command::new("taskset")
        .args(["-c", "1"])
        .arg(me)
        .arg("--sleep-baseline")
        .output();
    if let Ok(out) = out {
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

fn sleep_baseline() {
    let mut late: Vec<f64> = (0..3000)
        .map(|_| {
            let t = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            (t.elapsed().as_secs_f64() - 1e-3) * 1e3
        })
        .collect();
    late.sort_by(f64::total_cmp);
    println!(
        "\nfor scale, this machine: a thread on core 1 sleeping 1 ms wakes late by p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        late[1500], late[2970], late[2999]
    );
}

/// One run at `rate` for `secs`: the load cell's record.
fn one(rate: u32, secs: u32) -> Option<Value> {
    let server = paced::Spawned::start(0)?;
    drive(&server.url, rate, secs)
}

fn drive(url: &str, rate: u32, secs: u32) -> Option<Value> {
    let dir = std::env::temp_dir().join(format!("benchspec-arrivals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    let spec = format!(
        "version: 1\nname: arrivals bench\nengine: {{kind: vllm, base_url: \"{url}\"}}\n\
         model: {{served_name: {}, max_model_len: 131072}}\n\
         workload: {{max_output_tokens: 4}}\n\
         matrix: {{contexts: [64], concurrency: [1]}}\n\
         phases: {{prefill: {{enabled: false}}, decode: {{enabled: false}}, \
         load: {{rates: [{rate}], arrivals: poisson, requests: {}}}}}\n",
        paced::MODEL,
        rate * secs
    );
    let path = dir.join("arrivals.yaml");
    std::fs::write(&path, spec).ok()?;
    let out = dir.join("run");
    let _ = Command::new("taskset")
        .args([
            "-c",
            "1",
            env!("CARGO_BIN_EXE_benchspec"),
            "run",
            "--client-threads",
            "1",
        ])
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(out.join("results.jsonl")).ok()?;
    let rec = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["phase"] == "load");
    let _ = std::fs::remove_dir_all(&dir);
    rec
}
