//! The frontier's logic on points whose frontiers were worked out by hand (each case says
//! which point dominates which).

use super::*;
use crate::results::Record;

/// Points, and which of them are on the frontier.
type Case<'a> = (&'a [(f64, f64)], &'a [bool]);

#[test]
fn pareto_keeps_exactly_the_undominated_points() {
    let cases: [Case; 5] = [
        // (80,20) dominates (60,15); (100,10) dominates (100,5) (same x, higher y).
        (
            &[
                (100.0, 10.0),
                (80.0, 20.0),
                (60.0, 15.0),
                (50.0, 30.0),
                (100.0, 5.0),
            ],
            &[true, true, false, true, false],
        ),
        // Equal points: neither is strictly better, both stay.
        (&[(10.0, 10.0), (10.0, 10.0)], &[true, true]),
        // One point dominating all others.
        (
            &[(5.0, 5.0), (1.0, 1.0), (2.0, 3.0), (5.0, 4.0)],
            &[true, false, false, false],
        ),
        (&[(1.0, 2.0)], &[true]),
        (&[], &[]),
    ];
    for (points, want) in cases {
        assert_eq!(pareto(points), want, "{points:?}");
    }
}

/// A cell of `variant` at `context`: decode at concurrency `c` (or the load cell `r{rate}`
/// when `rate` is given), status `status`, total and per-request tok/s.
fn cell(
    id: &str,
    context: u64,
    status: &str,
    total: Option<f64>,
    per_user: Option<f64>,
) -> CellView {
    let parts: Vec<&str> = id.split('/').collect();
    let variant = (parts.len() == 4).then(|| parts[0].to_string());
    let last = parts.last().copied().unwrap_or_default();
    let (phase, concurrency, level) = match (last.strip_prefix('c'), last.strip_prefix('r')) {
        (Some(c), _) => (Phase::Decode, c.parse().unwrap_or(0), c.to_string()),
        (_, Some(r)) => (Phase::Load, 0, format!("{r} req/s")),
        _ => (Phase::Prefill, 1, "1".to_string()),
    };
    let record: Record = serde_json::from_value(serde_json::json!({
        "schema": "benchspec.result.v1", "cell": id, "phase": phase.as_str(),
        "context": context, "concurrency": concurrency, "status": status,
        "reasons": if status == "valid" { vec![] } else { vec!["TTFT p50 over 1 s"] },
        "started_at": "", "measured_s": 2.0, "prompt_tokens": context, "output_tokens": 100,
        "token_source": "usage", "total_tok_s": total, "per_request_tok_s": per_user,
        "avg_active": 1.0, "requests_started": 2, "completed": 1, "errors": 0,
        "error_kinds": {}, "tbt_ms": null, "prefill_tok_s": null, "labels": {},
        "server_prompt_tokens": null, "ttft_ms": null, "variant": variant
    }))
    .unwrap_or_else(|e| unreachable!("{e}"));
    let status = match status {
        "valid" => CellStatus::Valid,
        "invalid" => CellStatus::Invalid,
        _ => CellStatus::Failed,
    };
    CellView {
        id: id.into(),
        variant: record.variant.clone(),
        phase,
        phase_label: String::new(),
        probe: id.contains("/capacity/"),
        level_label: level,
        context,
        context_label: format!("{}K", context / 1024),
        concurrency,
        status,
        status_label: String::new(),
        saturated: None,
        clamped: false,
        reasons: record.reasons.clone(),
        effective_concurrency: None,
        slo: Vec::new(),
        tok_s_per_gpu: None,
        on_frontier: None,
        on_cost_frontier: None,
        record: Some(record),
    }
}

/// Two variants and a load cell at 1K on 2 GPUs costing $4/h. Points (per GPU, per user):
/// fast c1 (50, 100), fast c4 (180, 90), slow c1 (25, 50), slow c4 (200, 60), r2 (150, 95).
/// slow c1 is dominated by fast c1 (and every other); the other four each lead somewhere:
/// slow c4 in per-GPU, fast c1 in per-user, fast c4 and r2 between (nothing is ≥ both).
/// $/Mtok = 4 / 3600 / total × 10⁶ falls as total rises, so the cost frontier is the same
/// four: slow c4 4/3600/400e-6 = 2.7778.
fn run() -> Vec<CellView> {
    vec![
        cell("fast/prefill/1K", 1024, "valid", None, None),
        cell("fast/decode/1K/c1", 1024, "valid", Some(100.0), Some(100.0)),
        cell("fast/decode/1K/c4", 1024, "valid", Some(360.0), Some(90.0)),
        cell(
            "fast/decode/1K/c8",
            1024,
            "invalid",
            Some(500.0),
            Some(80.0),
        ),
        cell("fast/decode/1K/c16", 1024, "valid", Some(520.0), None),
        cell(
            "fast/capacity/1K/c32",
            1024,
            "valid",
            Some(900.0),
            Some(99.0),
        ),
        cell("slow/decode/1K/c1", 1024, "valid", Some(50.0), Some(50.0)),
        cell("slow/decode/1K/c4", 1024, "valid", Some(400.0), Some(60.0)),
        cell("fast/load/1K/r2", 1024, "valid", Some(300.0), Some(95.0)),
        cell("fast/decode/2K/c1", 2048, "failed", None, None),
    ]
}

#[test]
fn frontiers_per_context_with_gpus_cost_and_what_was_left_out() {
    let fronts = frontiers(&run(), Some(2), Some(4.0));
    assert_eq!(fronts.len(), 2);
    let f = &fronts[0];
    assert_eq!((f.context, f.gpu_count, f.cells), (1024, 2, 5));
    let ids = |ps: &[FrontierPoint]| ps.iter().map(|p| p.cell.clone()).collect::<Vec<_>>();
    let want = [
        "slow/decode/1K/c4",
        "fast/decode/1K/c4",
        "fast/load/1K/r2",
        "fast/decode/1K/c1",
    ];
    assert_eq!(ids(&f.points), want);
    assert_eq!(ids(&f.cost_points), want);
    let slow = &f.points[0];
    assert_eq!(slow.variant.as_deref(), Some("slow"));
    assert_eq!(slow.load, "4 at once");
    assert_eq!((slow.tok_s_per_gpu, slow.per_user_tok_s), (200.0, 60.0));
    assert_eq!(slow.usd_per_mtok, Some(2.7778));
    assert_eq!(f.points[2].load, "2 req/s");
    let left: Vec<(&str, &str)> = f
        .left_out
        .iter()
        .map(|l| (l.cell.as_str(), l.reason.as_str()))
        .collect();
    assert_eq!(
        left,
        [
            ("fast/decode/1K/c8", "invalid: TTFT p50 over 1 s"),
            ("fast/decode/1K/c16", "no per-request tok/s"),
        ]
    );
    // A context whose only cell failed: no point, one left out, no frontier.
    let g = &fronts[1];
    assert!(g.points.is_empty() && g.cost_points.is_empty());
    assert_eq!(g.left_out[0].reason, "failed: TTFT p50 over 1 s");
}

#[test]
fn without_a_cost_there_is_no_cost_frontier_and_one_gpu_by_default() {
    let fronts = frontiers(&run(), None, None);
    let f = &fronts[0];
    assert_eq!(f.gpu_count, 1);
    assert!(f.cost_points.is_empty());
    assert_eq!(f.points[0].tok_s_per_gpu, 400.0);
    assert_eq!(f.points[0].usd_per_mtok, None);
}

#[test]
fn cells_are_marked_with_per_gpu_rates_and_frontier_membership() {
    let mut cells = run();
    let fronts = frontiers(&cells, Some(2), Some(4.0));
    mark(&mut cells, &fronts);
    let by = |id: &str| cells.iter().find(|c| c.id == id).cloned();
    let got = |id: &str| by(id).map(|c| (c.tok_s_per_gpu, c.on_frontier, c.on_cost_frontier));
    assert_eq!(
        got("slow/decode/1K/c4"),
        Some((Some(200.0), Some(true), Some(true)))
    );
    assert_eq!(
        got("slow/decode/1K/c1"),
        Some((Some(25.0), Some(false), Some(false)))
    );
    // Invalid: a per-GPU rate, but no point.
    assert_eq!(got("fast/decode/1K/c8"), Some((Some(250.0), None, None)));
    assert_eq!(got("fast/prefill/1K"), Some((None, None, None)));
    assert_eq!(got("fast/capacity/1K/c32"), Some((None, None, None)));
}
