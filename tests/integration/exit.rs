//! The exit map end to end (docs/cli.md, "Exit codes"): an output that cannot be written is a
//! finding (1) whichever command writes it, and a history database that cannot be used is a
//! storage failure (4), never the engine's 3 or bad input's 2.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::history::{history, paused_run, spec_text};
use super::interop::{fixture, import};

/// `history trend --out` and `export --out` naming a regular file where a folder must be made
/// exit 1, like `report` and `merge`, saying what could not be written.
#[test]
fn a_write_error_exits_1_in_history_and_export() {
    let work = Dir::new();
    let blocker = work.path().join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let db = work.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dir = Dir::new();
    let run = paused_run(&dir, &spec_text(1, 2.5), None, "2026-12-01T02:00:00Z");
    assert_eq!(history(&["add", run.to_str().unwrap()], db).code, 0);
    let trend = history(&["trend", "--out", blocker.to_str().unwrap()], db);
    assert_eq!(trend.code, 1, "{}", trend.stderr);
    assert!(trend.stderr.contains("cannot write"), "{}", trend.stderr);

    let imported = work.path().join("imported");
    import("aiperf", &fixture("aiperf-0.13.0-rate4.json"), &imported);
    let export = Bench::new(&[
        "export",
        imported.to_str().unwrap(),
        "--format",
        "benchmark-report",
        "--out",
        blocker.to_str().unwrap(),
    ])
    .run();
    assert_eq!(export.code, 1, "{}", export.stderr);
    assert!(export.stderr.contains("cannot write"), "{}", export.stderr);
}

/// A file at `--db` that is not a database is a storage failure: exit 4.
#[test]
fn a_database_that_cannot_be_read_exits_4() {
    let work = Dir::new();
    let db = work.path().join("h.sqlite");
    std::fs::write(
        &db,
        "this is not an SQLite file, but long enough to have a header",
    )
    .unwrap();
    let d = history(&["list"], db.to_str().unwrap());
    assert_eq!(d.code, 4, "{}", d.stderr);
}

/// A run whose every cell is skipped measured nothing: exit 1 and a line saying so, not the
/// 0 of a run whose every measured cell is valid.
#[test]
fn a_run_that_measured_nothing_exits_1() {
    let dir = Dir::new();
    let spec = dir.path().join("skipped.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: all skipped\nengine: {kind: sim, sim: {profile: tiny}}\n\
         model: {served_name: tiny, max_model_len: 8192, kv_tokens: 512}\n\
         workload: {max_output_tokens: 64}\nmatrix: {contexts: [1K], concurrency: [4]}\n\
         phases: {prefill: {enabled: false}, decode: {duration: 1s}}\nreport: {formats: []}\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let r = Bench::new(&[
        "run",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("nothing was measured"), "{}", r.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert!(!records.is_empty());
    assert!(
        records
            .iter()
            .all(|r| r.status == benchspec::results::Status::Skipped)
    );
}
