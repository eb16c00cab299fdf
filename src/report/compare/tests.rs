//! compare's verdicts, table by table: floors, thresholds, significance, capacities.

use super::*;

/// A decode record with TTFT p50 `ttft` (ms) and total tok/s `tok_s`, each repeat's
/// values given when `reps` is.
fn rec(ttft: f64, tok_s: f64, reps: Option<(&[f64], &[f64])>) -> Record {
    let mut r: Record = serde_json::from_value(serde_json::json!({
        "schema": "benchspec.result.v1", "cell": "decode/1K/c1", "phase": "decode",
        "context": 1024, "concurrency": 1, "status": "valid", "reasons": [],
        "started_at": "", "measured_s": 2.0, "prompt_tokens": 1024, "output_tokens": 100,
        "token_source": "usage", "total_tok_s": tok_s, "per_request_tok_s": null,
        "avg_active": 1.0, "requests_started": 2, "completed": 1, "errors": 0,
        "error_kinds": {}, "tbt_ms": null, "prefill_tok_s": null, "labels": {},
        "server_prompt_tokens": null,
        "ttft_ms": {"mean": ttft, "min": ttft, "p50": ttft, "p90": ttft, "p99": ttft, "max": ttft}
    }))
    .unwrap_or_else(|e| unreachable!("{e}"));
    if let Some((t, k)) = reps {
        r.per_repeat = Some(
            [
                ("ttft_ms_p50".to_string(), t.to_vec()),
                ("total_tok_s".to_string(), k.to_vec()),
            ]
            .into(),
        );
    }
    r
}

fn verdict(row: &Row, key: &str) -> Verdict {
    row.metrics
        .iter()
        .find(|m| m.key == key)
        .map_or(Verdict::NotComparable, |m| m.verdict)
}

#[test]
fn floors_thresholds_and_significance() {
    let rules = Rules::default();
    // 3.0 → 3.2 ms is +6.7%, past the threshold, but under the 1 ms floor.
    let row = row(&rec(3.0, 1000.0, None), &rec(3.2, 1000.0, None), &rules);
    assert_eq!(verdict(&row, "ttft_ms_p50"), Verdict::NoSignificantChange);
    assert!(!row.regression);
    // Without repeats a change past threshold and floor counts, as before.
    let row = super::row(&rec(30.0, 1000.0, None), &rec(40.0, 900.0, None), &rules);
    assert_eq!(verdict(&row, "ttft_ms_p50"), Verdict::Regression);
    assert_eq!(verdict(&row, "total_tok_s"), Verdict::Regression);
    // With repeats, −8% from noisy values is not significant; −10% from steady ones is.
    let noisy = (&[30.0, 30.0, 30.0][..], &[1000.0, 850.0, 1150.0][..]);
    let moved = (&[30.0, 30.0, 30.0][..], &[920.0, 780.0, 1060.0][..]);
    let row = super::row(
        &rec(30.0, 1000.0, Some(noisy)),
        &rec(30.0, 920.0, Some(moved)),
        &rules,
    );
    assert_eq!(verdict(&row, "total_tok_s"), Verdict::NoSignificantChange);
    let steady = (&[30.0, 30.0, 30.0][..], &[1000.0, 1002.0, 998.0][..]);
    let slower = (&[30.0, 30.0, 30.0][..], &[900.0, 901.0, 899.0][..]);
    let row = super::row(
        &rec(30.0, 1000.0, Some(steady)),
        &rec(30.0, 900.0, Some(slower)),
        &rules,
    );
    assert_eq!(verdict(&row, "total_tok_s"), Verdict::Regression);
    let row = super::row(
        &rec(30.0, 900.0, Some(slower)),
        &rec(30.0, 1000.0, Some(steady)),
        &rules,
    );
    assert_eq!(verdict(&row, "total_tok_s"), Verdict::Improvement);
    assert!(!row.regression);
}

/// A capacity search's summary record: `capacity` found, bounded as `bound`.
fn capacity(value: Option<f64>, bound: &str) -> Record {
    serde_json::from_value(serde_json::json!({
        "schema": "benchspec.result.v1", "cell": "capacity/1K", "phase": "capacity",
        "context": 1024, "concurrency": 0, "status": "valid", "reasons": [],
        "started_at": "", "measured_s": null, "prompt_tokens": 1024, "output_tokens": null,
        "token_source": null, "total_tok_s": null, "per_request_tok_s": null,
        "avg_active": null, "requests_started": 0, "completed": 0, "errors": 0,
        "error_kinds": {}, "tbt_ms": null, "prefill_tok_s": null, "labels": {},
        "server_prompt_tokens": null, "ttft_ms": null,
        "capacity": value, "capacity_bound": bound
    }))
    .unwrap_or_else(|e| unreachable!("{e}"))
}

#[test]
fn a_capacity_below_the_searchs_min_is_a_regression_and_at_least_is_not_a_value() {
    let rules = Rules::default();
    let exact = capacity(Some(34.0), "exact");
    // Not even `min` met the SLO: 34 → below 1 is the worst regression, not a gap.
    let row = row(&exact, &capacity(None, "below_min"), &rules);
    assert_eq!(verdict(&row, "capacity"), Verdict::Regression);
    assert!(row.regression);
    // "At least 4" (the search's max met the SLO) is no measured 4: neither a −88%
    // regression nor, the other way round, a +750% improvement.
    let at_least = capacity(Some(4.0), "at_least");
    for (base, new) in [(&exact, &at_least), (&at_least, &exact)] {
        let row = super::row(base, new, &rules);
        assert_eq!(verdict(&row, "capacity"), Verdict::NotComparable);
        assert!(!row.regression);
    }
    // Two exact capacities are judged as before.
    let row = super::row(&exact, &capacity(Some(30.0), "exact"), &rules);
    assert_eq!(verdict(&row, "capacity"), Verdict::Regression);
}
