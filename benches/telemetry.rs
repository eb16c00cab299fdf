//! What watching the engine costs the measuring client, on the path `run` takes:
//!
//! 1. Parse and reduction alone: a vLLM-shaped exposition of ~80 KB (the simulator's metrics
//!    plus 40 more histograms, the size a real vLLM serves), read whole and read keeping only
//!    the names a cell uses (what `run` does), in µs of CPU per scrape (median of 200).
//! 2. A scrape over HTTP: `benchspec sim` (the seed's profile) pinned to core 0, and this
//!    process scraping its `/metrics` 500 times through the run's own client and parser on a
//!    current-thread runtime, in µs of this process's CPU per scrape.
//! 3. The client's own CPU: the real `benchspec run` binary pinned to core 1
//!    (`--client-threads 1`), one decode cell of 32 streams at 1K for 10 s with telemetry off
//!    (median of 3), and what one scrape a second adds to it as a share. (An A/B of whole runs
//!    cannot show it: their CPU time varies by ±5% from run to run on this machine.)
//!
//! Run: `cargo bench --bench telemetry` (about a minute); `BENCH_TELEMETRY_QUICK=1` runs 1
//! repeat of 4 s.

use benchspec::telemetry::{self, prom::Scrape, server, server::Scrapes};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::var_os("BENCH_TELEMETRY_QUICK").is_some();
    let (repeats, secs) = if quick { (1, 4) } else { (3, 10) };
    parse_cost();
    let exe = env!("CARGO_BIN_EXE_benchspec");
    let port = 18_431;
    let mut sim = Command::new("taskset")
        .args(["-c", "0", exe, "sim", "--profile", "h200-gemma-4-e2b"])
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(&format!("taskset/benchspec sim: {e}")));
    std::thread::sleep(Duration::from_secs(2));
    let per_scrape_us = http_scrapes(port);
    let mut cpu = Vec::new();
    let mut busy = Vec::new();
    for r in 0..repeats {
        let (c, b) = one_run(
            exe,
            port,
            secs,
            "{server: false, gpu: off}",
            &format!("off-{r}"),
        );
        cpu.push(c / f64::from(secs));
        busy.push(b);
    }
    let (per_s, b) = (median(&mut cpu), median(&mut busy));
    println!(
        "\n`benchspec run` on core 1 (--client-threads 1) against `benchspec sim` on core 0, one decode \
         cell of 1K × 32 streams, telemetry off: the client uses {:.1} ms of CPU per second ({:.1}% busy, median of {repeats}); \
         one scrape a second adds {:.3} ms, {:.2}% of it",
        per_s * 1e3,
        b * 100.0,
        per_scrape_us / 1e3,
        per_scrape_us / 1e6 / per_s * 100.0
    );
    let _ = sim.kill();
    let _ = sim.wait();
}

/// Say what went wrong and stop.
fn die(what: &str) -> ! {
    eprintln!("bench telemetry: {what}");
    std::process::exit(1)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One run; the decode record's client CPU seconds and busy fraction.
fn one_run(exe: &str, port: u16, secs: u32, telemetry: &str, tag: &str) -> (f64, f64) {
    let dir =
        std::env::temp_dir().join(format!("benchspec-telemetry-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&e.to_string()));
    let spec = dir.join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            "version: 1\nname: telemetry cost\nengine: {{kind: vllm, base_url: 'http://127.0.0.1:{port}'}}\n\
             model: {{served_name: gemma}}\nworkload: {{max_output_tokens: 4096}}\n\
             matrix: {{contexts: [1K], concurrency: [32]}}\n\
             phases: {{prefill: {{enabled: false}}, decode: {{duration: {secs}s}}}}\ntelemetry: {telemetry}\n"
        ),
    )
    .unwrap_or_else(|e| die(&e.to_string()));
    let out = dir.join("run");
    let status = Command::new("taskset")
        .args([
            "-c",
            "1",
            exe,
            "run",
            "--quiet",
            "--client-threads",
            "1",
            "--out",
        ])
        .arg(&out)
        .arg(&spec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| die(&e.to_string()));
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
    let rec: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|r: &serde_json::Value| r["cell"] == "decode/1K/c32")
        .unwrap_or_else(|| die(&format!("no decode record ({status}): {text}")));
    let _ = std::fs::remove_dir_all(&dir);
    (
        rec["client"]["cpu_s"].as_f64().unwrap_or(f64::NAN),
        rec["client"]["cpu_busy"].as_f64().unwrap_or(f64::NAN),
    )
}

/// A vLLM-shaped exposition of about 100 KB.
fn exposition(step: u64) -> String {
    let mut t = String::new();
    for g in [
        "num_requests_running",
        "num_requests_waiting",
        "kv_cache_usage_perc",
    ] {
        t.push_str(&format!("# HELP vllm:{g} x\n# TYPE vllm:{g} gauge\nvllm:{g}{{engine=\"0\",model_name=\"gemma\"}} {step}.0\n"));
    }
    for c in [
        "prefix_cache_queries",
        "prefix_cache_hits",
        "num_preemptions",
        "prompt_tokens",
        "generation_tokens",
    ] {
        t.push_str(&format!(
            "vllm:{c}_total{{engine=\"0\",model_name=\"gemma\"}} {}.0\n",
            step * 1000
        ));
    }
    let hists = ["time_to_first_token_seconds", "inter_token_latency_seconds"]
        .into_iter()
        .map(String::from)
        .chain((0..40).map(|i| format!("other_histogram_{i}_seconds")));
    for h in hists {
        t.push_str(&format!("# HELP vllm:{h} x\n# TYPE vllm:{h} histogram\n"));
        for (i, le) in [
            "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
            "1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "+Inf",
        ]
        .iter()
        .enumerate()
        {
            t.push_str(&format!(
                "vllm:{h}_bucket{{engine=\"0\",le=\"{le}\",model_name=\"gemma\"}} {}.0\n",
                step * i as u64
            ));
        }
        t.push_str(&format!("vllm:{h}_count{{engine=\"0\",model_name=\"gemma\"}} {}.0\nvllm:{h}_sum{{engine=\"0\",model_name=\"gemma\"}} {}.5\n", step * 19, step));
    }
    t
}

fn parse_cost() {
    let texts: Vec<String> = (1..=3).map(exposition).collect();
    let kb = texts[0].len() as f64 / 1024.0;
    for (how, keep) in [
        ("whole", (&|_: &str| true) as &dyn Fn(&str) -> bool),
        ("kept names only", &server::wanted),
    ] {
        let mut per = Vec::new();
        for _ in 0..200 {
            let t0 = Instant::now();
            let at = tokio::time::Instant::now();
            let s = Scrapes {
                before: Scrape::only(at, &texts[0], keep),
                during: vec![Scrape::only(at, &texts[1], keep)],
                after: Scrape::only(at, &texts[2], keep),
            };
            std::hint::black_box(s.summarize(at, at));
            per.push(t0.elapsed().as_secs_f64() * 1e6 / 3.0);
        }
        println!(
            "parse + reduce of a {kb:.0} KB vLLM exposition, {how}: {:.0} µs per scrape (median of 200)",
            median(&mut per)
        );
    }
}

/// CPU µs of this process (the scrape and its parse on a blocking thread) per scrape of the
/// simulator's `/metrics` through the run's client.
fn http_scrapes(port: u16) -> f64 {
    let yaml = format!(
        "version: 1\nname: t\nengine: {{kind: vllm, base_url: 'http://127.0.0.1:{port}'}}\n\
         model: {{served_name: gemma}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
    );
    let loaded =
        benchspec::spec::parse("bench.yaml", &yaml, benchspec::spec::Stage::Run, &|_| None)
            .unwrap_or_else(|_| die("the bench spec does not parse"));
    let base = format!("http://127.0.0.1:{port}");
    let client = benchspec::client::Client::new(
        benchspec::plan::RunConfig::new(&loaded)
            .engine()
            .client_settings(base.to_string(), None, 1),
    )
    .unwrap_or_else(|e| die(&e.to_string()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&e.to_string()));
    let cpu = || {
        nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
            .map_or(0.0, |t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
    };
    rt.block_on(async {
        let warm = telemetry::scrape(&client).await.map_or(0, |s| s.samples.len());
        let (n, t0) = (500, cpu());
        for _ in 0..n {
            std::hint::black_box(telemetry::scrape(&client).await);
        }
        let us = (cpu() - t0) / f64::from(n) * 1e6;
        println!(
            "a scrape of the simulator's /metrics over HTTP (its {warm} samples a cell reads): {us:.0} µs of CPU (mean of {n})"
        );
        us
    })
}
