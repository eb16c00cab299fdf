use super::*;

fn point(run: &str, value: f64, repeats: &[f64]) -> Point {
    Point {
        run: run.into(),
        started_at: format!("2026-12-0{}T00:00:00Z", run.trim_start_matches('r')),
        value,
        ci95: None,
        labels: BTreeMap::new(),
        flag: None,
        change_pct: None,
        p_value: None,
        repeats: repeats.to_vec(),
    }
}

fn flags(metric: &str, values: &[f64], repeats: &[&[f64]]) -> Vec<Option<Flag>> {
    let points = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            point(
                &format!("r{}", i + 1),
                *v,
                repeats.get(i).copied().unwrap_or(&[]),
            )
        })
        .collect();
    let mut s = Series {
        spec: "s".into(),
        cell: "decode/1K/c4".into(),
        metric: metric.into(),
        higher_is_better: RATES.iter().any(|m| m.0 == metric),
        points,
    };
    judge(&mut s, &Rules::default());
    s.points.iter().map(|p| p.flag).collect()
}

#[test]
fn each_point_against_the_points_before_it() {
    use Flag::{Improvement as I, Regression as R};
    type Case<'a> = (&'a str, &'a [f64], &'a [Option<Flag>]);
    let cases: [Case; 8] = [
        // Three alike, a fourth 40% slower: only the newest is flagged.
        (
            "total_tok_s",
            &[1000.0, 1010.0, 990.0, 714.0],
            &[None, None, None, Some(R)],
        ),
        // Latency up 40%.
        (
            "tbt_ms_p50",
            &[4.0, 4.1, 3.9, 5.6],
            &[None, None, None, Some(R)],
        ),
        // Faster is an improvement.
        (
            "total_tok_s",
            &[1000.0, 1010.0, 990.0, 1400.0],
            &[None, None, None, Some(I)],
        ),
        // Within the 5% threshold: nothing.
        (
            "total_tok_s",
            &[1000.0, 1030.0, 980.0, 960.0],
            &[None, None, None, None],
        ),
        // With 1–2 earlier points the threshold decides; from 3 on, the earlier points spread as
        // much as the change: not significant.
        (
            "total_tok_s",
            &[1000.0, 1300.0, 800.0, 1200.0, 850.0],
            &[None, Some(I), Some(R), None, None],
        ),
        // Under the 1 ms floor.
        (
            "ttft_ms_p50",
            &[2.0, 2.0, 2.0, 2.5],
            &[None, None, None, None],
        ),
        // Two points: the threshold alone decides.
        ("total_tok_s", &[1000.0, 900.0], &[None, Some(R)]),
        // Judged against the last 5 only: a slow drift of 3% a run is never flagged.
        (
            "total_tok_s",
            &[1000.0, 970.0, 941.0, 913.0, 885.0, 859.0, 833.0],
            &[None; 7],
        ),
    ];
    for (metric, values, want) in cases {
        assert_eq!(flags(metric, values, &[]), want, "{metric} {values:?}");
    }
}

#[test]
fn repeats_are_tested_by_welch() {
    // 8% slower with tight repeats: significant.
    let tight: [&[f64]; 3] = [
        &[1000.0, 1002.0, 998.0],
        &[1001.0, 999.0, 1000.0],
        &[920.0, 921.0, 919.0],
    ];
    assert_eq!(
        flags("total_tok_s", &[1000.0, 1000.0, 920.0], &tight)[2],
        Some(Flag::Regression)
    );
    // 8% slower with repeats as noisy as the change: not significant.
    let noisy: [&[f64]; 2] = [&[900.0, 1100.0, 1000.0], &[800.0, 1040.0, 920.0]];
    assert_eq!(flags("total_tok_s", &[1000.0, 920.0], &noisy)[1], None);
}

#[test]
fn globs() {
    let cases = [
        ("decode/*", "decode/1K/c4", true),
        ("decode/*/c4", "decode/1K/c4", true),
        ("decode/*/c4", "decode/1K/c16", false),
        ("*/c?", "decode/1K/c4", true),
        ("prefill/*", "decode/1K/c4", false),
        ("decode/1K/c4", "decode/1K/c4", true),
    ];
    for (p, t, want) in cases {
        assert_eq!(glob(p, t), want, "{p} {t}");
    }
}

#[test]
fn ordered_by_a_label_as_versions() {
    let mut rows = Vec::new();
    for (run, version, value) in [
        ("r1", "0.10.0", 900.0),
        ("r2", "0.9.2", 1000.0),
        ("r3", "0.9.10", 1000.0),
    ] {
        let mut p = point(run, value, &[]);
        p.labels.insert("engine_version".into(), version.into());
        rows.push(Row0 {
            spec: "s".into(),
            cell: "c".into(),
            metric: "total_tok_s".into(),
            point: p,
        });
    }
    let q = TrendQuery {
        by: Some("engine_version".into()),
        ..TrendQuery::default()
    };
    let s = series(rows.clone(), &q);
    let order: Vec<&str> = s[0].points.iter().map(|p| p.run.as_str()).collect();
    assert_eq!(order, ["r2", "r3", "r1"]);
    assert_eq!(s[0].newest_regression().map(|p| p.run.as_str()), Some("r1"));
    let by_time = series(
        rows,
        &TrendQuery {
            last: Some(2),
            ..TrendQuery::default()
        },
    );
    let order: Vec<&str> = by_time[0].points.iter().map(|p| p.run.as_str()).collect();
    assert_eq!(order, ["r2", "r3"]);
}

#[test]
fn an_unknown_metric_is_refused_naming_the_metrics() {
    let q = |m: &[&str]| TrendQuery {
        metrics: m.iter().map(|s| s.to_string()).collect(),
        ..TrendQuery::default()
    };
    assert!(q(&[]).check().is_ok());
    assert!(q(&["total_tok_s", "ttft_ms_p99"]).check().is_ok());
    let e = q(&["total_tok_s", "bogus_metric"]).check().unwrap_err();
    assert!(matches!(e, HistoryError::Usage(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("`bogus_metric`"), "{text}");
    for m in known_metrics() {
        assert!(text.contains(m), "{m} named: {text}");
    }
    assert_eq!(known_metrics().len(), 13);
}
