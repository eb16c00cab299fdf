//! Trace replay (`phases.replay`): a Mooncake trace's requests at their own times, each
//! prompt exactly its `input_length`, equal `hash_ids` found in the server's prefix cache.

use benchspec::cli::exit::Exits;
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
    each_request_is_exact_and_reuses_its_prefix(&run, &trace);
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

/// Request by request of the replay in `run`: the exact length, and the server's cached
/// tokens against what the `trace`'s hash_ids share with the requests sent before (in
/// 16-token blocks).
fn each_request_is_exact_and_reuses_its_prefix(run: &std::path::Path, trace: &str) {
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
    assert_eq!(summary.unwrap().exit().code(), 0);
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

/// A replay-only spec on the simulator naming `traces/t.jsonl` (`engine` as given).
fn replay_spec(engine: &str) -> String {
    format!(
        "version: 1\nname: replay edges\n{engine}\nworkload: {{max_output_tokens: 4096}}\nmatrix: {{contexts: [4K], concurrency: [1]}}\nphases:\n  prefill: {{enabled: false}}\n  decode: {{enabled: false}}\n  replay: {{trace: traces/t.jsonl}}\n"
    )
}

/// A trace line.
fn line(ms: u32, input: u64, output: u64, ids: &str) -> String {
    format!(
        "{{\"timestamp\": {ms}, \"input_length\": {input}, \"output_length\": {output}, \"hash_ids\": [{ids}]}}\n"
    )
}

/// Worked by hand: 5 requests due at 0, 0.3, 0.6, 0.9 and 1.2 s, sent on time (a paused
/// clock), each done well within its 0.3 s gap (the simulator's API ~28 ms, a prefill of at
/// most 500 tokens, at most 8 decode steps). Offered: 4 gaps / 1.2 s = 3.333 req/s; sent:
/// the same 4 / 1.2 = 3.333; achieved: 5 / max(last end ≈ 1.25 s, 5 × 0.3 s) = 3.333. It
/// read offered 5 / 1.2 = 4.167, sent 3.333, achieved 5 / 1.25 ≈ 4.0 (above the rate sent).
#[test]
fn an_on_time_replay_offers_sends_and_achieves_one_rate() {
    let trace: String = (0..5u32)
        .map(|i| line(i * 300, 100 * u64::from(i + 1), 4 + u64::from(i), ""))
        .collect();
    let spec = replay_spec("engine: {kind: sim}\nmodel: {served_name: gemma}");
    let (records, dir) = super::open::run_spec_with_files(&spec, &[("traces/t.jsonl", &trace)]);
    let r = records.iter().find(|r| r.cell == "replay/t").unwrap();
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    let o = &r.open;
    let (offered, sent, achieved) = (
        o.rate_offered.unwrap().0,
        o.rate_sent.unwrap(),
        o.rate_achieved.unwrap(),
    );
    assert!((offered - 4.0 / 1.2).abs() < 1e-9, "{offered}");
    assert!(
        (sent / offered - 1.0).abs() <= 0.01,
        "sent {sent} of {offered}"
    );
    assert!(
        achieved <= sent * 1.01,
        "achieved {achieved} above sent {sent}"
    );
    assert_eq!(achieved, 3.333, "5 requests / 1.5 s");
    assert_eq!(o.arrivals.as_deref(), Some("trace"));
    assert_eq!(o.input_tokens_mean, Some(300.0), "(100 + … + 500) / 5");
    let t = r.trace.as_ref().unwrap();
    assert_eq!(
        (t.input_length, t.output_length),
        (Some([100, 500]), Some([4, 8]))
    );
    // The report says what the trace decided, not a context, arrivals or a max output.
    let run = dir.path().join("run");
    let done = super::cli::Bench::new(&["report", run.to_str().unwrap()]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains(
            "- **Trace:** traces/t.jsonl ×1 · 5 requests · input 100–500 tokens · output 4–8 tokens"
        ),
        "{md}"
    );
    assert!(!md.contains("Max output"), "{md}");
    assert!(md.contains("| Trace replay | 100–500 | trace |"), "{md}");
}

/// A trace whose lines the server would refuse or whose blocks do not fit: `validate`
/// refuses it at the trace's FILE:LINE (exit 2); the shipped sample passes.
#[test]
fn validate_refuses_trace_lines_that_cannot_be_replayed_as_written() {
    let dir = super::cli::tempdir::Dir::new();
    std::fs::create_dir_all(dir.path().join("traces")).unwrap();
    let trace = [
        line(0, 832, 8, "106, 107"),
        line(10, 200_000, 8, ""),
        line(20, 1000, 8, "1, 2, 3, 4"),
        line(30, 1500, 8, "106, 107, 108"),
    ]
    .concat();
    std::fs::write(dir.path().join("traces/t.jsonl"), trace).unwrap();
    let spec = dir.path().join("s.yaml");
    let engine = "engine: {kind: vllm, base_url: 'http://127.0.0.1:9'}\nmodel: {served_name: m, max_model_len: 131072}";
    std::fs::write(&spec, replay_spec(engine)).unwrap();
    let done = super::cli::Bench::new(&["validate"]).arg(&spec).run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    for want in [
        "traces/t.jsonl:2: input_length 200000 + output_length 8 tokens > max_model_len 131072",
        "traces/t.jsonl:3: 4 hash_ids of 512 tokens cover 2048 tokens, more than the 1000-token prompt holds (at most 2 blocks)",
        "traces/t.jsonl:4: hash_id 107 is a block of 512 tokens here but of 320 at line 1",
    ] {
        assert!(done.stderr.contains(want), "{want}\n{}", done.stderr);
    }
    let shipped = super::cli::Bench::new(&["validate", "specs/replay.yaml"]).run();
    assert_eq!(shipped.code, 0, "{}", shipped.stderr);
}

/// Without `model.max_model_len` only the server knows it (the tiny profile: 8,192): the
/// replay cell fails before sending anything, naming the line, and nothing is averaged.
#[test]
fn a_trace_line_longer_than_the_servers_max_model_len_is_refused_before_sending() {
    let port = super::free_port();
    let engine = format!(
        "engine:\n  kind: vllm\n  base_url: http://127.0.0.1:{port}\n  launch:\n    command: [{}, sim, --port, '{port}', --profile, tiny, --served-name, m]\n    ready_timeout: 20s\n    stop_timeout: 2s\nmodel: {{served_name: m}}",
        super::bin()
    );
    let dir = super::cli::tempdir::Dir::new();
    std::fs::create_dir_all(dir.path().join("traces")).unwrap();
    let trace = [line(0, 100, 8, ""), line(50, 9000, 8, "")].concat();
    std::fs::write(dir.path().join("traces/t.jsonl"), trace).unwrap();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, replay_spec(&engine)).unwrap();
    let out = dir.path().join("run");
    let done = super::cli::Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let r = records.iter().find(|r| r.cell == "replay/t").unwrap();
    assert_eq!(r.status, Status::Failed, "{}", done.stderr);
    assert!(
        r.reasons.iter().any(|w| w.contains(
            "traces/t.jsonl:2: input_length 9000 + output_length 8 tokens > max_model_len 8192"
        )),
        "{:?}",
        r.reasons
    );
    assert_eq!(r.requests_started, 0, "nothing was sent");
    assert_eq!(r.open.input_tokens_mean, None);
}

/// Worked by hand: 3 requests due at 0, 1.0 and 2.0 s, each ending a few ms after its send.
/// The trace spans 2.0 s, but the last completion lands just after 2.0 s: every completion
/// has its second in `achieved_per_s` (it dropped the last one), and both series are as long.
#[test]
fn every_completion_is_in_the_per_second_series() {
    let trace: String = (0..3u32).map(|i| line(i * 1000, 200, 4, "")).collect();
    let spec = replay_spec("engine: {kind: sim}\nmodel: {served_name: gemma}");
    let (records, _dir) = super::open::run_spec_with_files(&spec, &[("traces/t.jsonl", &trace)]);
    let r = records.iter().find(|r| r.cell == "replay/t").unwrap();
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    let t = r.trace.as_ref().unwrap();
    assert_eq!(
        t.achieved_per_s.iter().sum::<f64>(),
        r.completed as f64,
        "{t:?}"
    );
    assert_eq!(t.offered_per_s.iter().sum::<f64>(), 3.0, "{t:?}");
    assert_eq!(t.achieved_per_s, vec![1.0, 1.0, 1.0], "{t:?}");
    assert_eq!(t.offered_per_s.len(), t.achieved_per_s.len());
}

/// One request is no rate: offered, sent and achieved say nothing rather than 1 ÷ its time.
#[test]
fn a_one_request_trace_has_no_rate() {
    let trace = line(0, 200, 4, "");
    let spec = replay_spec("engine: {kind: sim}\nmodel: {served_name: gemma}");
    let (records, _dir) = super::open::run_spec_with_files(&spec, &[("traces/t.jsonl", &trace)]);
    let r = records.iter().find(|r| r.cell == "replay/t").unwrap();
    assert_eq!(r.completed, 1, "{:?}", r.reasons);
    assert_eq!(r.open.rate_sent, None);
    assert_eq!(r.open.rate_achieved, None, "{:?}", r.open);
}
