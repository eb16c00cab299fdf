//! The frontier comparison on frontiers worked out by hand.

use super::*;

fn pt(cell: &str, per_gpu: f64, per_user: f64, usd: Option<f64>) -> FrontierPoint {
    FrontierPoint {
        cell: cell.into(),
        variant: None,
        load: String::new(),
        total_tok_s: per_gpu,
        tok_s_per_gpu: per_gpu,
        per_user_tok_s: per_user,
        usd_per_mtok: usd,
    }
}

fn view(context: u64, points: Vec<FrontierPoint>) -> FrontierView {
    let cost_points = points
        .iter()
        .filter(|p| p.usd_per_mtok.is_some())
        .cloned()
        .collect();
    FrontierView {
        context,
        context_label: format!("{}K", context / 1024),
        gpu_count: 1,
        cells: points.len(),
        all: points.clone(),
        points,
        cost_points,
        left_out: Vec::new(),
    }
}

/// Base frontier at 1K: a (100, 10), b (50, 40). Cases for the new frontier, by hand:
/// - ahead: (120, 10) dominates a; (50, 40) equals b (not dominated either way); nothing
///   of the base dominates (120, 10) or (50, 40).
/// - behind: (90, 10) is dominated by a; (50, 40) equals b.
/// - mixed: (110, 12) dominates a; (40, 30) is dominated by b.
/// - even: the same points.
#[test]
fn each_base_point_dominated_or_not_and_each_new_one() {
    let base = [view(
        1024,
        vec![pt("a", 100.0, 10.0, None), pt("b", 50.0, 40.0, None)],
    )];
    let cases = [
        (vec![(120.0, 10.0), (50.0, 40.0)], "ahead", 1, 0),
        (vec![(90.0, 10.0), (50.0, 40.0)], "behind", 0, 1),
        (vec![(110.0, 12.0), (40.0, 30.0)], "mixed", 1, 1),
        (vec![(100.0, 10.0), (50.0, 40.0)], "even", 0, 0),
    ];
    for (points, verdict, base_dom, new_dom) in cases {
        let new = [view(
            1024,
            points
                .iter()
                .enumerate()
                .map(|(i, (x, y))| pt(&format!("n{i}"), *x, *y, None))
                .collect(),
        )];
        let c = compare(&base, &new, 0.05);
        assert_eq!(c.changes.len(), 1, "{verdict}");
        let ch = &c.changes[0];
        assert_eq!(ch.verdict, verdict);
        assert_eq!(ch.base_dominated.len(), base_dom, "{verdict}");
        assert_eq!(ch.new_dominated.len(), new_dom, "{verdict}");
        assert_eq!(c.summary, format!("{verdict} at 1K (tok/s per GPU)"));
    }
    let c = compare(&base, &[view(1024, vec![pt("n", 120.0, 10.0, None)])], 0.05);
    assert_eq!(
        c.changes[0].base_dominated,
        ["`a` (100.0 tok/s per GPU at 10.0 per user)"]
    );
}

/// Two runs of one spec differ by noise: a point better by 0.1% on one axis and worse by
/// 0.1% on the other, or better by 1% on both, is even under a 5% margin; 6% better on one
/// axis and 1% worse on the other is ahead (worked by hand).
#[test]
fn noise_below_the_margin_is_even() {
    let base = [view(1024, vec![pt("a", 100.0, 10.0, None)])];
    let cases = [
        ((100.1, 9.99), "even"),
        ((101.0, 10.1), "even"),
        ((106.0, 9.9), "ahead"),
        ((94.0, 10.0), "behind"),
        ((106.0, 9.4), "even"),
    ];
    for ((x, y), verdict) in cases {
        let new = [view(1024, vec![pt("n", x, y, None)])];
        assert_eq!(
            compare(&base, &new, 0.05).changes[0].verdict,
            verdict,
            "{x} {y}"
        );
    }
    // No margin: exact dominance, as before.
    let new = [view(1024, vec![pt("n", 100.1, 10.0, None)])];
    assert_eq!(compare(&base, &new, 0.0).changes[0].verdict, "ahead");
}

/// Lower $/Mtok is better: $2 at 10 per user dominates $3 at 10 per user.
#[test]
fn the_cost_frontier_is_compared_where_both_runs_have_a_cost() {
    let base = [view(1024, vec![pt("a", 100.0, 10.0, Some(3.0))])];
    let new = [view(1024, vec![pt("n", 100.0, 10.0, Some(2.0))])];
    let c = compare(&base, &new, 0.05);
    assert_eq!(
        c.summary,
        "even at 1K (tok/s per GPU); ahead at 1K ($/Mtok)"
    );
    // One run without a cost: the per-GPU frontier only.
    let c = compare(&base, &[view(1024, vec![pt("n", 100.0, 10.0, None)])], 0.05);
    assert_eq!(c.changes.len(), 1);
}

/// No context with points in both runs: it says it judged nothing, never "even".
#[test]
fn no_common_context_judges_nothing() {
    let base = [
        view(1024, vec![pt("a", 1.0, 1.0, None)]),
        view(4096, vec![]),
    ];
    let new = [
        view(2048, vec![pt("n", 1.0, 1.0, None)]),
        view(4096, vec![]),
    ];
    let c = compare(&base, &new, 0.05);
    assert!(c.changes.is_empty());
    assert_eq!(
        c.summary,
        "judged nothing: no context has frontier points in both runs"
    );
    assert_eq!(
        (c.only_base, c.only_new),
        (vec!["1K".to_string()], vec!["2K".to_string()])
    );
    assert_eq!(compare(&[], &[], 0.05).summary, c.summary);
}
