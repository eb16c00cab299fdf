//! The history as a gate: read commands never create a database, filters that match nothing
//! stop `trend` (exit 2) naming what is there, a predicted run is refused or kept out of the
//! trends, skipped cells are counted apart, and a database that cannot be used is a storage
//! failure (exit 4) said with its cause — before `run --history` measures anything.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::history::{history, json, paused_run, postgres_db, spec_text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `list`, `trend` and `site` on a database that is not there — named by `--db` or by a
/// mistyped `BENCHSPEC_HISTORY` — exit 2 and create nothing.
#[test]
fn read_commands_never_create_a_database() {
    let work = Dir::new();
    let missing = work.path().join("missing-dir/x.sqlite");
    let db = missing.to_str().unwrap();
    let site = work.path().join("site");
    let commands: [&[&str]; 4] = [
        &["list"],
        &["trend"],
        &["trend", "--metric", "total_tok_s"],
        &["site", "--out", site.to_str().unwrap()],
    ];
    for args in commands {
        let d = history(args, db);
        assert_eq!(d.code, 2, "{args:?}: {}", d.stderr);
        assert!(
            d.stderr.contains(&format!("no history database at {db}")),
            "{args:?}: {}",
            d.stderr
        );
    }
    let env = Bench::new(&["history", "trend"])
        .env("BENCHSPEC_HISTORY", db)
        .run();
    assert_eq!(env.code, 2, "{}", env.stderr);
    assert!(
        env.stderr.contains("no history database at"),
        "{}",
        env.stderr
    );
    assert!(
        !work.path().join("missing-dir").exists() && !site.exists(),
        "nothing created"
    );
    // The writer creates it.
    let dir = Dir::new();
    let run = paused_run(&dir, &spec_text(1, 2.5), None, "2026-12-01T02:00:00Z");
    let add = history(&["add", run.to_str().unwrap()], db);
    assert_eq!(add.code, 0, "{}", add.stderr);
    assert!(missing.is_file());
}

/// Filters that match no series exit 2, naming the specs, cells or metrics there are; an
/// unknown metric name is refused naming the metrics. A run's disabled prefill phase is
/// counted as skipped, not as a cell that is not valid.
#[test]
fn a_trend_that_judges_nothing_stops() {
    let work = Dir::new();
    let db = work.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dirs = [Dir::new(), Dir::new()];
    for (i, dir) in dirs.iter().enumerate() {
        let at = format!("2026-12-0{}T02:00:00Z", i + 1);
        let run = paused_run(dir, &spec_text(i as u32 + 1, 2.5), None, &at);
        assert_eq!(history(&["add", run.to_str().unwrap()], db).code, 0);
    }
    for (args, want) in nothing_judged_cases() {
        let mut all = vec!["trend"];
        all.extend_from_slice(args);
        let d = history(&all, db);
        assert_eq!(d.code, 2, "{args:?} judged nothing: {}", d.stderr);
        assert!(
            !d.stdout.contains("No regression"),
            "{args:?}: {}",
            d.stdout
        );
        for w in want {
            assert!(d.stderr.contains(w), "{args:?}: `{w}` in {}", d.stderr);
        }
    }
    let ok = history(&["trend", "--metric", "total_tok_s"], db);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let list = history(&["list", "--spec", "no such spec"], db);
    assert_eq!(list.code, 2, "{}", list.stderr);
    assert!(list.stderr.contains("`nightly`"), "{}", list.stderr);
    skipped_cells_are_counted_apart(dirs[0].path(), db);
}

/// `trend`'s filters that judge nothing, and words its error must hold.
fn nothing_judged_cases() -> [(&'static [&'static str], &'static [&'static str]); 5] {
    [
        (
            &["--metric", "bogus_metric"],
            &[
                "unknown metric `bogus_metric`",
                "total_tok_s",
                "ttft_ms_p50",
            ],
        ),
        (
            &["--spec", "no such spec"],
            &[
                "no measured run of spec `no such spec`",
                "its specs: `nightly`",
            ],
        ),
        (
            &["--cell", "prefill/*"],
            &["matches `prefill/*`", "`decode/256/c1`, `decode/256/c4`"],
        ),
        (
            &["--metric", "capacity"],
            &["has the metric `capacity`", "`total_tok_s`"],
        ),
        (
            &["--spec", "nightly", "--cell", "decode/256/c8"],
            &["no cell of spec `nightly` matches `decode/256/c8`"],
        ),
    ]
}

/// Skipped cells, counted from the run directory's own records (the run in `dir`, first in
/// `db`): apart, not as failures.
fn skipped_cells_are_counted_apart(dir: &Path, db: &str) {
    let records = std::fs::read_to_string(dir.join("run/results.jsonl")).unwrap();
    let statuses: Vec<Value> = records.lines().map(json).collect();
    let skipped = statuses.iter().filter(|r| r["status"] == "skipped").count();
    let valid = statuses.iter().filter(|r| r["status"] == "valid").count();
    assert_eq!((valid, skipped > 0), (2, true), "{records}");
    let listed = json(&history(&["list", "--format", "json"], db).stdout);
    assert_eq!(listed[0]["valid"], 2);
    assert_eq!(listed[0]["skipped"], skipped);
    assert_eq!(listed[0]["cells"], statuses.len());
    let table = history(&["list"], db).stdout;
    assert!(
        table.contains(&format!("| 2/2 valid, {skipped} skipped |")),
        "{table}"
    );
}

/// `fit` the run in `measured`, then `predict --out` its spec against the twin: a run whose
/// manifest says `predicted_by`, started at `started_at`.
fn predicted_run(work: &Path, measured: &Path, spec: &Path, started_at: &str) -> PathBuf {
    let twin = work.join("twin.toml");
    let fit = Bench::new(&["fit", measured.to_str().unwrap(), "--out"])
        .arg(&twin)
        .run();
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    let out = work.join("predicted");
    let p = Bench::new(&["predict", spec.to_str().unwrap(), "--twin"])
        .arg(&twin)
        .arg("--out")
        .arg(&out)
        .run();
    assert_eq!(p.code, 0, "{}", p.stderr);
    let manifest = out.join("manifest.json");
    let mut m: Value = json(&std::fs::read_to_string(&manifest).unwrap());
    assert!(m["predicted_by"].is_object(), "{m:#}");
    m["started_at"] = started_at.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    out
}

/// Two runs alike, a third 30% slower (time_scale 2.5 → 3.25: tok/s × 2.5/3.25, −23.1% by
/// hand), then a run predicted by a twin fitted on the first: refused without
/// `--allow-predicted`; with it, kept out of the trend — which still flags the third run —
/// and marked in `list` and `site`.
#[test]
fn a_predicted_run_never_hides_a_regression() {
    let work = Dir::new();
    let db = work.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dirs = [Dir::new(), Dir::new(), Dir::new()];
    let mut runs = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let scale = if i == 2 { 3.25 } else { 2.5 };
        let at = format!("2026-12-0{}T02:00:00Z", i + 1);
        runs.push(paused_run(dir, &spec_text(i as u32 + 1, scale), None, &at));
        let d = history(&["add", runs[i].to_str().unwrap()], db);
        assert_eq!(d.code, 0, "{}", d.stderr);
    }
    let spec = dirs[0].path().join("spec.yaml");
    let predicted = predicted_run(work.path(), &runs[0], &spec, "2026-12-04T02:00:00Z");
    let p = predicted.to_str().unwrap();
    a_prediction_is_refused_by_default(p, db);

    let allowed = history(&["add", p, "--allow-predicted"], db);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(
        allowed.stderr.contains("as predicted"),
        "{}",
        allowed.stderr
    );
    let listed = json(&history(&["list", "--format", "json"], db).stdout);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4);
    let marks: Vec<bool> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["predicted_by"].is_string())
        .collect();
    assert_eq!(marks, [false, false, false, true], "{listed:#}");
    let table = history(&["list"], db).stdout;
    assert_eq!(table.matches("PREDICTED by").count(), 1, "{table}");
    the_trend_leaves_the_prediction_out(db, &ids, &dirs);

    let site = work.path().join("site");
    let d = history(&["site", "--out", site.to_str().unwrap()], db);
    assert_eq!(d.code, 0, "{}", d.stderr);
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert_eq!(index.matches("<tr class=\"predicted\">").count(), 1);
    assert_eq!(index.matches("PREDICTED by").count(), 1, "{index}");
}

/// `history add` of the predicted run `p` without `--allow-predicted`: refused, nothing
/// added to `db` (which holds 3 runs).
fn a_prediction_is_refused_by_default(p: &str, db: &str) {
    let refused = history(&["add", p], db);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("predicted") && refused.stderr.contains("--allow-predicted"),
        "{}",
        refused.stderr
    );
    let listed = json(&history(&["list", "--format", "json"], db).stdout);
    assert_eq!(
        listed.as_array().unwrap().len(),
        3,
        "nothing added: {listed:#}"
    );
}

/// `trend` over `db` (runs `ids`, the last predicted; measured in `dirs`): the predicted run
/// is said to be left out and is no point; the third run is flagged by its change worked by
/// hand from the run directories.
fn the_trend_leaves_the_prediction_out(db: &str, ids: &[&str], dirs: &[Dir]) {
    let t = history(
        &["trend", "--format", "json", "--metric", "total_tok_s"],
        db,
    );
    assert_eq!(t.code, 1, "the third run's regression: {}", t.stderr);
    assert!(
        t.stderr.contains("1 predicted run(s) left out") && t.stderr.contains(ids[3]),
        "{}",
        t.stderr
    );
    let doc = json(&t.stdout);
    for s in doc["series"].as_array().unwrap() {
        let points = s["points"].as_array().unwrap();
        let runs: Vec<&str> = points.iter().map(|p| p["run"].as_str().unwrap()).collect();
        assert_eq!(runs, ids[..3], "the predicted run is no point: {s:#}");
        assert_eq!(points[2]["flag"], "regression", "{s:#}");
        // By hand from the run directories' own records: the third against the first two.
        let cell = s["cell"].as_str().unwrap();
        let v: Vec<f64> = dirs.iter().map(|d| tok_s(d.path(), cell)).collect();
        let base = (v[0] + v[1]) / 2.0;
        let want = ((v[2] - base) / base * 1e4).round() / 100.0;
        let change = points[2]["change_pct"].as_f64().unwrap();
        assert_eq!(change, want, "{cell}: {v:?}");
        // And the model: × 2.5/3.25, give or take whole tokens in a 500 ms window.
        assert!(
            (change - -23.1).abs() < 6.0,
            "{cell} {change}% (−23.1% by hand)"
        );
    }
}

/// The `total_tok_s` of `cell` in the run `dir/run`, read from its results.jsonl.
fn tok_s(dir: &Path, cell: &str) -> f64 {
    let text = std::fs::read_to_string(dir.join("run/results.jsonl")).unwrap();
    let r = text.lines().map(json).find(|r| r["cell"] == cell).unwrap();
    r["total_tok_s"].as_f64().unwrap()
}

/// A PostgreSQL port nobody listens on: refused at once (no 30 s pool wait), said as such,
/// exit 4 — and `run --history` stops before its first cell.
#[test]
fn a_refused_database_is_said_at_once_and_stops_the_run_first() {
    let url = format!("postgres://bench@127.0.0.1:{}/hist", super::free_port());
    let t0 = Instant::now();
    let d = history(&["list"], &url);
    let took = t0.elapsed();
    assert_eq!(d.code, 4, "{}", d.stderr);
    assert!(
        d.stderr.to_ascii_lowercase().contains("connection refused"),
        "{}",
        d.stderr
    );
    assert!(took < Duration::from_secs(5), "{took:?}");

    let work = Dir::new();
    let out = work.path().join("run");
    let spec = work.path().join("spec.yaml");
    std::fs::write(&spec, spec_text(1, 2.5)).unwrap();
    let t0 = Instant::now();
    let r = Bench::new(&[
        "run",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .arg(format!("--history={url}"))
    .run();
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stderr.to_ascii_lowercase().contains("connection refused"),
        "{}",
        r.stderr
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(!out.join("results.jsonl").exists(), "nothing measured");
}

/// A database written by a newer benchspec: every command refuses it (exit 4), `run
/// --history` before its first cell.
#[test]
fn a_newer_database_is_a_storage_failure() {
    let work = Dir::new();
    let path = work.path().join("h.sqlite");
    let db = path.to_str().unwrap();
    let dir = Dir::new();
    let run = paused_run(&dir, &spec_text(1, 2.5), None, "2026-12-01T02:00:00Z");
    assert_eq!(history(&["add", run.to_str().unwrap()], db).code, 0);
    let url = format!("sqlite://{db}");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            use sqlx::Connection;
            let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query("INSERT INTO benchspec_schema (version, applied_at) VALUES (99, 'x')")
                .execute(&mut c)
                .await
                .unwrap();
        });
    for args in [&["list"][..], &["trend"], &["add", run.to_str().unwrap()]] {
        let d = history(args, db);
        assert_eq!(d.code, 4, "{args:?}: {}", d.stderr);
        assert!(d.stderr.contains("schema version 99"), "{}", d.stderr);
    }
    let out = work.path().join("run");
    let r = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(format!("--history={db}"))
        .spec("spec.yaml", &spec_text(1, 2.5))
        .run();
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(!out.join("results.jsonl").exists(), "nothing measured");
}

/// The real server's causes: an unknown database and a wrong password are said, exit 4.
#[test]
fn postgres_says_why_it_cannot_open() {
    let db = postgres_db();
    let base = db.rsplit_once('/').map_or(db.as_str(), |(b, _)| b);
    let unknown = format!("{base}/no_such_database_here");
    let d = history(&["list"], &unknown);
    assert_eq!(d.code, 4, "{}", d.stderr);
    assert!(d.stderr.contains("does not exist"), "{}", d.stderr);
    let d = history(&["list"], &db);
    assert_eq!(d.code, 0, "{}", d.stderr);
}
