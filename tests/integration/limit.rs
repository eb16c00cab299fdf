//! The diagnosis of what limits a cell (docs/results.md, `limit`) on simulators whose limit is
//! known: one that runs at most 2 requests at once (the scheduler) and one whose KV cache
//! holds 3 requests of 1K (the KV cache). Each simulator is a process of its own, watched by
//! this test through its own `/metrics` during the run and after it, so that the evidence a
//! record quotes is checked against the engine's counters, not against benchspec's reading.

use super::cli::{Bench, Done, tempdir::Dir};
use super::{bin, free_port};
use benchspec::results::Record;
use benchspec::results::limit::{Limit, LimitKind};
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `benchspec sim` on `port` with `flags`, ready when this returns; killed on drop.
struct Sim(Child);

impl Sim {
    fn start(port: u16, flags: &str) -> Sim {
        let sim = Sim(Command::new(bin())
            .args([
                "sim",
                "--port",
                &port.to_string(),
                "--profile",
                "tiny",
                "--served-name",
                "m",
            ])
            .args(flags.split_whitespace())
            .stderr(Stdio::null())
            .spawn()
            .unwrap());
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return sim;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the simulator did not listen on {port}");
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The engine's `/metrics` body (empty while nothing listens on `port`).
pub(super) fn metrics(port: u16) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text
}

/// A sample's value (its first series).
pub(super) fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The most of each gauge `names` the simulator showed while `f` ran, polled every 50 ms.
pub(super) fn watched<T>(
    port: u16,
    names: [&'static str; 3],
    f: impl FnOnce() -> T,
) -> (T, [f64; 3]) {
    let most = Arc::new(Mutex::new([0.0f64; 3]));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (most, stop) = (most.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let text = metrics(port);
                let mut m = most.lock().unwrap();
                for (k, n) in names.iter().enumerate() {
                    let v = metric(&text, n);
                    if v.is_finite() {
                        m[k] = m[k].max(v);
                    }
                }
                drop(m);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let out = f();
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    let m = *most.lock().unwrap();
    (out, m)
}

/// `benchspec run` of `spec` attached to the simulator on `port`, and its records.
fn run(dir: &Dir, spec: &str, port: u16) -> (Done, Vec<Record>) {
    let file = dir.path().join("spec.yaml");
    std::fs::write(&file, spec).unwrap();
    let out = dir.path().join("run");
    let done = Bench::new(&["run"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--base-url")
        .arg(format!("http://127.0.0.1:{port}"))
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    (done, records)
}

fn limit_of<'a>(records: &'a [Record], id: &str) -> &'a Limit {
    let r = records.iter().find(|r| r.cell == id);
    r.and_then(|r| r.limit.as_ref())
        .unwrap_or_else(|| panic!("no limit on {id}: {records:#?}"))
}

fn evidence(l: &Limit, name: &str) -> f64 {
    l.evidence
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.value)
        .unwrap_or_else(|| panic!("no {name} in {l:#?}"))
}

/// A spec launching the simulator with `launch` flags, at `concurrency`, 1K or 512 contexts.
fn spec(port: u16, launch: &str, context: &str, concurrency: &str) -> String {
    format!(
        "version: 1\nname: limit\nengine:\n  kind: vllm\n  base_url: http://127.0.0.1:{port}\n  launch: {{command: 'benchspec sim --port {port} --profile tiny {launch}'}}\nmodel: {{served_name: m}}\nworkload: {{max_output_tokens: 64, kv_overflow: run}}\nmatrix: {{contexts: [{context}], concurrency: [{concurrency}]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 2s}}}}\ntelemetry: {{interval: 200ms}}\n"
    )
}

const GAUGES: [&str; 3] = [
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
];

#[test]
fn a_scheduler_capped_at_two_is_named_with_the_engines_numbers() {
    let _cpu = super::cpu();
    let port = free_port();
    let _sim = Sim::start(port, "--max-num-seqs 2");
    let dir = Dir::new();
    let text = spec(port, "--max-num-seqs 2", "512", "1, 2, 4");
    let ((done, records), most) = watched(port, GAUGES, || run(&dir, &text, port));
    assert!(done.code <= 1, "{}", done.stderr);
    // c2 → c4 adds nothing (2 run either way): c2 is the last cell before the plateau.
    let l = limit_of(&records, "decode/512/c2");
    assert_eq!(l.kind, Some(LimitKind::Scheduler), "{l:#?}");
    assert!(l.suggestion.contains("--max-num-seqs"), "{}", l.suggestion);
    // The engine's own gauges: never more than 2 running, 4 − 2 = 2 waiting at most.
    assert_eq!(most[0], 2.0, "the simulator's running max");
    assert_eq!(most[1], 2.0, "the simulator's waiting max");
    assert_eq!(evidence(l, "server.running_max"), most[0]);
    let waiting = evidence(l, "server.waiting_max");
    assert!(
        waiting >= 1.0 && waiting <= most[1],
        "{waiting} vs {}",
        most[1]
    );
    assert_eq!(evidence(l, "cap"), 2.0);
    assert!(
        done.stderr.contains("decode/512/c2: scheduler"),
        "{}",
        done.stderr
    );
    for other in ["decode/512/c1", "decode/512/c4"] {
        let r = records.iter().find(|r| r.cell == other).unwrap();
        assert!(r.limit.is_none(), "{other}: {:?}", r.limit);
    }

    // The same engine with no cap in the spec: requests were held back, but whether by the
    // scheduler or the KV cache is not told: not judged, and the way to tell is said.
    let dir = Dir::new();
    let text = spec(port, "", "512", "1, 2, 4");
    let (_, records) = run(&dir, &text, port);
    let l = limit_of(&records, "decode/512/c2");
    assert_eq!(l.kind, None, "{l:#?}");
    assert!(
        l.suggestion.contains("--max-num-seqs N"),
        "{}",
        l.suggestion
    );
}

#[test]
fn a_kv_cache_of_three_requests_is_named_with_the_engines_numbers() {
    let _cpu = super::cpu();
    let port = free_port();
    // 4,096 tokens (256 blocks of 16): three 1K + 64 requests (68 blocks each) fit, not six.
    let _sim = Sim::start(port, "--kv-tokens 4096 --max-num-seqs 32");
    let dir = Dir::new();
    let text = spec(port, "--kv-tokens 4096 --max-num-seqs 32", "1K", "3, 6");
    let ((done, records), most) = watched(port, GAUGES, || run(&dir, &text, port));
    assert!(done.code <= 1, "{}", done.stderr);
    let l = limit_of(&records, "decode/1K/c3");
    assert_eq!(l.kind, Some(LimitKind::KvCache), "{l:#?}");
    assert!(
        l.suggestion.contains("--gpu-memory-utilization"),
        "{}",
        l.suggestion
    );
    // Preemptions: each cell's count is its increase of the engine's counter, and nothing
    // runs between cells, so they add up to the counter's final value.
    let total = metric(&metrics(port), "vllm:num_preemptions_total");
    let counted: f64 = records
        .iter()
        .filter_map(|r| r.server.as_ref()?.preemptions)
        .sum();
    assert_eq!(
        counted, total,
        "the cells' preemptions against the engine's counter"
    );
    let c6 = records.iter().find(|r| r.cell == "decode/1K/c6").unwrap();
    let c6_preempted = c6.server.as_ref().and_then(|s| s.preemptions);
    assert_eq!(Some(evidence(l, "server.preemptions")), c6_preempted);
    let kv = evidence(l, "server.kv_usage_max");
    // Records round KV usage to 4 decimals; three requests of 68 blocks in 256 are 0.796875.
    assert!(
        kv <= most[2] + 5e-5 && kv > 0.0,
        "{kv} vs the engine's {}",
        most[2]
    );
    assert!(evidence(l, "server.running_max") <= most[0]);
}
