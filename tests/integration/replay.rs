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

#[test]
fn a_stopped_replay_resumes_with_the_rest_of_the_trace() {
    use benchspec::run::{self, Event, Interrupt, RunOptions};
    use benchspec::spec::{self, Stage};
    let text = std::fs::read_to_string(super::repo_path("specs/replay.yaml")).unwrap();
    let trace = std::fs::read_to_string(super::repo_path("specs/traces/sample.jsonl")).unwrap();
    let dir = super::cli::tempdir::Dir::new();
    std::fs::create_dir_all(dir.path().join("traces")).unwrap();
    std::fs::write(dir.path().join("traces/sample.jsonl"), &trace).unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &text).unwrap();
    let path = path.to_string_lossy().into_owned();
    let loaded = spec::parse(&path, &text, Stage::Run, &|_| None).unwrap();
    let config = benchspec::plan::RunConfig::new(&loaded);
    let out = dir.path().join("run");
    let mut opts = RunOptions {
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    // A stop 10 s into the trace (as Ctrl-C or SIGTERM asks for one).
    let interrupt = Interrupt::new();
    let stop = |e: Event| {
        if let Event::Tick { tick, .. } = e
            && tick.window_s >= 10.0
        {
            interrupt.request();
        }
    };
    let first =
        super::open::on_paused_clock(run::run_in_process(&config, &opts, &interrupt, &stop));
    assert!(first.is_err(), "the stop ends the run");
    let progress = std::fs::read_to_string(out.join("replay-progress.json")).unwrap();
    let v: Value = serde_json::from_str(&progress).unwrap();
    let sent = v["sent"].as_u64().unwrap();
    assert!((20..100).contains(&sent), "{progress}");
    // --resume: the rest of the trace, from the first request not sent.
    opts.resume = true;
    let again = Interrupt::new();
    let summary =
        super::open::on_paused_clock(run::run_in_process(&config, &opts, &again, &|_| {}));
    assert_eq!(summary.unwrap().exit_code(), 0);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let r = records.iter().find(|r| r.cell == "replay/sample").unwrap();
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    let t = r.trace.as_ref().unwrap();
    assert_eq!(t.resumed_after, Some(sent));
    assert_eq!(t.requests, 120 - sent);
    assert_eq!(r.requests_started, 120 - sent);
    assert!(
        r.warnings.iter().any(|w| w.starts_with(&format!(
            "resumed: the first {sent} of the trace's 120 requests"
        ))),
        "{:?}",
        r.warnings
    );
    assert!(
        !out.join("replay-progress.json").exists(),
        "nothing left to resume"
    );
}
