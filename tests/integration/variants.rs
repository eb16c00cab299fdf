//! Engine variants (docs/spec.md): each variant launched, measured and stopped in turn, a
//! variant whose engine does not start failed with the reason while the others run, the
//! report marking the faster variant in every column; `--shard` and `--resume` across
//! variants.

use super::cli::{Bench, tempdir::Dir};
use super::free_port;
use benchspec::results::{Record, Status};
use std::path::Path;

fn records(out: &Path) -> Vec<Record> {
    benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap()
}

/// Three variants of a launched `benchspec sim`: as written, twice as slow, and one whose
/// command cannot start.
fn launched(port: u16) -> String {
    let bin = assert_cmd::cargo::cargo_bin("benchspec");
    format!(
        r#"version: 1
name: variants
engine:
  kind: vllm
  base_url: http://127.0.0.1:{port}
  launch:
    command: [{bin}, sim, --port, '{port}', --profile, tiny, --served-name, m, --time-scale, '1']
    ready_timeout: 20s
    stop_timeout: 2s
  variants:
    - name: fast
    - name: slow
      args: {{--time-scale: 2}}
      labels: {{speed: half}}
    - name: broken
      command: [/nonexistent/engine, serve]
model: {{served_name: m}}
workload: {{max_output_tokens: 32}}
matrix: {{contexts: [256], concurrency: [1, 4]}}
phases: {{decode: {{duration: 1s}}}}
"#,
        bin = bin.display()
    )
}

#[test]
fn each_variant_is_launched_measured_and_the_faster_marked() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let out = dir.path().join("run");
    let port = free_port();
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &launched(port))
        .run();
    // The broken variant's cells failed: exit 1, and the others were measured.
    assert_eq!(done.code, 1, "{}", done.stderr);
    assert!(
        done.stderr.contains("variant `broken` did not start"),
        "{}",
        done.stderr
    );
    let recs = records(&out);
    let ids: Vec<&str> = recs.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(
        ids,
        [
            "fast/prefill/256",
            "fast/decode/256/c1",
            "fast/decode/256/c4",
            "slow/prefill/256",
            "slow/decode/256/c1",
            "slow/decode/256/c4",
            "broken/prefill/256",
            "broken/decode/256/c1",
            "broken/decode/256/c4",
        ]
    );
    for r in &recs {
        let want = r.cell.split('/').next();
        assert_eq!(r.variant.as_deref(), want, "{}", r.cell);
        if want == Some("broken") {
            assert_eq!(r.status, Status::Failed);
            assert!(
                r.reasons[0].contains("/nonexistent/engine"),
                "{:?}",
                r.reasons
            );
        } else {
            assert_eq!(r.status, Status::Valid, "{}: {:?}", r.cell, r.reasons);
        }
    }
    assert_eq!(
        recs[3].labels.get("speed").map(String::as_str),
        Some("half")
    );
    for c in ["decode/256/c1", "decode/256/c4"] {
        let rate = |v: &str| {
            recs.iter()
                .find(|r| r.cell == format!("{v}/{c}"))
                .and_then(|r| r.total_tok_s)
                .unwrap()
        };
        let (fast, slow) = (rate("fast"), rate("slow"));
        assert!(fast > 1.5 * slow, "{c}: fast {fast} vs slow {slow}");
    }
    the_manifest_log_and_report_show_each_variant(&out);
}

/// Each variant's command is in the manifest of the run in `out`, its output in engine.log
/// under a header; the report puts the variants side by side and marks the faster one in
/// every column.
fn the_manifest_log_and_report_show_each_variant(out: &Path) {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["started_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "{manifest}"
    );
    let variants = manifest["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 3, "{manifest}");
    let slow = variants[1]["launch_command"].as_str().unwrap();
    assert!(slow.ends_with("--time-scale 2"), "{slow}");
    assert!(variants[2]["failed"].is_string(), "{manifest}");
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap();
    assert!(log.contains("engine variant `slow`"), "{log}");
    // The report puts the variants side by side and marks the faster one in every column.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = |v: &str| {
        report
            .lines()
            .find(|l| l.starts_with(&format!("| `{v}` |")))
            .unwrap_or_else(|| panic!("no row of `{v}`:\n{report}"))
            .to_string()
    };
    assert_eq!(row("fast").matches("**").count(), 4, "{}", row("fast"));
    assert!(!row("slow").contains("**"), "{}", row("slow"));
    assert!(row("broken").contains("failed"), "{}", row("broken"));
    assert!(report.contains("### Variant `slow`"), "{report}");
    assert!(report.contains("**Did not start:**"), "{report}");
}

#[test]
fn a_variant_whose_engine_dies_mid_run_fails_its_cells_left_and_the_next_runs() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let out = dir.path().join("run");
    let port = free_port();
    // `dies` lives 2.5 s from its launch: it dies before its last cell (three 1 s windows
    // come before that one).
    let text = launched(port)
        .replace(
            "    - name: fast\n    - name: slow\n      args: {--time-scale: 2}\n      labels: {speed: half}\n    - name: broken\n      command: [/nonexistent/engine, serve]\n",
            "    - name: dies\n      args: {--die-after: 2500ms}\n    - name: lives\n",
        )
        .replace("concurrency: [1, 4]", "concurrency: [1, 2, 4, 8]");
    assert!(text.contains("name: dies"), "{text}");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 1, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("variant `dies`: the engine exited (exit status: 3) during dies/"),
        "{}",
        done.stderr
    );
    let recs = records(&out);
    let (dies, lives): (Vec<&Record>, Vec<&Record>) = recs
        .iter()
        .partition(|r| r.variant.as_deref() == Some("dies"));
    assert_eq!((dies.len(), lives.len()), (5, 5), "{recs:#?}");
    // The cell it died in says so; the cells after it say why they were not measured.
    let hit = dies
        .iter()
        .position(|r| r.status == Status::Failed)
        .unwrap_or_else(|| panic!("{dies:#?}"));
    assert!(hit < 4, "{dies:#?}");
    assert!(
        dies[hit]
            .reasons
            .iter()
            .any(|r| r.starts_with("the engine exited (exit status: 3) during the cell")),
        "{:#?}",
        dies[hit]
    );
    for r in &dies[hit + 1..] {
        assert_eq!(r.status, Status::Failed, "{r:#?}");
        assert_eq!(
            r.reasons,
            [format!(
                "variant `dies` was not measured further: the engine exited (exit status: 3) during {}",
                dies[hit].cell
            )]
        );
    }
    for r in &lives {
        assert_eq!(r.status, Status::Valid, "{}: {:?}", r.cell, r.reasons);
    }
    the_manifest_says_the_variant_failed(&out);
}

/// The manifest of the run in `out` says why the first variant failed, and the second did not.
fn the_manifest_says_the_variant_failed(out: &Path) {
    let m = benchspec::rundir::RunDir::open(out)
        .unwrap()
        .manifest()
        .unwrap();
    let failed: Vec<Option<&str>> = m.variants.iter().map(|v| v.failed.as_deref()).collect();
    assert!(
        failed[0].is_some_and(|f| f.starts_with("the engine exited")) && failed[1].is_none(),
        "{failed:?}"
    );
}

#[test]
fn the_shipped_variants_spec_plans_both_variants() {
    let done = Bench::new(&["plan", "specs/vllm-max-num-seqs.yaml"]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stdout.contains(
            "36 cells to run: 0 prefill, 36 decode on 2 engine variants (mns128, mns256)"
        ),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.contains("mns256/decode/123K/c256"),
        "{}",
        done.stdout
    );
}

/// Two variants of the in-process simulator, one slower by a known factor. Both are made
/// slower than `tiny` itself (a 256-token prefill of 4 ms once read 7 ms on a loaded CI
/// machine and came out slower than the 1.5 times slower variant's), and each prefill is
/// the mean of 3 cold requests (a single 512-token one of ~11 ms once read 19 ms in a full
/// local suite, slower than the other variant's ~16 ms).
const SIM: &str = "version: 1\nname: sim variants\nengine:\n  kind: sim\n  sim: {profile: tiny, time_scale: 4}\n  variants:\n    - name: a\n    - name: b\n      sim: {profile: tiny, time_scale: 6}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [256, 512], concurrency: [1, 2]}\nphases: {prefill: {mode: standalone, repeats: 3}, decode: {duration: 300ms}}\n";

#[test]
fn shards_and_resume_work_across_variants() {
    // Timings of two variants are compared: not beside another timing test.
    let _cpu = super::cpu();
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, SIM).unwrap();
    // The plan lists every cell once per variant; two shards split them between them.
    let plan = Bench::new(&["plan", "--format", "json"]).arg(&spec).run();
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let all: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let ids: Vec<String> = all["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 12, "{ids:?}");
    assert!(ids[..6].iter().all(|i| i.starts_with("a/")), "{ids:?}");
    // Each variant is estimated at its own speed: b, slower, takes longer in every cell.
    let estimate = |id: &str| {
        all["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .and_then(|c| c["estimate_s"].as_f64())
            .unwrap()
    };
    for c in ["decode/256/c1", "decode/512/c2"] {
        let (a, b) = (estimate(&format!("a/{c}")), estimate(&format!("b/{c}")));
        assert!(b > a, "{c}: a {a} s, b {b} s");
    }
    shards_split_the_variants_and_merge(&dir, &spec, &ids);
    let out = a_run_cut_inside_b_goes_on(&dir, &spec, &ids);
    two_variants_of_one_run_compare(&out);
}

/// Shard 2 of 2 runs only cells of the plan (`ids`), b's, never starting a; with shard 1,
/// the merge holds every cell and both variants' facts.
fn shards_split_the_variants_and_merge(dir: &Dir, spec: &Path, ids: &[String]) {
    let shard2 = dir.path().join("shard2");
    let done = Bench::new(&["run", "--shard", "2/2", "--out", shard2.to_str().unwrap()])
        .arg(spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let got: Vec<String> = records(&shard2).into_iter().map(|r| r.cell).collect();
    assert!(!got.is_empty() && got.len() < 12, "{got:?}");
    assert!(got.iter().any(|i| i.starts_with("b/")), "{got:?}");
    let want: Vec<&String> = ids.iter().filter(|i| got.contains(i)).collect();
    assert_eq!(
        want.len(),
        got.len(),
        "shard 2 ran cells of the plan: {got:?}"
    );
    // The second half of the plan is b's: shard 2 never started a.
    assert!(!done.stderr.contains("variant `a`"), "{}", done.stderr);
    // With shard 1, the merge holds every cell and both variants' facts.
    let shard1 = dir.path().join("shard1");
    let done = Bench::new(&["run", "--shard", "1/2", "--out", shard1.to_str().unwrap()])
        .arg(spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let merged = dir.path().join("merged");
    let done = Bench::new(&["merge", "--out", merged.to_str().unwrap()])
        .arg(&shard1)
        .arg(&shard2)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(records(&merged).len(), 12);
    let m = benchspec::rundir::RunDir::open(&merged)
        .unwrap()
        .manifest()
        .unwrap();
    let names: Vec<&str> = m.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

/// A run cut after a's cells and b's first context goes on inside b, every cell of the plan
/// (`ids`) once; the run directory.
fn a_run_cut_inside_b_goes_on(dir: &Dir, spec: &Path, ids: &[String]) -> std::path::PathBuf {
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().take(9).collect();
    std::fs::write(out.join("results.jsonl"), kept.join("\n") + "\n").unwrap();
    let resumed = Bench::new(&["run", "--out", out.to_str().unwrap(), "--resume"])
        .arg(spec)
        .run();
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed
            .stderr
            .contains("resuming: 9 cell(s) recorded already, 3 to run"),
        "{}",
        resumed.stderr
    );
    assert!(
        !resumed.stderr.contains("variant `a`"),
        "{}",
        resumed.stderr
    );
    // A prefill cell of 3 cold requests reports their median (docs/results.md), and each value.
    for r in records(&out).iter().filter(|r| r.cell.contains("prefill/")) {
        let mut v = r.per_repeat.as_ref().unwrap()["prefill_tok_s"].clone();
        assert_eq!(v.len(), 3, "{r:#?}");
        v.sort_by(f64::total_cmp);
        assert_eq!(
            r.prefill_tok_s,
            Some((v[1] * 10.0).round() / 10.0),
            "{r:#?}"
        );
    }
    let mut cells: Vec<String> = records(&out).into_iter().map(|r| r.cell).collect();
    cells.sort_unstable();
    let mut want = ids.to_vec();
    want.sort_unstable();
    assert_eq!(cells, want, "every cell once");
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert_eq!(manifest.matches("\"name\": \"").count(), 2, "{manifest}");
    out
}

/// Two variants of the run in `out` compare cell by cell: b, 1.5 times slower, regressed; a
/// variant the run does not have is refused.
fn two_variants_of_one_run_compare(out: &Path) {
    let worse = Bench::new(&["compare", "--variants", "a", "b"])
        .arg(out)
        .run();
    assert_eq!(worse.code, 1, "{}{}", worse.stdout, worse.stderr);
    assert!(
        worse.stdout.contains("| `decode/512/c2` |"),
        "{}",
        worse.stdout
    );
    assert!(worse.stdout.contains("(variant b)"), "{}", worse.stdout);
    // (TTFTs of a few ms jitter by a millisecond: only the rates are judged here.)
    let better = Bench::new(&["compare", "--variants", "b", "a", "--min-delta-ms", "50"])
        .arg(out)
        .run();
    assert_eq!(better.code, 0, "{}{}", better.stdout, better.stderr);
    let none = Bench::new(&["compare", "--variants", "a", "c"])
        .arg(out)
        .run();
    assert_eq!(none.code, 2);
    assert!(
        none.stderr.contains("has no variant `c`; it has `a`, `b`"),
        "{}",
        none.stderr
    );
}

/// A variant's `sim` sets only the keys it names: `time_scale: 1.5` keeps the base's `tiny`
/// profile and noise (it once replaced the whole block and fell back to the default,
/// several times slower profile).
#[test]
fn a_partial_sim_override_keeps_the_base_profile() {
    let _cpu = super::cpu();
    let text = "version: 1\nname: partial sim\nengine:\n  kind: sim\n  sim: {profile: tiny, noise: 0.01, noise_seed: 7}\n  variants:\n    - name: base\n    - name: slower\n      sim: {time_scale: 1.5}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 64}\nmatrix: {contexts: [256], concurrency: [1, 4]}\nphases: {prefill: {enabled: false}, decode: {duration: 1s}}\n";
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, text).unwrap();
    // The plan says what each variant changes.
    let plan = Bench::new(&["plan"]).arg(&spec).run();
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(
        plan.stdout
            .contains("variants:\n  base    the spec as written\n  slower  sim.time_scale 1.5\n"),
        "{}",
        plan.stdout
    );
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let recs = records(&out);
    for c in ["decode/256/c1", "decode/256/c4"] {
        let rate = |v: &str| {
            recs.iter()
                .find(|r| r.cell == format!("{v}/{c}"))
                .and_then(|r| r.total_tok_s)
                .unwrap_or_else(|| panic!("{v}/{c}: {recs:#?}"))
        };
        let ratio = rate("base") / rate("slower");
        assert!(
            (1.3..1.75).contains(&ratio),
            "{c}: base {} tok/s, slower {} tok/s: {ratio:.2}x, not 1.5x",
            rate("base"),
            rate("slower")
        );
    }
}
