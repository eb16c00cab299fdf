//! What a report must not hide about a cell (docs/reports.md): a load cell that saturated the
//! server, a capacity search whose `max` still met the SLO (or whose `min` did not), and a
//! server-side percentile that is only an estimate from histogram buckets. Each is rendered
//! from a copy of the seed run with records added by hand, so every figure asserted here is
//! the one written into the record.

use super::cli::{Bench, tempdir::Dir};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A copy of the seed run in `dir` with `extra` records appended, and the decode record of
/// `decode/8K/c1` given `server`.
fn run_with(dir: &Path, extra: &[Value], server: Option<Value>) -> PathBuf {
    let from = super::root().join("tests/fixtures/seed-run");
    let to = dir.join("run");
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    let text = std::fs::read_to_string(to.join("results.jsonl")).unwrap();
    let mut lines: Vec<String> = Vec::new();
    for l in text.lines() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        if v["cell"] == "decode/8K/c1"
            && let Some(s) = &server
        {
            v["server"] = s.clone();
        }
        lines.push(v.to_string());
    }
    lines.extend(extra.iter().map(Value::to_string));
    std::fs::write(to.join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    to
}

/// A record of `cell` (phase `phase`) with `fields` set over a measured base.
fn record(cell: &str, phase: &str, context: u64, fields: Value) -> Value {
    let mut v = json!({
        "schema": "benchspec.result.v1", "cell": cell, "phase": phase, "context": context,
        "concurrency": 0, "status": "valid", "reasons": [],
        "started_at": "2026-12-02T10:00:00Z", "prompt_tokens": context,
        "requests_started": 20, "completed": 20, "errors": 0, "error_kinds": {}, "labels": {},
        "measured_s": 10.0, "output_tokens": 5120, "total_tok_s": 512.0,
        "ttft_ms": {"mean": 90.0, "min": 50.0, "p50": 80.0, "p90": 150.0, "p99": 200.0, "max": 210.0},
    });
    for (k, x) in fields.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn render(run: &Path, out: &Path) -> (String, String, String) {
    let done = Bench::new(&[
        "report",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    (read("report.md"), read("report.html"), read("results.csv"))
}

const WHY: &str = "1.94 req/s completed of 4.30 req/s sent, latency 270 ms → 1030 ms";

#[test]
fn a_saturated_load_cell_says_so_in_every_format() {
    let dir = Dir::new();
    let load = |cell: &str, saturated: Option<&str>| {
        let mut f = json!({"rate_offered": 4.0, "rate_sent": 4.3, "rate_achieved": 1.94,
                           "arrivals": "poisson"});
        if let Some(s) = saturated {
            f["saturated"] = json!(s);
        }
        record(cell, "load", 1024, f)
    };
    let extra = [load("load/1K/r1", None), load("load/1K/r4", Some(WHY))];
    let run = run_with(dir.path(), &extra, None);
    let out = Dir::new();
    let (md, html, csv) = render(&run, out.path());
    // Markdown: the load table's status and the reason under it; the plain rate stays Valid.
    assert!(md.contains("| Valid · saturated |"), "{md}");
    assert!(
        md.contains(&format!("- `load/1K/r4` saturated the server: {WHY}")),
        "{md}"
    );
    assert!(!md.contains("`load/1K/r1` saturated"), "{md}");
    // HTML: the same label and reason.
    assert!(html.contains(">Valid · saturated</td>"), "{html}");
    assert!(
        html.contains(
            // HTML-escaped, as minijinja writes `/`.
            "<li><code>load&#x2f;1K&#x2f;r4</code> saturated the server: 1.94 req&#x2f;s completed"
        ),
        "{html}"
    );
    // CSV: a `saturated` column holding the reason, empty for the cell that did not.
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let head = rows.headers().unwrap().clone();
    let col = head
        .iter()
        .position(|h| h == "saturated")
        .expect("a saturated column");
    let cell_of = |id: &str| {
        csv::Reader::from_reader(csv.as_bytes())
            .records()
            .map(Result::unwrap)
            .find(|r| &r[0] == id)
            .unwrap()[col]
            .to_string()
    };
    assert_eq!(cell_of("load/1K/r4"), WHY);
    assert_eq!(cell_of("load/1K/r1"), "");
}

#[test]
fn a_capacity_at_the_searchs_max_is_a_lower_bound_and_below_min_is_said() {
    let dir = Dir::new();
    let probe = |cell: &str, context: u64| {
        record(
            cell,
            "decode",
            context,
            json!({"concurrency": 4, "slo_met": true}),
        )
    };
    let summary = |cell: &str, context: u64, capacity: Value, bound: &str| {
        record(
            cell,
            "capacity",
            context,
            json!({"search": "concurrency", "capacity": capacity, "capacity_bound": bound}),
        )
    };
    let mut failed = probe("capacity/16K/c1", 16384);
    failed["slo_met"] = json!(false);
    let extra = [
        probe("capacity/8K/c1", 8192),
        probe("capacity/8K/c4", 8192),
        summary("capacity/8K", 8192, json!(4.0), "at_least"),
        failed,
        summary("capacity/16K", 16384, Value::Null, "below_min"),
    ];
    let run = run_with(dir.path(), &extra, None);
    let out = Dir::new();
    let (md, html, csv) = render(&run, out.path());
    assert!(
        md.contains("Capacity at 8K: at least 4 requests at once"),
        "{md}"
    );
    assert!(md.contains("still meets the SLO"), "{md}");
    assert!(
        md.contains("Capacity at 16K: below 1 request at once"),
        "{md}"
    );
    assert!(html.contains("Capacity at 8K: at least 4 requests at once"));
    assert!(html.contains("Capacity at 16K: below 1 request at once"));
    assert!(
        csv.lines()
            .any(|l| l.starts_with("capacity/8K,") && l.contains(",at_least,"))
    );
}

#[test]
fn the_servers_percentile_is_an_estimate_with_its_bucket() {
    let dir = Dir::new();
    // vLLM's TTFT buckets 1 s and 2.5 s: a median on the bucket's bound reads 2,500 ms.
    let server = json!({"running_mean": 1.0, "running_max": 1.0, "waiting_max": 0.0,
        "kv_usage_max": 0.1, "prefix_hit_rate": null, "preemptions": 0.0,
        "ttft_ms_p50": 2500.0, "ttft_ms_p50_bucket": {"low_ms": 1000.0, "high_ms": 2500.0},
        "itl_ms_p50": 3.7, "itl_ms_p50_bucket": {"low_ms": 0.0, "high_ms": 10.0},
        "source": "vllm"});
    let run = run_with(dir.path(), &[], Some(server));
    let out = Dir::new();
    let (md, html, _) = render(&run, out.path());
    assert!(
        md.contains("is an estimate from its histogram's buckets"),
        "{md}"
    );
    assert!(
        md.contains("| 71 ms / ≈2,500 ms (in 1,000–2,500 ms) | 3.8 ms / ≈3.7 ms (in 0–10 ms) |"),
        "{md}"
    );
    assert!(html.contains("(in 1,000–2,500 ms)"), "{html}");
}
