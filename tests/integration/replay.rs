//! Trace replay (`phases.replay`): a Mooncake trace's requests at their own times, each
//! prompt exactly its `input_length`, equal `hash_ids` found in the server's prefix cache.

use benchspec::results::Status;
use serde_json::Value;

#[test]
fn the_shipped_trace_is_replayed_on_time_with_exact_lengths_and_its_prefix_reuse() {
    let text = std::fs::read_to_string(super::repo_path("specs/replay.yaml")).unwrap();
    let trace = std::fs::read_to_string(super::repo_path("specs/traces/sample.jsonl")).unwrap();
    // The spec names its trace relative to itself: the paused run's spec sits in a
    // temporary folder, so the trace goes beside it.
    let (records, dir) =
        super::open::run_spec_with_files(&text, &[("traces/sample.jsonl", &trace)]);
    let r = records.iter().find(|r| r.cell == "replay/sample").unwrap();
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    assert_eq!(r.requests_started, 120);
    let t = r.trace.as_ref().unwrap();
    assert_eq!(
        (t.file.as_str(), t.requests, t.speedup),
        ("traces/sample.jsonl", 120, 1.0)
    );
    assert_eq!(t.offered_per_s.iter().sum::<f64>(), 120.0);
    assert_eq!(t.achieved_per_s.iter().sum::<f64>(), r.completed as f64);
    let late = r.open.send_lateness_ms.unwrap();
    assert!(late.p99 <= 1.0, "send lateness {late:?}");
    // The run keeps the trace it replayed.
    let run = dir.path().join("run");
    assert_eq!(
        std::fs::read_to_string(run.join("trace.jsonl")).unwrap(),
        trace
    );
    // Request by request: the exact length, and the server's cached tokens against what
    // the trace's hash_ids share with the requests sent before (in 16-token blocks).
    let entries: Vec<Value> = trace
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut lines: Vec<Value> = std::fs::read_to_string(run.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by(|a, b| {
        a["due_s"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["due_s"].as_f64().unwrap())
    });
    assert_eq!(lines.len(), 120);
    let mut matched = 0;
    for (i, (line, e)) in lines.iter().zip(&entries).enumerate() {
        assert_eq!(line["usage_prompt_tokens"], line["prompt_tokens"], "{line}");
        let len = e["input_length"].as_u64().unwrap();
        let ids = |v: &Value| -> Vec<u64> {
            v["hash_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        };
        let mine = ids(e);
        let shared = entries[..i]
            .iter()
            .map(|o| {
                let theirs = ids(o);
                let k = mine.iter().zip(&theirs).take_while(|(a, b)| a == b).count() as u64;
                (k * 512).min(o["input_length"].as_u64().unwrap()).min(len)
            })
            .max()
            .unwrap_or(0);
        let want = if shared >= len {
            (len - 1) / 16 * 16
        } else {
            shared / 16 * 16
        };
        if line["usage_cached_tokens"].as_u64() == Some(want) {
            matched += 1;
        }
    }
    // Requests of the same millisecond may reach the engine in either order.
    assert!(
        matched >= 116,
        "{matched} of 120 requests found exactly their shared blocks"
    );
    // The reports: the replay's row and its offered and achieved requests per second.
    let done = super::cli::Bench::new(&["report", run.to_str().unwrap()]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("## Trace replay"), "{md}");
    assert!(md.contains("| `traces/sample.jsonl` ×1.0 | 120 |"), "{md}");
    assert!(
        md.contains("`replay/sample` second by second — offered: "),
        "{md}"
    );
}
