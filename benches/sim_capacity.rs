//! The simulator's capacity on one core: the `instant` profile (no modelled time) served by a
//! single-threaded runtime on its own thread, C concurrent streams from a client on the other
//! threads. Prints streamed tokens/s and the sim thread's CPU seconds per million tokens.
//! Run: `cargo bench --bench sim_capacity` (medians of 3 runs per C).

use benchspec::sim::{self, Options, profile};
use std::time::Instant;

const TOKENS_PER_REQUEST: usize = 2000;

fn thread_cpu_s() -> f64 {
    // utime and stime are fields 14 and 15 of /proc/thread-self/stat, in clock ticks (100 Hz).
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

fn one_run(streams: usize, requests_per_stream: usize) -> Option<(f64, f64)> {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
            let sim = sim::start(listener, Options::new(profile::profile("instant")?)).ok()?;
            addr_tx.send(sim.base_url()).ok()?;
            let cpu0 = thread_cpu_s();
            let _ = stop_rx.await;
            let cpu = thread_cpu_s() - cpu0;
            sim.stop().await;
            Some(cpu)
        })
    });
    let url = addr_rx.recv().ok()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .ok()?;
    let start = Instant::now();
    let tokens: usize = rt.block_on(async {
        let client = benchspec::client::http_builder().no_proxy().pool_max_idle_per_host(streams).build().ok()?;
        let mut tasks = Vec::new();
        for _ in 0..streams {
            let (client, url) = (client.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = 0;
                for _ in 0..requests_per_stream {
                    let body = serde_json::json!({"model": "instant", "prompt": "x y z", "max_tokens": TOKENS_PER_REQUEST, "ignore_eos": true, "stream": true});
                    let Ok(mut r) = client.post(format!("{url}/v1/completions")).json(&body).send().await else { continue };
                    while let Ok(Some(chunk)) = r.chunk().await {
                        n += chunk.windows(6).filter(|w| w == b"data: ").count();
                    }
                }
                n
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap_or(0);
        }
        Some(total)
    })?;
    let wall = start.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    let cpu = server.join().ok()??;
    Some((tokens as f64 / wall, cpu / tokens as f64 * 1e6))
}

fn main() {
    println!("| streams | tokens/s streamed | sim CPU s per 1M tokens |\n|---:|---:|---:|");
    for streams in [1, 16, 128, 512] {
        let requests = (256 / streams).max(1);
        let mut runs: Vec<(f64, f64)> = (0..3).filter_map(|_| one_run(streams, requests)).collect();
        if runs.is_empty() {
            continue;
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (rate, cpu) = runs[runs.len() / 2];
        println!("| {streams} | {rate:.0} | {cpu:.2} |");
    }
}
