//! Reliability (docs/run-directory.md, docs/results.md): faults become data — counted by kind,
//! the verdict following `validity` — and a run killed mid-cell goes on with `--resume`, every
//! cell recorded once.

use super::Edit;
use super::bin;
use super::cli::{Bench, tempdir::Dir};
use benchspec::cli::exit::Exits;
use benchspec::results::{Record, Status};
use std::path::Path;

const SPEC: &str = "version: 1\nname: reliability\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 64}\nmatrix: {contexts: [256, 1K], concurrency: [1, 2, 4]}\nphases: {decode: {duration: 1s}}\n";

fn records(out: &Path) -> Vec<Record> {
    benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap()
}

#[test]
fn a_run_killed_mid_cell_then_resumed_records_every_cell_once() {
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    // 2 s windows: a test thread starved for seconds on a loaded machine still kills the
    // runner before its last cell ends (1 s windows once let all eight end first).
    std::fs::write(&spec, SPEC.edit("duration: 1s", "duration: 2s")).unwrap();
    let out = dir.path().join("run");
    let results = out.join("results.jsonl");
    kill_inside_the_fourth_cell(&spec, &out, &results);
    let before = records(&out);
    assert!((3..8).contains(&before.len()), "{} records", before.len());
    the_kill_landed_inside_a_cell(&out, &before);
    cut_the_last_line_short(&results);

    let refused = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    assert_eq!(refused.code, 2, "without --resume: {}", refused.stderr);
    assert!(
        refused.stderr.contains("add `--resume` to go on"),
        "{}",
        refused.stderr
    );

    let done = Bench::new(&["run", "--out", out.to_str().unwrap(), "--resume"])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("the last line of results.jsonl was cut short"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains(&format!(
            "resuming: {} cell(s) recorded already, {} to run",
            before.len(),
            8 - before.len()
        )),
        "{}",
        done.stderr
    );
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.ends_with('\n'));
    every_cell_once_after_resume(&out, &text, &before);

    // Nothing left to do: a second resume runs nothing and changes nothing.
    let again = Bench::new(&["run", "--out", out.to_str().unwrap(), "--resume"])
        .arg(&spec)
        .run();
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&results).unwrap(), text);
}

/// Run `spec` into `out`; once `results` holds three records, kill the runner (SIGKILL)
/// inside the fourth cell (a 2 s window).
fn kill_inside_the_fourth_cell(
    spec: &std::path::Path,
    out: &std::path::Path,
    results: &std::path::Path,
) {
    let mut child = std::process::Command::new(bin())
        .args([
            "run",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .spawn()
        .unwrap();
    // Wait for three records, then kill the runner inside the fourth cell (a 2 s window).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::fs::read_to_string(results).map_or(0, |t| t.lines().count()) < 3 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

/// The kill landed inside a cell: the run in `out` never ended, and the cell after the last
/// record (in plan order) was under way, not yet recorded.
fn the_kill_landed_inside_a_cell(out: &std::path::Path, before: &[Record]) {
    let dir = benchspec::rundir::RunDir::open(out).unwrap();
    assert_eq!(
        dir.manifest().unwrap().ended_at,
        None,
        "the run had not ended"
    );
    let plan = dir.plan().unwrap();
    let next = &plan.cells[before.len()];
    assert!(next.runs(), "{} is measured", next.id);
    assert!(
        before.iter().all(|r| r.cell != next.id),
        "{} was being measured when the runner was killed",
        next.id
    );
}

/// A runner killed while writing leaves half a line: append one to `results`.
fn cut_the_last_line_short(results: &std::path::Path) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(results)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        br#"{"schema":"benchspec.result.v1","cell":"decode/1K"#,
    )
    .unwrap();
    drop(f);
}

/// The resumed run in `out` (its results.jsonl `text`): the records `before` untouched, every
/// cell exactly once and valid, the manifest saying it resumed and ended, the report finished.
fn every_cell_once_after_resume(out: &std::path::Path, text: &str, before: &[Record]) {
    let after: Vec<Record> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut cells: Vec<&str> = after.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(
        &after[..before.len()],
        before,
        "the earlier records are untouched"
    );
    cells.sort_unstable();
    let mut want = vec![
        "prefill/256",
        "decode/256/c1",
        "decode/256/c2",
        "decode/256/c4",
        "prefill/1K",
        "decode/1K/c1",
        "decode/1K/c2",
        "decode/1K/c4",
    ];
    want.sort_unstable();
    assert_eq!(cells, want, "every cell exactly once");
    assert!(after.iter().all(|r| r.status == Status::Valid), "{after:?}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["resumed_at"].as_array().unwrap().len(), 1);
    assert!(manifest["ended_at"].is_string());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("Unfinished run"), "{report}");
}

#[test]
fn resume_refuses_another_spec_and_a_directory_that_is_no_run() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let one = SPEC.edit(
        "contexts: [256, 1K], concurrency: [1, 2, 4]",
        "contexts: [256], concurrency: [1]",
    );
    let first = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &one)
        .run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let other = one.edit("duration: 1s", "duration: 2s");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap(), "--resume"])
        .spec("t.yaml", &other)
        .run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("was run from a different spec (sha256"),
        "{}",
        done.stderr
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let done = Bench::new(&["run", "--out", empty.to_str().unwrap(), "--resume"])
        .spec("s.yaml", &one)
        .run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("is not a run directory (it has no manifest.json)"),
        "{}",
        done.stderr
    );
    let done = Bench::new(&["run", "--resume"]).spec("s.yaml", &one).run();
    assert_eq!(done.code, 2, "--resume needs --out");
}

#[test]
fn an_unwritable_out_is_refused_before_anything_starts() {
    let dir = Dir::new();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", SPEC)
        .run();
    // An output that cannot be written exits 1 in every command (docs/cli.md).
    assert_eq!(done.code, 1, "{}", done.stderr);
    assert!(
        done.stderr.contains("cannot write the run directory"),
        "{}",
        done.stderr
    );
    assert!(
        !done.stderr.contains("run: "),
        "nothing started: {}",
        done.stderr
    );
}

/// Run one decode cell against a faulty simulator; its measured records. Slots back off
/// after a failure, so the active fraction allowed is lower than the default.
fn run_faulty(faults: &str, max_error_rate: f64) -> (i32, Vec<Record>, String) {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let spec = format!(
        "version: 1\nname: faults\nengine: {{kind: sim, sim: {{profile: tiny, faults: {{{faults}}}}}}}\nmodel: {{served_name: tiny}}\nworkload: {{max_output_tokens: 256}}\nmatrix: {{contexts: [256], concurrency: [4]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 2s}}}}\nvalidity: {{max_error_rate: {max_error_rate}, min_active_fraction: 0.5}}\n"
    );
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec)
        .run();
    let measured = records(&out)
        .into_iter()
        .filter(|r| r.status != Status::Skipped)
        .collect();
    (done.code, measured, done.stderr)
}

#[test]
fn failed_requests_are_counted_by_kind_and_the_verdict_follows_validity() {
    for (faults, kind) in [
        ("failure_rate: 0.3", "http_500"),
        ("disconnect_rate: 0.3", "disconnect"),
    ] {
        let (code, recs, stderr) = run_faulty(faults, 0.0);
        assert_eq!(code, 1, "{faults}: {stderr}");
        let r = &recs[0];
        assert_eq!(r.status, Status::Invalid, "{faults}: {r:?}");
        assert!(r.errors > 0, "{faults}");
        assert_eq!(
            r.error_kinds.keys().collect::<Vec<_>>(),
            [kind],
            "{faults}: {r:?}"
        );
        assert_eq!(r.error_kinds[kind], r.errors, "{faults}");
        assert!(
            r.reasons.iter().any(|m| m.starts_with("error rate ")),
            "{faults}: {:?}",
            r.reasons
        );
        assert!(
            r.output_tokens.unwrap_or(0) > 0,
            "{faults}: the other requests are measured"
        );
        // The same faults within what `validity` allows: counted, and the cell valid.
        let (code, recs, stderr) = run_faulty(faults, 1.0);
        assert_eq!(code, 0, "{faults}: {stderr}");
        assert_eq!(recs[0].status, Status::Valid, "{faults}: {:?}", recs[0]);
        assert!(
            recs[0].error_kinds.get(kind).copied().unwrap_or(0) > 0,
            "{faults}"
        );
    }
    // Every request refused: the cell failed, said why.
    let (code, recs, _) = run_faulty("failure_rate: 1.0", 0.0);
    assert_eq!(code, 1);
    assert_eq!(recs[0].status, Status::Failed, "{:?}", recs[0]);
}

#[test]
fn an_engine_that_is_gone_fails_its_cell_and_ends_the_run_resumably() {
    // The in-process simulator stops answering 2.5 s in, inside one of its decode cells.
    let dir = Dir::new();
    let out = dir.path().join("run");
    let spec = SPEC.edit(
        "profile: tiny}",
        "profile: tiny, faults: {die_after: 2500ms}}",
    );
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec)
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stderr.contains("stopped answering during the cell"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("--resume`"), "{}", done.stderr);
    let recs = records(&out);
    let (last, earlier) = recs.split_last().unwrap();
    assert_eq!(last.status, Status::Failed, "{last:?}");
    assert!(
        last.reasons.iter().any(|r| r.contains("stopped answering")),
        "{last:?}"
    );
    assert!(
        !earlier.is_empty() && earlier.iter().all(|r| r.status == Status::Valid),
        "{earlier:?}"
    );
    assert!(recs.len() < 8, "the run ended at the engine's loss");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("Unfinished run"),
        "the reports show what was measured"
    );
}

#[test]
fn two_runs_in_one_process_each_answer_their_own_interrupt() {
    use benchspec::plan::RunConfig;
    use benchspec::run::{self, Event, Interrupt, RunError, RunOptions};
    let dir = Dir::new();
    let yaml = SPEC.edit(
        "phases: {decode: {duration: 1s}}",
        "phases: {decode: {duration: 300ms}}",
    );
    assert_ne!(yaml, SPEC, "the spec was edited");
    let loaded = benchspec::spec::parse("s.yaml", &yaml, benchspec::spec::Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let opts = |name: &str| RunOptions {
        out: Some(dir.path().join(name)),
        ..RunOptions::default()
    };
    // The first run is never interrupted and runs to the end.
    let first = run::run(
        &RunConfig::new(&loaded),
        &opts("one"),
        &Interrupt::new(),
        &|_| {},
    )
    .unwrap();
    assert_eq!(first.exit().code(), 0);
    assert_eq!(records(&dir.path().join("one")).len(), 8);
    // The second is interrupted by its caller when its third measured cell starts.
    let stop = Interrupt::new();
    let on = |ev: Event| {
        if let Event::Cell { index: 3, .. } = ev {
            stop.request();
        }
    };
    let err = run::run(&RunConfig::new(&loaded), &opts("two"), &stop, &on)
        .err()
        .unwrap();
    assert_eq!(err.exit().code(), 1, "{err}");
    assert!(
        matches!(&err, RunError::Interrupted { cell, .. } if cell == "decode/256/c2"),
        "{err}"
    );
    assert_eq!(err.run_dir(), Some(dir.path().join("two").as_path()));
    let kept = records(&dir.path().join("two"));
    let ids: Vec<&str> = kept.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(
        ids,
        ["prefill/256", "decode/256/c1"],
        "the finished cells are kept"
    );
    assert!(err.to_string().contains("--resume"), "{err}");
}

#[test]
fn the_client_checks_itself_and_a_saturated_client_makes_the_cell_invalid() {
    for (busy, want) in [(0.0, Status::Invalid), (0.9, Status::Valid)] {
        let dir = Dir::new();
        let out = dir.path().join("run");
        let spec = format!(
            "version: 1\nname: client\nengine: {{kind: sim, sim: {{profile: tiny}}}}\nmodel: {{served_name: tiny}}\nworkload: {{max_output_tokens: 256}}\nmatrix: {{contexts: [256], concurrency: [4]}}\nphases: {{prefill: {{enabled: false}}, decode: {{duration: 2s}}}}\nvalidity: {{max_client_busy: {busy}}}\n"
        );
        let done = Bench::new(&[
            "run",
            "--client-threads",
            "1",
            "--out",
            out.to_str().unwrap(),
        ])
        .spec("s.yaml", &spec)
        .run();
        let recs = records(&out);
        let r = recs.iter().find(|r| r.cell == "decode/256/c4").unwrap();
        assert_eq!(
            r.status, want,
            "max_client_busy {busy}: {r:?}\n{}",
            done.stderr
        );
        let client = r.client.unwrap();
        assert_eq!(client.threads, 1);
        // The in-process simulator runs on its own threads: only the client's CPU counts,
        // which at 4 streams of a tiny model is far from one core.
        assert!(client.cpu_busy > 0.0 && client.cpu_busy < 0.9, "{client:?}");
        assert!(
            client.cpu_s > 0.0 && client.rss_mb.is_none_or(|m| m > 1.0),
            "{client:?}"
        );
        let saturated = r
            .reasons
            .iter()
            .any(|m| m.starts_with("client saturated: "));
        assert_eq!(saturated, want == Status::Invalid, "{:?}", r.reasons);
        let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        assert_eq!(manifest["client_threads"], 1);
    }
}

/// The unsuperseded lines of `repeats.jsonl` of `cell`, by repeat index.
fn live_repeats(out: &Path, cell: &str) -> Vec<(u32, u32, f64)> {
    let text = std::fs::read_to_string(out.join("repeats.jsonl")).unwrap();
    let mut v: Vec<(u32, u32, f64)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["cell"] == cell && l.get("superseded").is_none())
        .map(|l| {
            let n = |k: &str| l[k].as_u64().unwrap() as u32;
            (
                n("repeat"),
                n("attempt"),
                l["total_tok_s"].as_f64().unwrap(),
            )
        })
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

#[test]
fn a_run_killed_after_its_third_repeat_keeps_its_repeats_on_resume() {
    let dir = Dir::new();
    let text = SPEC
        .edit("matrix: {contexts: [256, 1K]", "matrix: {contexts: [256]")
        .edit("concurrency: [1, 2, 4]", "concurrency: [1, 2]")
        .edit(
            "phases: {decode",
            "repeats: 3\nphases: {prefill: {enabled: false}, decode",
        );
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, &text).unwrap();
    let out = dir.path().join("run");
    let args = [
        "run",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--save-requests",
    ];
    let mut child = std::process::Command::new(bin())
        .args(args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = || {
        std::fs::read_to_string(out.join("repeats.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let start = std::time::Instant::now();
    while lines() < 3 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(lines(), 3, "killed right after the third repeat line");
    let resumed = Bench::new(&args).arg("--resume").run();
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed
            .stderr
            .contains("resuming: 3 repeat(s) of unfinished cells kept, not measured again"),
        "{}",
        resumed.stderr
    );
    // A fresh run measures 2 cells × 3 repeats; the resumed one only the 3 missing.
    assert_eq!(
        resumed.stderr.matches("(repeat ").count(),
        3,
        "{}",
        resumed.stderr
    );
    let triples = each_record_keeps_its_three_repeats(&out);
    every_saved_request_counts(&out, &triples);
}

/// The 2 records in `out`, valid, each with repeats 1, 2 and 3 (the first two kept from the
/// killed run) as its per-repeat values: the (cell, repeat, attempt) of each.
fn each_record_keeps_its_three_repeats(
    out: &std::path::Path,
) -> std::collections::BTreeSet<(String, u32, u32)> {
    let recs: Vec<Record> = records(out)
        .into_iter()
        .filter(|r| r.status != Status::Skipped)
        .collect();
    assert_eq!(recs.len(), 2, "{recs:#?}");
    let mut triples = std::collections::BTreeSet::new();
    for r in &recs {
        assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
        let live = live_repeats(out, &r.cell);
        assert_eq!(live.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 2, 3]);
        let per = &r.per_repeat.as_ref().unwrap()["total_tok_s"];
        assert_eq!(
            &live.iter().map(|x| x.2).collect::<Vec<_>>(),
            per,
            "{}",
            r.cell
        );
        assert!(live.iter().any(|x| x.1 == 1) && live.iter().any(|x| x.1 == 2));
        triples.extend(live.iter().map(|x| (r.cell.clone(), x.0, x.1)));
    }
    triples
}

/// Every request saved in `out` belongs to a repeat that counts (one of `triples`: cell,
/// repeat, attempt), and every such repeat has some.
fn every_saved_request_counts(
    out: &std::path::Path,
    triples: &std::collections::BTreeSet<(String, u32, u32)>,
) {
    let text = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let key = (
            v["cell"].as_str().unwrap().to_string(),
            v["repeat"].as_u64().unwrap() as u32,
            v["attempt"].as_u64().unwrap() as u32,
        );
        assert!(triples.contains(&key), "{key:?} counts for no record");
        seen.insert(key);
    }
    assert_eq!(&seen, triples);
}
