//! Repeats, confidence intervals and `compare` with statistics, against the simulator with
//! its seeded run-to-run noise (2% of the step time here, redrawn every quarter second of the
//! engine's time). The runs are on a paused clock in this process (`run_spec_paused`): the
//! noise the repeats see is the model's alone, never this machine's load, and a run takes
//! milliseconds (these two tests took 234 s of a real-time suite). The tolerances are the
//! statistics' own, written beside each check.

use super::Edit;
use super::cli::Bench;
use super::open::run_spec_paused;
use benchspec::results::{Record, Status};
use serde_json::Value;

/// 20 decode cells of the tiny engine with noise, each measured 3 times. The engine is made
/// 4 times slower (2.4 ms steps) so that a step is longer than the 1 ms tick of tokio's
/// timer wheel, which ends every modelled step on a paused clock.
const SPEC: &str = "version: 1
name: repeats
engine: {kind: sim, sim: {profile: tiny, noise: 0.02, noise_seed: 1, time_scale: 4}}
model: {served_name: tiny}
workload: {max_output_tokens: 32}
matrix: {contexts: [256, 512], concurrency: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
repeats: 3
phases: {prefill: {enabled: false}, decode: {duration: 500ms}}
";

fn ci(r: &Record, key: &str) -> f64 {
    r.ci95
        .as_ref()
        .and_then(|c| c.get(key))
        .copied()
        .unwrap_or(f64::NAN)
}

/// The sample standard deviation behind a half-width: h × √N / t(0.975, N − 1).
fn sd(r: &Record, key: &str) -> f64 {
    let n = f64::from(r.repeats.unwrap_or(1));
    ci(r, key) * n.sqrt() / benchspec::results::significance::t_critical(0.05, n - 1.0)
}

#[test]
fn the_interval_shrinks_as_one_over_the_square_root_of_the_repeats() {
    let spec = |n: u32| {
        SPEC.edit(
            "contexts: [256, 512], concurrency: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
            "contexts: [256, 512], concurrency: [1, 2, 3, 4]",
        )
        .edit("repeats: 3", &format!("repeats: {n}"))
        .edit("duration: 500ms", "duration: 300ms")
    };
    let decode = |(records, dir): (Vec<Record>, _)| {
        let cells: Vec<Record> = records
            .into_iter()
            .filter(|r| r.status != Status::Skipped)
            .collect();
        (cells, dir)
    };
    let (three, _a) = decode(run_spec_paused(&spec(3)));
    let (twelve, _b) = decode(run_spec_paused(&spec(12)));
    assert_eq!((three.len(), twelve.len()), (8, 8));
    for r in three.iter().chain(&twelve) {
        assert_eq!(r.status, Status::Valid, "{r:#?}");
        let values = &r.per_repeat.as_ref().unwrap()["total_tok_s"];
        assert_eq!(values.len() as u32, r.repeats.unwrap());
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!(
            (r.total_tok_s.unwrap() - mean).abs() < 0.01,
            "the record holds the mean"
        );
    }
    let mean =
        |v: &[Record], f: &dyn Fn(&Record) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    // The spread of the runs is the same whatever N: the standard deviations behind the
    // half-widths agree within the band below on the average of 8 cells (a 3-value standard
    // deviation is itself noisy: its mean over 8 cells falls under 0.35 of the truth about
    // once in 700 runs) …
    let (s3, s12) = (
        mean(&three, &|r| sd(r, "total_tok_s")),
        mean(&twelve, &|r| sd(r, "total_tok_s")),
    );
    assert!(
        (0.35..=2.5).contains(&(s3 / s12)),
        "sd {s3} at N = 3, {s12} at N = 12"
    );
    // … so the half-width falls as t(N − 1)/√N: 4.303/√3 against 2.201/√12, a factor 3.9
    // (2 from √N alone, the rest from Student's t); 3.45 expected with the 3-value bias.
    let (h3, h12) = (
        mean(&three, &|r| ci(r, "total_tok_s")),
        mean(&twelve, &|r| ci(r, "total_tok_s")),
    );
    assert!(
        (1.4..=10.0).contains(&(h3 / h12)),
        "half-width {h3} at N = 3, {h12} at N = 12"
    );
}

/// `benchspec compare --format json` of two run directories.
fn compare(base: &std::path::Path, new: &std::path::Path) -> (i32, Value) {
    let done = Bench::new(&["compare", "--format", "json"])
        .arg(base)
        .arg(new)
        .run();
    let json =
        serde_json::from_str(&done.stdout).unwrap_or_else(|e| panic!("{e}: {}", done.stderr));
    (done.code, json)
}

/// The cells with any metric judged `verdict`, each with those metrics, their change and
/// p-value: `decode/256/c6 ttft_ms_p50 +6.1% p 0.01`.
fn judged(c: &Value, verdict: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in c["rows"].as_array().unwrap() {
        let moved: Vec<String> = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["verdict"] == verdict)
            .map(|m| {
                let change = m["change_pct"].as_f64().unwrap_or(f64::NAN);
                format!("{} {change:+.1}% p {}", m["key"], m["p_value"])
            })
            .collect();
        if !moved.is_empty() {
            out.push(format!(
                "{} {}",
                r["cell"].as_str().unwrap(),
                moved.join(", ")
            ));
        }
    }
    out
}

#[test]
fn compare_tells_noise_from_a_real_change() {
    let (a, dir_a) = run_spec_paused(SPEC);
    let (b, dir_b) = run_spec_paused(&SPEC.edit("noise_seed: 1", "noise_seed: 2"));
    let (c, dir_c) = run_spec_paused(&SPEC.edit(
        "noise_seed: 1, time_scale: 4",
        "noise_seed: 3, time_scale: 4.4",
    ));
    assert!(a.len() >= 20 && b.len() == a.len() && c.len() == a.len());
    let run = |d: &super::cli::tempdir::Dir| d.path().join("run");

    // Two runs of one engine with different noise: no significant change in any of the 20
    // cells. A window holds two noise draws of 2%: a 3-repeat mean moves by ~0.8%, the
    // difference of two by ~1.2%, so a 5% change is a 4-sigma event, and it must also pass
    // Welch's test. (On a real clock a burst of CPU from another test that covered all three
    // repeats of a cell was a real change of that cell: a full suite once saw two move.)
    let (code, same) = compare(&run(&dir_a), &run(&dir_b));
    let moved: Vec<String> = judged(&same, "regression")
        .into_iter()
        .chain(judged(&same, "improvement"))
        .collect();
    assert!(moved.is_empty(), "{moved:?} of {}", a.len());
    assert_eq!(code, 0);
    let total = same["rows"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "total_tok_s")
        .unwrap();
    assert!(
        total["p_value"].is_number() && total["base_ci95"].is_number(),
        "{total}"
    );

    // The same engine 10% slower (time scale 4.4 for 4): every cell is flagged, by a
    // significant regression of its total or per-request tok/s (−9.1% ± 1.2% each); the
    // slowdown as a whole is the median of total tok/s over the 20 cells.
    let (code, slower) = compare(&run(&dir_a), &run(&dir_c));
    assert_eq!(code, 1);
    let mut totals = Vec::new();
    for row in slower["rows"].as_array().unwrap() {
        assert_eq!(row["regression"], true, "{row}");
        let metric = |key: &str| {
            row["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["key"] == key)
                .unwrap()
                .clone()
        };
        let rates = [metric("total_tok_s"), metric("per_request_tok_s")];
        assert!(
            rates.iter().any(|m| m["verdict"] == "regression"
                && m["p_value"].as_f64().unwrap() < 0.05
                && m["change_pct"].as_f64().unwrap() < -5.0),
            "{row}"
        );
        totals.push(rates[0]["change_pct"].as_f64().unwrap());
    }
    totals.sort_by(f64::total_cmp);
    let median = totals[totals.len() / 2];
    assert!((-11.0..-7.0).contains(&median), "{totals:?}");
}
