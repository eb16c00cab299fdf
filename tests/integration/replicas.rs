//! Several servers: `engine.replicas` (benchspec launches the command N times, each on its
//! own port) and `engine.endpoints` (servers already running), the requests spread over
//! them, each server's share in `by_endpoint`, their telemetry summed, and a replica that
//! dies relaunched alone. The servers are `benchspec sim` processes and llama.cpp's server.

use super::Edit;
use super::cli::Bench;
use super::{bin, free_port};
use benchspec::results::{Record, Status};

/// Two neighbouring free ports (replica i listens on the base port + i).
fn free_pair() -> u16 {
    loop {
        let p = free_port();
        if p < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

/// Every record with `by_endpoint` has one row per server, and the rows' requests add up
/// to the record's; returns each server's share of all requests.
fn shares(records: &[Record], servers: usize) -> Vec<f64> {
    let mut per = vec![0u64; servers];
    for r in records.iter().filter(|r| r.status != Status::Skipped) {
        let Some(rows) = &r.by_endpoint else {
            panic!("{}: no by_endpoint: {r:#?}", r.cell)
        };
        assert_eq!(rows.len(), servers, "{}", r.cell);
        let sum: u64 = rows.iter().map(|e| e.requests).sum();
        assert_eq!(sum, r.requests_started, "{}: {rows:#?}", r.cell);
        for (p, e) in per.iter_mut().zip(rows) {
            *p += e.requests;
        }
    }
    let all: u64 = per.iter().sum();
    eprintln!("requests by server: {per:?}");
    per.iter().map(|p| *p as f64 / all.max(1) as f64).collect()
}

/// Two launched replicas of `benchspec sim`: each gets about half of every phase's requests
/// (least-outstanding), `server.running_mean` sums them, and replica 1 — which dies 2.5 s
/// after each start — is relaunched alone while replica 0 runs on.
#[test]
fn two_replicas_share_the_requests_and_a_dead_one_is_relaunched_alone() {
    let port = free_pair();
    let sim = format!(
        "{} sim --port ${{PORT}} --profile tiny --served-name m",
        bin()
    );
    // `$$R` is the shell's `$R`: replica 1 lives 2.5 s per launch.
    let script =
        format!("if [ \"$$R\" = 1 ]; then exec {sim} --die-after 2500ms; else exec {sim}; fi");
    let spec = format!(
        "version: 1
name: replicas
engine:
  kind: vllm
  base_url: http://127.0.0.1:{port}
  replicas: 2
  launch:
    command: [sh, -c, '{script}']
    env: {{R: '${{REPLICA}}'}}
    ready_timeout: 20s
    stop_timeout: 2s
    restart_on_crash: true
model: {{served_name: m}}
workload: {{max_output_tokens: 32}}
matrix: {{contexts: [512], concurrency: [4, 8]}}
phases:
  decode: {{duration: 1500ms}}
  load: {{contexts: [512], rates: [40], duration: 1s}}
"
    );
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec)
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert!(
        done.stderr.contains("launching 2 of 2 replicas")
            && done.stderr.contains("the engine (replica 1) exited")
            && done.stderr.contains("relaunching it alone"),
        "{}",
        done.stderr
    );
    replica_1_alone_was_relaunched(&out);
    each_replica_gets_about_half(&records);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
            && std::net::TcpStream::connect(("127.0.0.1", port + 1)).is_err(),
        "both replicas are gone after the run"
    );
}

/// The engine logs of the run in `out`: replica 0 started once, replica 1 more than once; the
/// report names the 2 replicas.
fn replica_1_alone_was_relaunched(out: &std::path::Path) {
    let starts = |i: u32| {
        std::fs::read_to_string(out.join(format!("engine-{i}.log")))
            .unwrap_or_default()
            .matches("benchspec sim: profile `tiny`")
            .count()
    };
    assert_eq!(starts(0), 1, "replica 0 ran throughout");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Servers") && md.contains("2 replicas launched (least-outstanding)"),
        "{md}"
    );
    assert!(starts(1) >= 2, "replica 1 was relaunched: {}", starts(1));
}

/// Cells measured while both replicas ran (the valid `records`): each replica ~half, rows
/// adding up to the record; their running requests add up to ~8 at c8.
fn each_replica_gets_about_half(records: &[Record]) {
    let whole: Vec<Record> = records
        .iter()
        .filter(|r| r.status == Status::Valid)
        .cloned()
        .collect();
    assert!(whole.len() >= 2, "{records:#?}");
    for s in shares(&whole, 2) {
        assert!((0.35..=0.65).contains(&s), "share {s}: {whole:#?}");
    }
    let c8 = whole.iter().find(|r| r.cell == "decode/512/c8");
    if let Some(server) = c8.and_then(|r| r.server.as_ref()) {
        let running = server.running_mean.unwrap_or_default();
        assert!(
            (5.0..=8.5).contains(&running),
            "the replicas' running requests add up to ~8: {server:#?}"
        );
    }
}

/// `engine.endpoints` attaches to servers already running, here two `benchspec sim`
/// processes: round-robin gives each the same number of requests within one, and each
/// server's own count (its `/metrics`) holds at least the requests `by_endpoint` says it got.
#[test]
fn endpoints_already_running_get_requests_in_turn() {
    let ports = [free_port(), free_port()];
    let mut sims: Vec<Server> = ports
        .iter()
        .map(|p| {
            Server(
                std::process::Command::new(bin())
                    .args(["sim", "--port", &p.to_string(), "--profile", "tiny"])
                    .args(["--served-name", "m", "-q"])
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    for p in ports {
        wait_for_port(p);
    }
    let spec = format!(
        "version: 1
name: endpoints
engine:
  kind: vllm
  endpoints: [http://127.0.0.1:{}, http://127.0.0.1:{}]
  balance: round-robin
model: {{served_name: m}}
workload: {{max_output_tokens: 16}}
matrix: {{contexts: [256], concurrency: [2]}}
phases:
  decode: {{duration: 1s}}
  sessions: {{contexts: [256], users: [2], turns: 3, output_tokens: 8, duration: 1s}}
",
        ports[0], ports[1]
    );
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    shares(&records, 2);
    round_robin_and_each_servers_own_count(&records, ports);
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"balance\": \"round-robin\""),
        "{manifest}"
    );
    sims.clear();
}

/// The decode cell of `records`: round-robin gives each server the same number of requests
/// within one, and each server's own count (its `/metrics`) holds at least what
/// `by_endpoint` says it got.
fn round_robin_and_each_servers_own_count(records: &[Record], ports: [u16; 2]) {
    let decode = records.iter().find(|r| r.cell == "decode/256/c2").unwrap();
    let rows = decode.by_endpoint.as_ref().unwrap();
    assert!(
        rows[0].requests.abs_diff(rows[1].requests) <= 1,
        "round-robin: {rows:#?}"
    );
    for (p, row) in ports.iter().zip(rows) {
        assert_eq!(row.url, format!("http://127.0.0.1:{p}"));
        let metrics = reqwest_get(*p, "/metrics");
        let served: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("vllm:request_success_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(
            served >= row.requests as f64,
            "{p} served {served}, by_endpoint says {}",
            row.requests
        );
    }
}

/// Wait until something listens on `port` (10 s at most).
fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

/// A server the test started, killed when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` of 127.0.0.1:`port` as text (HTTP/1.0, no client library).
fn reqwest_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// llama.cpp's server as 2 replicas (the shipped spec with `replicas: 2` and `${PORT}`):
/// each serves 35–65% of the requests by its own log, and `by_endpoint` adds up.
#[test]
fn llama_cpp_as_two_replicas() {
    let _cpu = super::cpu();
    let port = free_pair();
    let text = super::llamacpp::shipped(port)
        .edit(
            &format!("base_url: http://127.0.0.1:{port}"),
            &format!("base_url: http://127.0.0.1:{port}\n  replicas: 2"),
        )
        .edit(&format!("--port {port}"), "--port ${PORT}")
        .edit("--parallel 4 --threads 2", "--parallel 2 --threads 1")
        .edit("--ctx 16384", "--ctx 8192")
        .edit("contexts: [256, 1K, 2K]", "contexts: [256]")
        .edit("concurrency: [1, 2, 4]", "concurrency: [2, 4]")
        .edit("max_output_tokens: 64", "max_output_tokens: 16")
        .edit(
            "duration: 3s",
            "duration: 2s\n  load: {contexts: [256], rates: [6], duration: 3s}",
        );
    let (records, dir) = super::llamacpp::run_ok(&text);
    let out = dir.path().join("run");
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{r:#?}");
    }
    shares(&records, 2);
    // Each replica's own log: one "processing task" line per request it served.
    let served: Vec<usize> = (0..2)
        .map(|i| {
            std::fs::read_to_string(out.join(format!("engine-{i}.log")))
                .unwrap_or_default()
                .matches("processing task")
                .count()
        })
        .collect();
    let all = (served[0] + served[1]).max(1) as f64;
    eprintln!("served by each replica's own log: {served:?}");
    for n in &served {
        let share = *n as f64 / all;
        assert!((0.35..=0.65).contains(&share), "served {served:?}");
    }
    let decode = records.iter().find(|r| r.cell == "decode/256/c4").unwrap();
    let server = decode.server.as_ref().unwrap();
    assert!(
        server.running_max.is_some_and(|m| m <= 4.0),
        "2 slots on each replica: {server:#?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let listed = &manifest["engine"]["endpoints"];
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(2),
        "the manifest lists both replicas: {manifest:#}"
    );
}
