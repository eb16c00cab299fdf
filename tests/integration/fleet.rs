//! Beyond one server: what the hardware costs per token, and load sweeps that stop at the
//! first rate the server cannot keep up with.

use super::cli::Bench;
use serde_json::Value;

/// `hardware.cost_per_hour`: every measured record's `usd_per_mtok` is cost ÷ 3600 ÷ tok/s ×
/// 10⁶ (to 1%), and the reports, the CSV, the capacity line and `compare` say it.
#[test]
fn cost_per_million_output_tokens() {
    let spec = "version: 1
name: cost
hardware: {gpu: H200 NVL, cost_per_hour: 3.50}
engine: {kind: sim, sim: {profile: tiny}}
model: {served_name: tiny}
workload: {max_output_tokens: 64}
matrix: {contexts: [256], concurrency: [1, 4]}
slo: {tpot: {p90: 50ms}}
phases:
  decode: {duration: 2s}
  capacity: {search: concurrency, min: 1, max: 8, precision: 1, duration: 2s}
";
    let (records, dir) = super::open::run_spec_paused(spec);
    let run = dir.path().join("run");
    let mut checked = 0;
    for r in &records {
        match (r.total_tok_s, r.usd_per_mtok) {
            (Some(t), Some(u)) if t > 0.0 => {
                let want = 3.5 / 3600.0 / t * 1e6;
                assert!((u - want).abs() / want < 0.01, "{}: {u} vs {want}", r.cell);
                checked += 1;
            }
            (None, None) => {}
            other => panic!("{}: {other:?}", r.cell),
        }
    }
    assert!(checked >= 4, "{checked} records with a cost");
    let out = dir.path().join("reports");
    let rep = Bench::new(&["report", "--format", "markdown", "--format", "csv", "--out"])
        .arg(&out)
        .arg(&run)
        .run();
    assert_eq!(rep.code, 0, "{}", rep.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Cost") && md.contains("$3.50 per hour"),
        "{md}"
    );
    let line = md
        .lines()
        .find(|l| l.contains("Capacity at 256"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.contains("per million output tokens at capacity"),
        "{line}"
    );
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("usd_per_mtok"),
        "{csv}"
    );
    compare_says_the_cost(&run);
}

/// `compare` of the run with itself: the cost per million output tokens is a metric where
/// lower is better, and the Markdown names it.
fn compare_says_the_cost(run: &std::path::Path) {
    let cmp = Bench::new(&["compare", "--format", "json"])
        .arg(run)
        .arg(run)
        .run();
    assert_eq!(cmp.code, 0, "{}", cmp.stderr);
    let doc: Value = serde_json::from_str(&cmp.stdout).unwrap();
    let row = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cell"] == "decode/256/c4")
        .unwrap();
    let cost = row["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "usd_per_mtok")
        .unwrap_or_else(|| panic!("{row:#}"));
    assert_eq!(cost["higher_is_better"], false, "{cost:#}");
    let md = Bench::new(&["compare"]).arg(run).arg(run).run();
    assert!(
        md.stdout.contains("USD per million output tokens"),
        "{}",
        md.stdout
    );
}

/// A sweep over rates [1, 4, 16, 64, 256] against a server that runs 2 requests at once
/// stops at the first saturated rate: the rates above get `skipped` records with "saturated
/// at r<R>", and the sweep takes under half the time of the whole sweep.
#[test]
fn a_load_sweep_stops_at_saturation() {
    let spec = |stop: bool| {
        format!(
            "version: 1
name: saturation
engine: {{kind: sim, sim: {{profile: tiny, max_num_seqs: 2}}}}
model: {{served_name: tiny}}
workload: {{max_output_tokens: 256}}
matrix: {{contexts: [256], concurrency: [1]}}
phases:
  prefill: {{enabled: false}}
  decode: {{enabled: false}}
  load: {{rates: [1, 4, 16, 64, 256], arrivals: poisson, duration: 3s, stop_when_saturated: {stop}}}
"
        )
    };
    let (stopped, _d1) = super::open::run_spec_paused(&spec(true));
    let (full, _d2) = super::open::run_spec_paused(&spec(false));
    let span =
        |rs: &[benchspec::results::Record]| -> f64 { rs.iter().filter_map(|r| r.measured_s).sum() };
    let saturated: Vec<&str> = stopped
        .iter()
        .filter(|r| r.open.saturated.is_some())
        .map(|r| r.cell.as_str())
        .collect();
    let skipped: Vec<(&str, &[String])> = stopped
        .iter()
        .filter(|r| r.status == benchspec::results::Status::Skipped && r.cell.starts_with("load/"))
        .map(|r| (r.cell.as_str(), r.reasons.as_slice()))
        .collect();
    eprintln!(
        "saturation: saturated {saturated:?}, skipped {skipped:?}; {:.1} s of load against {:.1} s for the whole sweep",
        span(&stopped),
        span(&full)
    );
    assert_eq!(saturated.len(), 1, "{saturated:?}");
    assert!(skipped.len() >= 2, "{skipped:?}");
    let label = saturated[0].rsplit('/').next().unwrap();
    for (cell, reasons) in &skipped {
        assert_eq!(reasons, &[format!("saturated at {label}")], "{cell}");
    }
    assert!(skipped.iter().any(|(c, _)| *c == "load/256/r256"));
    let load = stopped
        .iter()
        .filter(|r| r.cell.starts_with("load/"))
        .count();
    assert_eq!(load, 5, "every rate has a record");
    assert!(span(&stopped) < 0.5 * span(&full));
    // Rates below the saturated one are not.
    assert!(
        full.iter()
            .any(|r| r.cell == "load/256/r1" && r.open.saturated.is_none())
    );
}

/// A load beyond one client machine: the same rate split over 3 client processes
/// (`--shard K/3 --split-load`, each sending R/3 with arrivals of its own) against one
/// server, merged, matches the same rate sent by one client: as many requests, the offered
/// rate, and TTFT, TPOT and E2E medians within a few percent (each merged percentile comes
/// from all the requests).
#[test]
fn a_rate_split_over_three_clients_merges_into_one_cell() {
    let _cpu = super::cpu();
    let port = super::free_port();
    let _sim = Sim::serving(port);
    let spec = format!(
        "version: 1
name: split
engine: {{kind: vllm, base_url: 'http://127.0.0.1:{port}'}}
model: {{served_name: m}}
workload: {{max_output_tokens: 64}}
matrix: {{contexts: [2K], concurrency: [1]}}
phases:
  prefill: {{enabled: false}}
  decode: {{enabled: false}}
  load: {{contexts: [2K], rates: [12], duration: 5s}}
"
    );
    let dir = super::cli::tempdir::Dir::new();
    let path = dir.path().join("split.yaml");
    std::fs::write(&path, &spec).unwrap();
    let run = |out: &str, extra: &[&str]| {
        std::process::Command::new(super::bin())
            .arg("run")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join(out))
            .args(["-q"])
            .args(extra)
            .output()
            .unwrap()
    };
    let one = run("one", &[]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    // The three shards at once, as three client machines would run, their load at one
    // instant (else merge marks the cell invalid: windows overlapping under 90%; `+3s`
    // counted by each process from its own start was seen 0.3 s apart per process here).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    run_three_shards(
        &path,
        dir.path(),
        &benchspec::results::rfc3339_ms(now + 4.0),
    );
    let merged = dir.path().join("merged");
    let m = Bench::new(&["merge", "--out"])
        .arg(&merged)
        .arg(dir.path().join("s1"))
        .arg(dir.path().join("s2"))
        .arg(dir.path().join("s3"))
        .run();
    assert_eq!(m.code, 0, "{}", m.stderr);
    merged_is_one_clients_load(dir.path());
}

/// Shards 1/3, 2/3 and 3/3 of the spec at `path` at once (`--split-load`, starting `at`),
/// each into `s<K>` in `dir`, as three client machines would run them.
fn run_three_shards(path: &std::path::Path, dir: &std::path::Path, at: &str) {
    let shards: Vec<std::thread::JoinHandle<std::process::Output>> = (1..=3)
        .map(|k| {
            let (bin, path, out) = (super::bin(), path.to_owned(), dir.join(format!("s{k}")));
            let at = at.to_owned();
            std::thread::spawn(move || {
                std::process::Command::new(bin)
                    .arg("run")
                    .arg(&path)
                    .arg("--out")
                    .arg(out)
                    .args(["-q", "--shard", &format!("{k}/3"), "--split-load"])
                    .args(["--start-at", &at])
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for s in shards {
        let o = s.join().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

/// The load cell merged from the three shards in `dir` against the one client's: a third
/// of the rate each, the whole rate merged, as many requests and medians within 5%.
fn merged_is_one_clients_load(dir: &std::path::Path) {
    let load = |d: &str| {
        benchspec::rundir::read_records(&dir.join(d).join("results.jsonl"))
            .unwrap()
            .into_iter()
            .find(|r| r.cell == "load/2K/r12")
            .unwrap()
    };
    let (a, b) = (load("one"), load("merged"));
    let part = load("s2");
    assert_eq!(
        part.open.rate_offered.map(|r| r.0),
        Some(4.0),
        "each shard a third"
    );
    assert_eq!(b.open.rate_offered.map(|r| r.0), Some(12.0));
    assert_eq!(b.status, benchspec::results::Status::Valid, "{b:#?}");
    let n = |r: &benchspec::results::Record| r.requests_started as f64;
    assert!(
        (n(&b) - n(&a)).abs() / n(&a) < 0.1,
        "{} vs {}",
        n(&b),
        n(&a)
    );
    let p50 = |r: &benchspec::results::Record| {
        [
            r.ttft_ms.map(|t| t.p50),
            r.open.tpot_ms.map(|t| t.p50),
            r.open.e2e_ms.map(|t| t.p50),
        ]
    };
    for (name, (x, y)) in ["ttft", "tpot", "e2e"]
        .iter()
        .zip(p50(&a).into_iter().zip(p50(&b)))
    {
        let (x, y) = (x.unwrap(), y.unwrap());
        let off = (y - x) / x;
        eprintln!(
            "{name} p50: one client {x} ms, three merged {y} ms ({:+.1}%)",
            off * 100.0
        );
        assert!(off.abs() < 0.05, "{name}: {x} vs {y}");
    }
}

/// A server the test started, killed when dropped.
struct Sim(std::process::Child);

impl Sim {
    /// `benchspec sim` serving `m` on `port`, once it accepts connections (10 s at most).
    fn serving(port: u16) -> Sim {
        let sim = Sim(std::process::Command::new(super::bin())
            .args([
                "sim",
                "--port",
                &port.to_string(),
                "--served-name",
                "m",
                "-q",
            ])
            .spawn()
            .unwrap());
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        sim
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
