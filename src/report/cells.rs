//! Every cell of a run as the report shows it: the plan's cells in run order with their
//! records, then records of cells the plan does not list, each with its status (`missing`
//! for a planned cell without a record) and the reasons it is skipped, invalid or failed.

use super::format::ctx;
use super::view::{CellStatus, CellView};
use crate::plan::Phase;
use crate::results::{Record, Status};
use crate::rundir::Run;

/// A cell the plan lists, or one only a record names.
struct Planned {
    id: String,
    variant: Option<String>,
    phase: Phase,
    context: u64,
    concurrency: u32,
    clamped: bool,
    skip: Option<String>,
}

impl From<&crate::plan::Cell> for Planned {
    fn from(c: &crate::plan::Cell) -> Planned {
        Planned {
            id: c.id.clone(),
            variant: c.variant.clone(),
            phase: c.phase(),
            context: c.context,
            concurrency: c.concurrency,
            clamped: c.clamped,
            skip: c.skip.clone(),
        }
    }
}

impl From<&Record> for Planned {
    fn from(r: &Record) -> Planned {
        Planned {
            id: r.cell.clone(),
            variant: r.variant.clone(),
            phase: r.phase,
            context: r.context,
            concurrency: r.concurrency,
            clamped: false,
            skip: None,
        }
    }
}

/// Every cell: the plan's, then records of cells it does not list; prefill cells first, as
/// the seed page lists them, each phase in run order. The cells of a phase the spec turns
/// off are not cells of the run (nor skipped ones).
pub(super) fn cells(run: &Run) -> Vec<CellView> {
    let planned = &run.plan.cells;
    let slo = &run.spec.slo;
    let mut cells: Vec<CellView> = planned
        .iter()
        .map(|c| view(&c.into(), run.record(&c.id), slo))
        .collect();
    for r in &run.records {
        if !planned.iter().any(|c| c.id == r.cell) {
            cells.push(view(&r.into(), Some(r), slo));
        }
    }
    cells.retain(|c| !disabled(c));
    cells.sort_by_key(|c| c.phase != Phase::Prefill);
    cells
}

/// A skipped cell of a phase the spec turns off (`phases.prefill.enabled: false`).
fn disabled(c: &CellView) -> bool {
    let off = format!("`phases.{}.enabled` is false", c.phase.as_str());
    c.status == CellStatus::Skipped && c.reasons.contains(&off)
}

/// What a cell's load is: `4` (requests at once), `2 req/s`, `unlimited` (rate `inf`). A
/// load cell whose id names no rate (`import/aiperf/1`) shows its record's offered rate, or
/// `—` where none was offered.
fn level_label(p: &Planned, record: Option<&Record>) -> String {
    let last = p.id.rsplit('/').next().unwrap_or_default();
    match (p.phase, last.strip_prefix('r')) {
        (Phase::Load, Some("inf")) => "unlimited".into(),
        (Phase::Load, Some(rate)) => format!("{rate} req/s"),
        (Phase::Load, None) => match record.and_then(|r| r.open.rate_offered) {
            Some(r) if r.is_inf() => "unlimited".into(),
            Some(r) => format!(
                "{} req/s",
                super::format::grouped(r.0, 3)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            ),
            None => "—".into(),
        },
        (Phase::Capacity, _) => "—".into(),
        (Phase::Sessions, Some(rate)) => format!("{rate} sessions/s"),
        (Phase::Replay, _) => "trace".into(),
        (Phase::Sessions, None) => format!("{} users", p.concurrency),
        _ => p.concurrency.to_string(),
    }
}

/// A replay cell's context: its trace's prompt lengths (`59–3,582`), not one context.
fn replay_context(record: Option<&Record>) -> String {
    match record.and_then(|r| r.trace.as_ref()?.input_length) {
        Some([lo, hi]) => format!(
            "{}–{}",
            super::format::grouped(lo as f64, 0),
            super::format::grouped(hi as f64, 0)
        ),
        None => "trace".into(),
    }
}

fn view(p: &Planned, record: Option<&Record>, slo: &crate::spec::Slo) -> CellView {
    let (status, status_label) = match record.map(|r| r.status) {
        Some(Status::Valid) => (CellStatus::Valid, "Valid"),
        Some(Status::Invalid) => (CellStatus::Invalid, "Invalid"),
        Some(Status::Failed) => (CellStatus::Failed, "Failed"),
        Some(Status::Skipped) => (CellStatus::Skipped, "Skipped"),
        None if p.skip.is_some() => (CellStatus::Skipped, "Skipped"),
        None => (CellStatus::Missing, "Not run"),
    };
    // A capacity search's probes are decode (or load) cells under `capacity/`.
    let probe = p.phase != Phase::Capacity && p.id.split('/').any(|s| s == "capacity");
    CellView {
        id: p.id.clone(),
        variant: p.variant.clone(),
        phase: p.phase,
        phase_label: match p.phase {
            _ if probe => "Capacity probe",
            Phase::Prefill => "Prefill",
            Phase::Decode => "Sustained decode",
            Phase::Load => "Open-loop load",
            Phase::Capacity => "Capacity search",
            Phase::Sessions => "Sessions",
            Phase::Replay => "Trace replay",
        }
        .into(),
        probe,
        level_label: level_label(p, record),
        context: p.context,
        context_label: match p.phase {
            Phase::Replay => replay_context(record),
            _ => ctx(p.context),
        },
        concurrency: p.concurrency,
        status,
        status_label: match record.and_then(|r| r.open.saturated.as_ref()) {
            Some(_) if status.measured() => format!("{status_label} · saturated"),
            _ => status_label.into(),
        },
        saturated: record
            .filter(|_| status.measured())
            .and_then(|r| r.open.saturated.clone()),
        // A prefill prompt shorter than its context was clamped to max_model_len − 1, also
        // where the plan does not say so (a record of a cell it does not list).
        clamped: p.clamped
            || record.is_some_and(|r| r.phase == Phase::Prefill && r.prompt_tokens < r.context),
        reasons: match record {
            Some(r) => r.reasons.clone(),
            None => p.skip.iter().cloned().collect(),
        },
        effective_concurrency: record.and_then(super::observe::effective_concurrency),
        slo: super::slo_terms::slo_values(record, slo),
        // Set by `frontier::mark` once the run's frontiers are known.
        tok_s_per_gpu: None,
        on_frontier: None,
        on_cost_frontier: None,
        record: record.cloned(),
    }
}
