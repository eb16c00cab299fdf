//! `fit` and `predict` on the seed's H200 table (tests/fixtures/seed-run, written by
//! `scripts/seed-fixture`): fitted on 12 of its 45 measured cells, the other 33 predicted.

use super::cli::Bench;
use super::cli::tempdir::Dir;
use benchspec::results::Record;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `fit` the seed table holding out three cells in four, into `dir/twin.toml`.
pub(super) fn fit_seed(dir: &Dir) -> (PathBuf, super::cli::Done) {
    let twin = dir.path().join("twin.toml");
    let d = Bench::new(&[
        "fit",
        "tests/fixtures/seed-run",
        "--holdout",
        "0.75",
        "--out",
    ])
    .arg(&twin)
    .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    (twin, d)
}

/// The fewest of `n` held-out values a true 90% interval leaves inside 95% of the time (the
/// 5% quantile of Binomial(n, 0.9)): a test of calibrated intervals holds this, not 80% of a
/// handful (7 of 8 fails one run in five with intervals that do cover 90%).
pub(super) fn min_inside(n: usize) -> usize {
    min_inside_at(n, 0.9)
}

/// [`min_inside`] for an interval of level `p` (a twin's `level`: below 9 left-out cells it
/// earns n/(n + 1), not 90%).
pub(super) fn min_inside_at(n: usize, p: f64) -> usize {
    let choose = |n: usize, k: usize| (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    let at_least = |k: usize| -> f64 {
        (k..=n)
            .map(|j| choose(n, j) * p.powi(j as i32) * (1.0 - p).powi((n - j) as i32))
            .sum()
    };
    (0..=n).rev().find(|&k| at_least(k) >= 0.95).unwrap_or(0)
}

/// Whether the share `covered` of `n` held-out values meets [`min_inside`].
pub(super) fn covers_enough(covered: f64, n: usize) -> bool {
    (covered * n as f64).round() as usize >= min_inside(n)
}

#[test]
fn a_calibrated_interval_is_held_to_the_binomial_floor() {
    // By hand: P(X ≥ 6 | n = 8, p = 0.9) = 0.962, P(X ≥ 7) = 0.813; P(X ≥ 3 | n = 4) = 0.948.
    assert_eq!(min_inside(8), 6);
    assert_eq!(min_inside(4), 2);
    assert_eq!(min_inside(2), 1);
    assert_eq!(min_inside(30), 24);
    // P(X ≥ 2 | n = 4, p = 0.8) = 0.973, P(X ≥ 3) = 0.819.
    assert_eq!(min_inside_at(4, 0.8), 2);
}

/// `predict SPEC --twin TWIN --format json`, parsed.
pub(super) fn predict_json(spec: &Path, twin: &Path) -> Value {
    let p = Bench::new(&["predict", "--format", "json", "--twin"])
        .arg(twin)
        .arg(spec)
        .run();
    assert_eq!(p.code, 0, "{}", p.stderr);
    serde_json::from_str(&p.stdout).unwrap()
}

/// Each measured decode cell's prediction error in `doc` (`predict --format json`), percent:
/// the predicted cell's `key` against the measured `pick`.
pub(super) fn decode_errors(
    doc: &Value,
    measured: &[Record],
    key: &str,
    pick: fn(&Record) -> Option<f64>,
) -> Vec<(String, f64)> {
    measured
        .iter()
        .filter(|r| r.cell.starts_with("decode/"))
        .map(|r| {
            let c = doc["cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["cell"] == r.cell.as_str());
            let got = c
                .and_then(|c| c[key].as_f64())
                .unwrap_or_else(|| panic!("{}: {doc:#}", r.cell));
            let want = pick(r).unwrap();
            (format!("{} {key}", r.cell), (got - want) / want * 100.0)
        })
        .collect()
}

#[test]
fn the_seed_table_from_a_quarter_of_its_cells() {
    let dir = Dir::new();
    let (twin, d) = fit_seed(&dir);
    // `held-out error: median X%, max Y% over N cells (TTFT median Z%)`
    let line = d
        .stdout
        .lines()
        .find(|l| l.starts_with("held-out error: median"))
        .unwrap_or_else(|| panic!("{}", d.stdout));
    let nums: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|t| t.parse().ok())
        .collect();
    let (median, max, cells) = (nums[0], nums[1], nums[2]);
    assert!(median <= 8.0 && max <= 20.0, "{line}");
    // TTFT under load: the burst a closed loop sends at its start queues on the API server's
    // one tokenizer (seen 9.7%; 23.5% without that term).
    assert!(nums[3] <= 10.0, "TTFT median: {line}");
    assert!(cells >= 30.0, "{line}");
    the_twin_file_says_what_it_rests_on(&twin, &d.stderr);

    let doc = predict_json(Path::new("specs/h200-nvl-gemma-4-e2b.yaml"), &twin);
    let cells = doc["cells"].as_array().unwrap();
    let c = cells.iter().find(|c| c["cell"] == "decode/8K/c16").unwrap();
    for k in [
        "total_tok_s",
        "per_request_tok_s",
        "ttft_ms_p50",
        "tbt_ms_p50",
    ] {
        assert!(
            c[k].as_f64().unwrap() > 0.0 && c["interval"][k].as_f64().unwrap() > 0.0,
            "{k}: {c:#}"
        );
    }
    assert!(
        (c["total_tok_s"].as_f64().unwrap() - 3529.7).abs() / 3529.7 < 0.05,
        "{c:#}"
    );
    assert_eq!(c["extrapolated"], false);
    assert!(doc["capacity"].is_null());
    // Beyond the fitted 8K..123K: 128K prefill is extrapolated, with a wider interval.
    let far = cells.iter().find(|c| c["cell"] == "prefill/128K").unwrap();
    assert_eq!(far["extrapolated"], true, "{far:#}");
}

/// The twin file: commented, version 3, fitted on at most 12 cells; the intervals earned by
/// leaving fitted cells out, what they rest on, and how predict scores on the held-out cells;
/// the decode step of the H200 profile found (`stderr`: fit's).
fn the_twin_file_says_what_it_rests_on(twin: &Path, stderr: &str) {
    let text = std::fs::read_to_string(twin).unwrap();
    assert!(
        text.starts_with("# A benchspec twin")
            && text.contains("# seconds: fixed cost of every engine step")
    );
    let t: Value = toml::from_str::<toml::Value>(&text)
        .map(|v| serde_json::to_value(v).unwrap())
        .unwrap();
    assert_eq!(t["version"], 3);
    assert!(t["fitted_on"].as_array().unwrap().len() <= 12);
    // Intervals earned by leaving each fitted cell out cover the 33 cells never fitted, for
    // tok/s and for TTFT; what they rest on is in the file.
    for key in ["covered", "ttft_covered"] {
        let c = t["holdout"][key].as_f64().unwrap();
        assert!(c >= 0.8, "{key}: intervals cover {c}");
    }
    assert!(
        t["intervals"]["tok_s"]["cells"].as_u64().unwrap() >= 8,
        "{t:#}"
    );
    assert_eq!(
        t["intervals"]["phases"],
        serde_json::json!(["decode", "prefill"])
    );
    assert!(stderr.contains("left-out cell(s)"), "{stderr}");
    // What predict itself prints (the simulation) on the held-out cells, scored by fit: TTFT
    // within 10% median, intervals covering 80% (seen 8.4%, tok/s 100%, TTFT 93%).
    let s = &t["holdout"]["predicted"];
    assert!(s["ttft_median_pct"].as_f64().unwrap() <= 10.0, "{s:#}");
    for key in ["covered", "ttft_covered"] {
        assert!(s[key].as_f64().unwrap() >= 0.8, "{key}: {s:#}");
    }
    // The simulator's own H200 profile, which reproduces the page: the fit finds its decode costs.
    let step = t["params"]["step_s"].as_f64().unwrap();
    assert!((step - 3.75e-3).abs() < 0.3e-3, "step {step}");
}

/// `--suggest`: with the seed run cut to its 8K and 16K rows, the cells to measure next are
/// the far corners of the matrix, none of them measured.
#[test]
fn suggest_names_the_far_corners_first() {
    let dir = Dir::new();
    let run = dir.path().join("part");
    std::fs::create_dir_all(&run).unwrap();
    let seed = super::root().join("tests/fixtures/seed-run");
    for f in ["manifest.json", "plan.json", "spec.yaml"] {
        std::fs::copy(seed.join(f), run.join(f)).unwrap();
    }
    let kept: String = std::fs::read_to_string(seed.join("results.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| {
            l.contains("\"cell\": \"decode/8K/")
                || l.contains("\"cell\": \"decode/16K/")
                || l.contains("\"cell\": \"prefill/8K\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(kept.lines().count() >= 17, "{kept}");
    std::fs::write(run.join("results.jsonl"), kept).unwrap();
    let twin = dir.path().join("t.toml");
    let d = Bench::new(&[
        "fit",
        run.to_str().unwrap(),
        "--out",
        twin.to_str().unwrap(),
        "--suggest",
        "3",
    ])
    .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    let line = d
        .stdout
        .lines()
        .find(|l| l.starts_with("measure next: "))
        .unwrap_or_else(|| panic!("{}", d.stdout));
    let cells: Vec<&str> = line["measure next: ".len()..].split(", ").collect();
    assert_eq!(cells.len(), 3, "{line}");
    // The longest prefill (only 8K was measured), the far decode corner, then another cell
    // of the longest context (16 or 1 stream, equally far).
    assert_eq!(cells[..2], ["prefill/128K", "decode/123K/c128"], "{line}");
    assert!(cells[2].starts_with("decode/123K/"), "{line}");
    assert!(d.stdout.contains("--only '{"), "{}", d.stdout);
    // The command names the spec the cells come from: here the run's own copy.
    let kept = run.join("spec.yaml");
    assert!(
        d.stdout
            .contains(&format!("benchspec run {} --only", kept.display())),
        "{}",
        d.stdout
    );
    a_spec_that_cannot_be_read_writes_no_twin(&dir, &run);
}

/// A --spec that cannot be read is refused before anything is written (`fit` of `run`).
fn a_spec_that_cannot_be_read_writes_no_twin(dir: &Dir, run: &Path) {
    let other = dir.path().join("other.toml");
    let missing = Bench::new(&[
        "fit",
        run.to_str().unwrap(),
        "--out",
        other.to_str().unwrap(),
        "--suggest",
        "3",
        "--spec",
        "missing.yaml",
    ])
    .run();
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(!other.exists(), "no twin is written when --spec fails");
}

/// `engine: {kind: sim, sim: {twin: FILE}}`: the twin fitted on a quarter of the seed table
/// runs as an engine, and reproduces the measured decode/8K/c8 (1,903 tok/s) within 15%.
#[test]
fn the_twin_runs_as_an_engine() {
    let dir = Dir::new();
    let (twin, _) = fit_seed(&dir);
    let text = std::fs::read_to_string(&twin).unwrap();
    let spec = "version: 1
name: twin
engine: {kind: sim, sim: {twin: twin.toml}}
model: {served_name: gemma}
workload: {max_output_tokens: 4096}
matrix: {contexts: [8K], concurrency: [8]}
phases: {prefill: {enabled: false}, decode: {duration: 3s}}
";
    let (records, run) = super::open::run_spec_with_files(spec, &[("twin.toml", &text)]);
    let r = records.iter().find(|r| r.cell == "decode/8K/c8").unwrap();
    let got = r.total_tok_s.unwrap();
    eprintln!("the twin as an engine, decode/8K/c8: {got} tok/s (measured 1,903.3)");
    assert!(
        (got - 1903.3).abs() / 1903.3 <= 0.15,
        "{got} tok/s vs 1,903 measured"
    );
    // The run keeps the twin it ran.
    assert_eq!(
        std::fs::read_to_string(run.path().join("run/twin.toml")).unwrap(),
        text
    );
    // A missing twin is a spec error at its key.
    let bad = Bench::new(&["validate"])
        .spec("bad.yaml", &spec.replace("twin.toml", "nope.toml"))
        .run();
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("/engine/sim/twin") && bad.stderr.contains("benchspec fit"),
        "{}",
        bad.stderr
    );
}

/// `predict` of a spec with a capacity search: the search is simulated against the twin on a
/// paused clock and agrees with the closed form's inversion (step(N) = the SLO; measured: 55
/// against 55.5);
/// `--out` keeps the whole predicted run, reports marked "predicted", ready for `compare`.
#[test]
fn predict_capacity_and_a_predicted_run() {
    // Seconds of simulation on the CPU: not beside a test that measures a real engine.
    let _cpu = super::cpu();
    let dir = Dir::new();
    let (twin, _) = fit_seed(&dir);
    let spec = dir.path().join("cap.yaml");
    std::fs::write(
        &spec,
        "version: 1
name: cap
engine: {kind: vllm, base_url: 'http://127.0.0.1:9'}
model: {served_name: gemma}
workload: {max_output_tokens: 256}
matrix: {contexts: [8K], concurrency: [8, 32]}
slo: {tpot: {p90: 6ms}}
phases:
  prefill: {enabled: false}
  decode: {duration: 10s}
  capacity: {search: concurrency, min: 1, max: 256, precision: 1, duration: 10s}
report: {formats: [markdown]}
",
    )
    .unwrap();
    let out = dir.path().join("predicted");
    let p = Bench::new(&["predict", "--format", "json", "--out"])
        .arg(&out)
        .arg(&spec)
        .arg("--twin")
        .arg(&twin)
        .run();
    assert_eq!(p.code, 0, "{}", p.stderr);
    let doc: Value = serde_json::from_str(&p.stdout).unwrap();
    let cap = &doc["capacity"]["cells"][0];
    assert_eq!(doc["capacity"]["search"], "concurrency", "{doc:#}");
    let got = cap["value"].as_f64().unwrap_or_else(|| panic!("{doc:#}"));
    // The closed form: the largest N whose step stays within the SLO.
    let t: toml::Value = toml::from_str(&std::fs::read_to_string(&twin).unwrap()).unwrap();
    let k = |name: &str| t["params"][name].as_float().unwrap();
    let kv = 8192.0 + 256.0 / 2.0;
    let want = (6e-3 - k("step_s")) / (k("per_seq_s") + k("per_kv_token_s") * kv);
    eprintln!("capacity at 8K under tpot p90 6ms: simulated {got}, closed form {want:.1}");
    // The simulation is the answer: requests re-admitted through the API server's one
    // tokenizer (12 ms for 8K) are not yet in the engine, so fewer run per step than the
    // probe's concurrency, and the capacity by concurrency is at least the closed form's
    // (seen 65 against 55.6), never far above it.
    assert!(got >= want * 0.95 && got <= want * 1.3, "{got} vs {want}");
    assert!(cap["interval"].as_f64().unwrap() > 0.0, "{cap:#}");
    // The decode cells too; the run directory says it was predicted.
    let decode = doc["cells"].as_array().unwrap();
    assert!(
        decode.iter().any(|c| c["cell"] == "decode/8K/c32"),
        "{doc:#}"
    );
    the_predicted_run_is_marked(&out, &t);
    // A predicted run is compared with a measured one cell by cell.
    let c = Bench::new(&["compare", "tests/fixtures/seed-run", "--format", "json"])
        .arg(&out)
        .run();
    assert!(c.code == 0 || c.code == 1, "{}", c.stderr);
    assert!(c.stdout.contains("decode/8K/c8"), "{}", c.stdout);
}

/// The predicted run in `out`: its report says so, its manifest names the twin (`t`) by the
/// cells it was fitted on.
fn the_predicted_run_is_marked(out: &Path, t: &toml::Value) {
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Predicted, not measured"), "{report}");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let fitted = t["fitted_on"].as_array().unwrap().len() as u64;
    assert_eq!(
        manifest["predicted_by"]["fitted_on"].as_u64(),
        Some(fitted),
        "{manifest:#}"
    );
}

/// Load cells count: a twin fitted on open-loop cells alone (the simulated H200 at 2K and 8K,
/// 4 to 32 requests per second) predicts the same engine's closed-loop decode cells.
#[test]
fn a_twin_fitted_on_load_cells_alone() {
    let _cpu = super::cpu();
    let base = "version: 1
name: load fit
engine: {kind: sim, sim: {profile: h200-gemma-4-e2b}}
model: {served_name: gemma}
workload: {max_output_tokens: 256}
";
    let load = format!(
        "{base}matrix: {{contexts: [2K, 8K], concurrency: [1]}}
phases:
  prefill: {{enabled: false}}
  decode: {{enabled: false}}
  load: {{rates: [4, 16, 32], arrivals: poisson, duration: 8s}}
"
    );
    let (records, run) = super::open::run_spec_paused(&load);
    assert_eq!(
        records
            .iter()
            .filter(|r| r.cell.starts_with("load/"))
            .count(),
        6
    );
    let dir = Dir::new();
    let twin = dir.path().join("twin.toml");
    let fit = Bench::new(&["fit", "--out"])
        .arg(&twin)
        .arg(run.path().join("run"))
        .run();
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    let decode = format!(
        "{base}matrix: {{contexts: [4K], concurrency: [4, 16]}}
phases: {{prefill: {{enabled: false}}, decode: {{duration: 5s}}}}
"
    );
    let spec = dir.path().join("decode.yaml");
    std::fs::write(&spec, &decode).unwrap();
    let doc = predict_json(&spec, &twin);
    let (measured, _) = super::open::run_spec_paused(&decode);
    let errors = decode_errors(&doc, &measured, "per_request_tok_s", |r| {
        r.per_request_tok_s
    });
    eprintln!("fitted on load cells, decode per-request tok/s error: {errors:?}");
    assert_eq!(errors.len(), 2);
    assert!(errors.iter().all(|(_, e)| e.abs() <= 10.0), "{errors:?}");
}

/// The peers' runs brought in by `import` are fitted as load cells: the requests in flight
/// come from Little's law (completed requests per second × mean E2E), which they imply.
#[test]
fn imported_runs_are_fitted() {
    let dir = Dir::new();
    let mut args = vec!["fit".to_string()];
    for (tool, file) in [
        ("guidellm", "guidellm-0.8.1-poisson.json"),
        ("vllm", "vllm-0.34.0-rate4.json"),
        ("aiperf", "aiperf-0.13.0-rate4.json"),
    ] {
        let out = dir.path().join(tool);
        let file = super::repo_path(&format!("tests/fixtures/peers/{file}"));
        let d = Bench::new(&["import", tool, &file, "--out", out.to_str().unwrap()]).run();
        assert_eq!(d.code, 0, "{}", d.stderr);
        args.push(out.to_string_lossy().into_owned());
    }
    let twin = dir.path().join("t.toml");
    args.extend(["--out".into(), twin.to_string_lossy().into_owned()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let d = Bench::new(&argv).run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(d.stderr.contains("fitted 3 cell(s)"), "{}", d.stderr);
    assert!(twin.is_file());
}

/// A sessions run is fitted (docs/twin.md): its cells have a TBT (every gap of every turn)
/// and the requests in flight.
#[test]
fn a_sessions_run_is_fitted() {
    let spec = std::fs::read_to_string(super::repo_path("specs/sessions.yaml"))
        .unwrap()
        .replace("duration: 15s", "duration: 4s");
    let (records, dir) = super::open::run_spec_paused(&spec);
    assert!(
        records
            .iter()
            .all(|r| r.phase != benchspec::plan::Phase::Sessions || r.tbt_ms.is_some())
    );
    let twin = dir.path().join("t.toml");
    let run = dir.path().join("run");
    let d = Bench::new(&[
        "fit",
        run.to_str().unwrap(),
        "--out",
        twin.to_str().unwrap(),
    ])
    .run();
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(d.stderr.contains("fitted 3 cell(s)"), "{}", d.stderr);
}
