//! The measuring client's own cost: C streams against the `instant` simulator (no modelled
//! time) served from another thread, the client on a single-threaded runtime on this thread.
//! Prints chunks/s ingested and the client thread's CPU seconds per million tokens (medians
//! of 3). Run: `cargo bench --bench client`. It measures the client's parsing cost with many
//! tokens per read on a current-thread runtime; the cost of the real shape of `run` (one
//! token per chunk, the multi-thread runtime, TTFT against the server's own) is
//! `cargo bench --bench load`.

use benchspec::client::Client;
use benchspec::sim::{self, Options, profile};
use benchspec::spec::{self, Stage};
use std::time::Instant;

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

fn serve() -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
            let sim = sim::start(listener, Options::new(profile::profile("instant")?)).ok()?;
            tx.send(sim.base_url()).ok()?;
            std::future::pending::<()>().await;
            Some(())
        })
    });
    rx.recv().ok()
}

fn one_run(url: &str, streams: usize, tokens: u64) -> Option<(f64, f64)> {
    let yaml = "version: 1\nname: b\nengine: {kind: vllm}\nmodel: {served_name: instant}\nmatrix: {contexts: [1K], concurrency: [1]}\n";
    let spec = spec::parse("b.yaml", yaml, Stage::Validate, &|_| None)
        .ok()?
        .spec;
    let client = Client::new(benchspec::plan::client_settings(
        &spec,
        url.to_string(),
        None,
        streams,
    ))
    .ok()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
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
    Some((chunks as f64 / wall, cpu / chunks.max(1) as f64 * 1e6))
}

fn main() {
    let Some(url) = serve() else { return };
    println!("| streams | chunks/s ingested | client CPU s per 1M tokens |\n|---:|---:|---:|");
    for streams in [1usize, 16, 128] {
        let tokens = (400_000 / streams as u64).min(100_000);
        let mut runs: Vec<(f64, f64)> = (0..3)
            .filter_map(|_| one_run(&url, streams, tokens))
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((rate, cpu)) = runs.get(runs.len() / 2) {
            println!("| {streams} | {rate:.0} | {cpu:.2} |");
        }
    }
}
