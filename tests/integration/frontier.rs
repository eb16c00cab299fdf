//! The Pareto frontier (docs/reports.md): a simulator run of two engine variants, one
//! scheduling a single request at a time (`max_num_seqs: 1`), the other four, with a load
//! cell; the report's frontier points are checked against a frontier computed here from
//! `results.jsonl` by brute force, and `compare --variants` against the same records.

use super::cli::Bench;
use benchspec::results::{Record, Status};
use serde_json::Value;
use std::path::Path;

const SPEC: &str = "version: 1
name: frontier
hardware: {gpu_count: 2, cost_per_hour: 3.6}
engine:
  kind: sim
  sim: {profile: tiny}
  variants:
    - {name: one, sim: {max_num_seqs: 1}}
    - {name: four, sim: {max_num_seqs: 4}}
model: {served_name: tiny}
workload: {max_output_tokens: 64}
matrix: {contexts: [256], concurrency: [1, 2, 4]}
phases:
  prefill: {enabled: false}
  decode: {duration: 2s}
  load: {rates: [4], duration: 2s}
";

/// (cell, tok/s per GPU, per-user tok/s) of each valid decode and load cell: the points.
fn points(records: &[Record]) -> Vec<(String, f64, f64)> {
    records
        .iter()
        .filter(|r| r.status == Status::Valid && !r.cell.contains("capacity"))
        .filter(|r| matches!(r.phase.as_str(), "decode" | "load"))
        .filter_map(|r| Some((r.cell.clone(), r.total_tok_s? / 2.0, r.per_request_tok_s?)))
        .collect()
}

/// The cells of `pts` no other point is at least as good as in both and better in one.
fn brute_frontier(pts: &[(String, f64, f64)]) -> Vec<String> {
    let mut on: Vec<&(String, f64, f64)> = pts
        .iter()
        .filter(|p| {
            !pts.iter()
                .any(|q| q.1 >= p.1 && q.2 >= p.2 && (q.1 > p.1 || q.2 > p.2))
        })
        .collect();
    on.sort_by(|a, b| a.2.total_cmp(&b.2));
    on.into_iter().map(|p| p.0.clone()).collect()
}

#[test]
fn the_reports_frontier_is_the_records_frontier() {
    let (records, dir) = super::open::run_spec_paused(SPEC);
    let run = dir.path().join("run");
    let pts = points(&records);
    // 3 decode and 1 load cell per variant: each a point or left out with why.
    let cells = records
        .iter()
        .filter(|r| matches!(r.phase.as_str(), "decode" | "load"));
    assert_eq!(cells.count(), 8, "{records:#?}");
    // `one` runs a single request at once: its c2 and c4 cells are invalid (the engine ran
    // fewer than asked), so they are left out, not points.
    assert_eq!(pts.len(), 6, "{pts:?}");
    // The simulator's own model: one request at a time cannot make more than one request's
    // rate, so `four` at 4 at once out-produces every cell of `one`.
    let rate = |id: &str| pts.iter().find(|p| p.0 == id).map(|p| p.1).unwrap();
    let best_one = pts
        .iter()
        .filter(|p| p.0.starts_with("one/"))
        .map(|p| p.1)
        .fold(0.0, f64::max);
    assert!(rate("four/decode/256/c4") > 1.5 * best_one, "{pts:?}");
    let want = brute_frontier(&pts);
    assert!(want.contains(&"four/decode/256/c4".to_string()), "{want:?}");
    let out = dir.path().join("reports");
    let rep = Bench::new(&["report", "--format", "markdown", "--format", "json"])
        .arg("--format")
        .arg("csv")
        .arg("--format")
        .arg("html")
        .arg("--out")
        .arg(&out)
        .arg(&run)
        .run();
    assert_eq!(rep.code, 0, "{}", rep.stderr);
    json_and_csv_say_the_same(&out, &want, &records);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let rows: Vec<String> = md
        .split("## Frontier")
        .nth(1)
        .unwrap_or_else(|| panic!("{md}"))
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('`').nth(1).unwrap().to_string())
        .collect();
    // The tok/s-per-GPU table, then the cost table: $/Mtok falls as total tok/s rises, so
    // with one price for the whole run its frontier is the same cells.
    assert_eq!(rows, [want.clone(), want.clone()].concat(), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let on_chart = html.matches("on the frontier</title>").count();
    assert_eq!(
        on_chart,
        2 * want.len(),
        "one dot per frontier point per chart"
    );
    compare_of_the_variants(&run, &records);
}

/// `results.json`'s frontier and `results.csv`'s `on_frontier` and `tok_s_per_gpu` columns
/// name the same cells as `want`.
fn json_and_csv_say_the_same(out: &Path, want: &[String], records: &[Record]) {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let f = &json["frontier"][0];
    assert_eq!(f["gpu_count"], 2);
    let left = f["left_out"].as_array().unwrap();
    assert_eq!(f["cells"].as_u64().unwrap() as usize + left.len(), 8, "{f}");
    let left: Vec<&str> = left.iter().map(|l| l["cell"].as_str().unwrap()).collect();
    assert_eq!(left, ["one/decode/256/c2", "one/decode/256/c4"], "{f}");
    let why = f["left_out"][0]["reason"].as_str().unwrap();
    assert!(why.starts_with("invalid: "), "{why}");
    let got: Vec<&str> = f["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cell"].as_str().unwrap())
        .collect();
    assert_eq!(got, want);
    for p in f["points"].as_array().unwrap() {
        let r = records.iter().find(|r| r.cell == p["cell"]).unwrap();
        let per_gpu = r.total_tok_s.unwrap() / 2.0;
        assert!(
            (p["tok_s_per_gpu"].as_f64().unwrap() - per_gpu).abs() < 0.06,
            "{p}"
        );
        // $/Mtok by hand: $3.60 an hour over total tok/s.
        let usd = 3.6 / 3600.0 / r.total_tok_s.unwrap() * 1e6;
        assert!(
            (p["usd_per_mtok"].as_f64().unwrap() - usd).abs() < 1e-3,
            "{p}"
        );
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (cell, on) = (col("cell"), col("on_frontier"));
    let marked: Vec<String> = reader
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[on] == "true")
        .map(|r| r[cell].to_string())
        .collect();
    let mut sorted = want.to_vec();
    sorted.sort();
    let mut marked = marked;
    marked.sort();
    assert_eq!(marked, sorted, "{csv}");
}

/// `compare --variants one four`: which of `one`'s frontier points `four`'s frontier
/// dominates, worked out here from the records; and it says so.
fn compare_of_the_variants(run: &Path, records: &[Record]) {
    let pts = points(records);
    let front = |v: &str| -> Vec<(String, f64, f64)> {
        let mine: Vec<(String, f64, f64)> =
            pts.iter().filter(|p| p.0.starts_with(v)).cloned().collect();
        let on = brute_frontier(&mine);
        mine.into_iter().filter(|p| on.contains(&p.0)).collect()
    };
    let (one, four) = (front("one/"), front("four/"));
    let beaten = |a: &[(String, f64, f64)], by: &[(String, f64, f64)]| {
        a.iter()
            .filter(|p| {
                // Beyond compare's default 5% threshold: worse on neither axis by more,
                // better on one by more.
                by.iter().any(|q| {
                    let (gx, gy) = ((q.1 - p.1) / p.1, (q.2 - p.2) / p.2);
                    gx >= -0.05 && gy >= -0.05 && (gx > 0.05 || gy > 0.05)
                })
            })
            .count()
    };
    let (ahead, behind) = (beaten(&one, &four), beaten(&four, &one));
    // `one`'s c1 and `four`'s c1 are the same engine at one request (equal, or apart by
    // the run's jitter), and `four`'s c2 and c4 trade per-user speed for per-GPU rate: the
    // verdict is whatever the records say.
    let verdict = match (ahead > 0, behind > 0) {
        (true, false) => "ahead",
        (false, true) => "behind",
        (true, true) => "mixed",
        (false, false) => "even",
    };
    let cmp = Bench::new(&["compare", "--format", "json", "--variants", "one", "four"])
        .arg(run)
        .run();
    let c: Value =
        serde_json::from_str(&cmp.stdout).unwrap_or_else(|e| panic!("{e}: {}", cmp.stderr));
    let ch = &c["frontier"]["changes"][0];
    assert_eq!(ch["verdict"], verdict, "{ch}");
    assert_eq!(
        ch["base_dominated"].as_array().unwrap().len(),
        ahead,
        "{ch}"
    );
    assert_eq!(
        ch["new_dominated"].as_array().unwrap().len(),
        behind,
        "{ch}"
    );
    let md = Bench::new(&["compare", "--variants", "one", "four"])
        .arg(run)
        .run();
    let line = format!("- 256, tok/s per GPU: **{verdict}**");
    assert!(md.stdout.contains(&line), "{}", md.stdout);
}
