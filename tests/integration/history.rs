//! The history database, on both backends: an SQLite file, and a real PostgreSQL server
//! (`scripts/test` starts one as an unprivileged user on 127.0.0.1 and names it in
//! `BENCHSPEC_TEST_POSTGRES`; each test makes its own database in it). The runs are the
//! simulator's on a paused clock (its seeded noise the only run-to-run spread); the history
//! commands are the real binary.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::open::run_config;
use benchspec::plan::{RunConfig, Shard};
use benchspec::run::RunOptions;
use benchspec::spec::{self, Stage};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Decode at 256 tokens, c1 and c4, of the default (H200) engine with 2% noise, `time_scale`
/// 2.5 making a step (~10 ms) long beside the paused clock's 1 ms tick, which rounds it.
pub(super) fn spec_text(seed: u32, time_scale: f64) -> String {
    format!(
        "version: 1
name: nightly
labels: {{team: serving}}
engine: {{kind: sim, sim: {{noise: 0.02, noise_seed: {seed}, time_scale: {time_scale}}}}}
model: {{served_name: tiny}}
workload: {{max_output_tokens: 32}}
matrix: {{contexts: [256], concurrency: [1, 4]}}
phases: {{prefill: {{enabled: false}}, decode: {{duration: 500ms}}}}
"
    )
}

/// Run `yaml` on a paused clock into `dir/run` (shard `shard` of the plan when given), its
/// manifest's start set to `started_at` (nightly runs are a day apart; these, milliseconds).
pub(super) fn paused_run(dir: &Dir, yaml: &str, shard: Option<Shard>, started_at: &str) -> PathBuf {
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml).unwrap();
    let path = path.to_string_lossy().into_owned();
    let loaded = spec::parse(&path, yaml, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let out = dir.path().join("run");
    let opts = RunOptions {
        out: Some(out.clone()),
        shard,
        ..RunOptions::default()
    };
    run_config(&RunConfig::new(&loaded), &opts, &|_| {}, true);
    let manifest = out.join("manifest.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["started_at"] = started_at.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    out
}

/// A fresh database on the test PostgreSQL server.
pub(super) fn postgres_db() -> String {
    let url = std::env::var("BENCHSPEC_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "BENCHSPEC_TEST_POSTGRES is not set: run scripts/test (it starts PostgreSQL), or \
             `eval \"$(scripts/postgres start)\"` first"
        )
    });
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let name = format!(
        "bs_{}_{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let admin = url.clone();
    let create = name.clone();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::query(&format!("CREATE DATABASE {create}"))
                .execute(&mut c)
                .await
                .unwrap();
        });
    let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
    format!("{base}/{name}")
}

pub(super) fn history(args: &[&str], db: &str) -> super::cli::Done {
    let mut b = Bench::new(&["history"]);
    for a in args {
        b = b.arg(a);
    }
    b.arg("--db").arg(db).run()
}

pub(super) fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Three runs alike and a fourth 40% slower: per decode cell, four points, only the newest
/// flagged, `trend` exits 1 naming the run; a run added twice (from a copy elsewhere) is kept
/// once.
fn regression_is_flagged(db: &str) {
    let dirs: Vec<Dir> = (0..4).map(|_| Dir::new()).collect();
    let mut runs = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let scale = if i == 3 { 3.5 } else { 2.5 };
        let at = format!("2026-12-0{}T02:00:00Z", i + 1);
        runs.push(paused_run(dir, &spec_text(i as u32 + 1, scale), None, &at));
    }
    for run in &runs {
        let d = history(&["add", run.to_str().unwrap()], db);
        assert_eq!(d.code, 0, "{}", d.stderr);
        assert!(d.stderr.contains("added"), "{}", d.stderr);
    }
    a_copy_is_kept_once(&runs[0], db);
    let list = json(&history(&["list", "--format", "json"], db).stdout);
    let listed = list.as_array().unwrap();
    assert_eq!(listed.len(), 4, "{list:#}");
    assert!(
        listed
            .iter()
            .all(|r| r["spec"] == "nightly" && r["valid"] == 2),
        "{list:#}"
    );
    assert_eq!(listed[0]["labels"]["team"], "serving");

    let t = history(
        &[
            "trend",
            "--format",
            "json",
            "--metric",
            "total_tok_s",
            "--metric",
            "tbt_ms_p50",
        ],
        db,
    );
    assert_eq!(
        t.code, 1,
        "a regression at the newest point exits 1: {}",
        t.stderr
    );
    let fourth = listed[3]["run"].as_str().unwrap();
    assert!(
        t.stderr.contains(fourth),
        "the regression names its run: {}",
        t.stderr
    );
    let doc = json(&t.stdout);
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 4, "2 cells × 2 metrics: {doc:#}");
    only_the_newest_is_flagged(series, fourth);
    // Shown in Markdown, the last 3 points of c4's series; judged over all four.
    let md = history(&["trend", "--cell", "decode/*/c4", "--last", "3"], db);
    assert_eq!(
        md.code, 1,
        "judged over all points, shown the last 3: {}",
        md.stderr
    );
    assert!(md.stdout.contains("▼"), "{}", md.stdout);
}

/// The first run `run` again, from another path: one run still.
fn a_copy_is_kept_once(run: &Path, db: &str) {
    let copy = Dir::new();
    copy_dir(run, &copy.path().join("moved"));
    let again = history(&["add", copy.path().join("moved").to_str().unwrap()], db);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("already in"), "{}", again.stderr);
}

/// Each series has four points, and only the newest, of run `fourth`, is flagged: a
/// regression of about the 40% planted.
fn only_the_newest_is_flagged(series: &[Value], fourth: &str) {
    for s in series {
        let points = s["points"].as_array().unwrap();
        assert_eq!(points.len(), 4, "{s:#}");
        assert!(s["cell"].as_str().unwrap().starts_with("decode/256/c"));
        let flags: Vec<&Value> = points.iter().map(|p| &p["flag"]).collect();
        assert_eq!(
            flags[..3],
            [&Value::Null; 3],
            "no earlier point flagged: {s:#}"
        );
        assert_eq!(flags[3], "regression", "{s:#}");
        assert_eq!(points[3]["run"], fourth);
        // 40% slower: tok/s −28.6% (1/1.4), TBT +40%, give or take the noise and the tick.
        let change = points[3]["change_pct"].as_f64().unwrap();
        let want = if s["metric"] == "total_tok_s" {
            -28.6
        } else {
            40.0
        };
        assert!(
            (change - want).abs() < 12.0,
            "{} {change}% (about {want}%): {s:#}",
            s["metric"]
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Two processes add the two shards of a plan at once, each both (in opposite orders), to a
/// new database: both succeed, and each run and cell is there once.
fn concurrent_adds(db: &str) {
    let spec = spec_text(1, 2.5);
    let (a, b) = (Dir::new(), Dir::new());
    let s1 = paused_run(
        &a,
        &spec,
        Some(Shard { k: 1, n: 2 }),
        "2026-12-01T02:00:00Z",
    );
    let s2 = paused_run(
        &b,
        &spec,
        Some(Shard { k: 2, n: 2 }),
        "2026-12-01T02:00:01Z",
    );
    let (p1, p2) = (
        s1.to_str().unwrap().to_string(),
        s2.to_str().unwrap().to_string(),
    );
    let spawn = |x: &str, y: &str| {
        std::process::Command::new(super::bin())
            .args(["history", "add", x, y, "--db", db])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn(&p1, &p2), spawn(&p2, &p1));
    for child in [one, two] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let list = json(&history(&["list", "--format", "json"], db).stdout);
    // Each shard measured one of the two cells (the other recorded as not its own).
    let valid: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["valid"].as_i64().unwrap())
        .collect();
    assert_eq!(
        valid,
        [1, 1],
        "two shard runs of one cell each, once: {list:#}"
    );
    let t = json(
        &history(
            &["trend", "--format", "json", "--metric", "total_tok_s"],
            db,
        )
        .stdout,
    );
    for s in t["series"].as_array().unwrap() {
        assert_eq!(s["points"].as_array().unwrap().len(), 1, "{s:#}");
    }
}

#[test]
fn sqlite_flags_the_regression_and_keeps_a_run_once() {
    let dir = Dir::new();
    regression_is_flagged(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn postgres_flags_the_regression_and_keeps_a_run_once() {
    regression_is_flagged(&postgres_db());
}

#[test]
fn sqlite_two_processes_add_shards_at_once() {
    let dir = Dir::new();
    concurrent_adds(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn postgres_two_processes_add_shards_at_once() {
    concurrent_adds(&postgres_db());
}

/// `history site`: the index lists every run linked to its own report (rendered from its
/// directory), a run whose directory moved is listed unlinked, the spec's trend page has a
/// chart per series; the pages render in headless Chromium (its DOM read back, a
/// screenshot taken) without a request leaving the page.
#[test]
fn the_site_links_every_run_in_chromium() {
    let work = Dir::new();
    let db = work.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dirs: Vec<Dir> = (0..3).map(|_| Dir::new()).collect();
    for (i, dir) in dirs.iter().enumerate() {
        let run = paused_run(
            dir,
            &spec_text(i as u32 + 1, 2.5),
            None,
            &format!("2026-12-0{}T02:00:00Z", i + 1),
        );
        assert_eq!(history(&["add", run.to_str().unwrap()], db).code, 0);
    }
    let list = json(&history(&["list", "--format", "json"], db).stdout);
    let ids: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    let site = work.path().join("site");
    let d = history(&["site", "--out", site.to_str().unwrap()], db);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(d.stderr.contains("3 report(s) linked"), "{}", d.stderr);
    for id in &ids {
        assert!(
            site.join(format!("runs/{id}/report.html")).is_file(),
            "{id}"
        );
    }
    let page = site.join("spec-nightly.html");
    let trend = std::fs::read_to_string(&page).unwrap();
    assert!(trend.matches("<svg").count() >= 4, "2 cells × ≥2 metrics");
    the_site_renders_in_chromium(work.path(), &site, &page, &ids);

    // A run directory moved away: listed, not linked.
    std::fs::rename(dirs[0].path().join("run"), work.path().join("moved")).unwrap();
    let again = work.path().join("site2");
    let d = history(&["site", "--out", again.to_str().unwrap()], db);
    assert!(
        d.stderr.contains("2 report(s) linked") && d.stderr.contains("moved"),
        "{}",
        d.stderr
    );
    let index = std::fs::read_to_string(again.join("index.html")).unwrap();
    assert!(index.contains(">moved<") && !index.contains(&format!("runs/{}/report.html", ids[0])));
}

/// The `site`'s index in headless Chromium links every run of `ids` and the trend `page`
/// (a screenshot taken in `work`), and the trend page asks for nothing outside itself.
fn the_site_renders_in_chromium(work: &Path, site: &Path, page: &Path, ids: &[String]) {
    let shot = work.join("index.png");
    let out = super::html::headless(work, 1280, 900)
        .arg("--dump-dom")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", site.join("index.html").display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    for id in ids {
        assert!(
            dom.contains(&format!("href=\"runs/{id}/report.html\"")),
            "run {id} linked:\n{dom}"
        );
    }
    assert!(dom.contains("href=\"spec-nightly.html\""), "{dom}");
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot of the page: {} bytes",
        png.len()
    );
    let opened = super::html::open_in_chromium(page, &work.join("trend.png"), false);
    assert!(
        opened.requests.is_empty(),
        "the page is self-contained: {:?}",
        opened.requests
    );
}

/// `run --history=DB` adds the run when it ends; running `history add` on it again adds
/// nothing.
#[test]
fn run_adds_itself_with_history() {
    let work = Dir::new();
    let db = work.path().join("h.sqlite");
    let out = work.path().join("run");
    let spec = "version: 1
name: cli-history
engine: {kind: sim, sim: {profile: tiny}}
model: {served_name: tiny}
workload: {max_output_tokens: 16}
matrix: {contexts: [256], concurrency: [2]}
phases: {prefill: {enabled: false}, decode: {duration: 1s}}
";
    let d = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(format!("--history={}", db.display()))
        .spec("spec.yaml", spec)
        .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(d.stderr.contains("added"), "{}", d.stderr);
    let again = history(&["add", out.to_str().unwrap()], db.to_str().unwrap());
    assert!(again.stderr.contains("nothing added"), "{}", again.stderr);
    let list = json(&history(&["list", "--format", "json"], db.to_str().unwrap()).stdout);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["spec"], "cli-history");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(list[0]["run"], manifest["run_id"]);
}
