//! Which records get a `limit` (docs/results.md): every capacity probe, every saturated load
//! cell, and the last closed-loop decode cell before a throughput plateau — the first step up
//! in concurrency (same variant, same context) whose total tok/s grows less than
//! [`PLATEAU_GAIN`]. Each is judged by [`super::limit::judge`] against its series' step below
//! it; a plateau's cell is judged from the step past it, where the limit shows.

use super::limit::{Cap, Evidence, Judged, Knobs, judge};
use super::{Record, Status};
use crate::plan::Phase;

/// A step up in concurrency that adds less than this fraction to total tok/s is a plateau.
pub const PLATEAU_GAIN: f64 = 0.10;

/// A series: variant, context, and the cell id without its last part.
type Series<'a> = (Option<&'a str>, u64, &'a str);

/// The series a record belongs to (variant, context, the id without its last part) and its
/// place on it (concurrency or rate); `None` for records not on a series.
fn series(r: &Record) -> Option<(Series<'_>, f64)> {
    let (head, last) = r.cell.rsplit_once('/')?;
    let x = match last.as_bytes().first()? {
        b'c' => f64::from(r.concurrency),
        b'r' => r.open.rate_offered.map(|x| x.0)?,
        _ => return None,
    };
    Some(((r.variant.as_deref(), r.context, head), x))
}

fn measured(r: &Record) -> bool {
    matches!(r.status, Status::Valid | Status::Invalid)
}

fn is_probe(r: &Record) -> bool {
    r.phase != Phase::Capacity && r.cell.split('/').any(|s| s == "capacity")
}

fn is_decode(r: &Record) -> bool {
    r.phase == Phase::Decode && r.cell.split('/').any(|s| s == "decode")
}

/// A variant's cap on running requests, and where its settings are changed.
pub type EngineOf<'a> = dyn Fn(Option<&str>) -> (Option<Cap>, Knobs) + 'a;

/// Fill `limit` in `records`: cleared everywhere, then set on the cells judged. `engine`
/// gives a variant's cap on running requests and where its settings are changed.
pub fn fill(records: &mut [Record], engine: &EngineOf, busy: f64) {
    for r in records.iter_mut() {
        r.limit = None;
    }
    let mut out: Vec<(usize, super::limit::Limit)> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if !measured(r) {
            continue;
        }
        let below = step_below(records, r);
        let cold = cold_ttft(records, r);
        let (cap, knobs) = engine(r.variant.as_deref());
        let mut j = Judged {
            at: r,
            base: below,
            above: step_above(records, r),
            cold_ttft: cold,
            cap,
            max_client_busy: busy,
            knobs,
        };
        if is_probe(r) || r.open.saturated.is_some() {
            out.push((i, judge(&j)));
        } else if is_decode(r)
            && !flat(below, r)
            && let Some(next) = step_above(records, r)
            && flat(Some(r), next)
            && let (Some(t0), Some(t1)) = (r.total_tok_s, next.total_tok_s)
        {
            j.at = next;
            j.base = Some(r);
            j.above = step_above(records, next);
            let mut limit = judge(&j);
            let plateau = |t: f64, cell: &str| Evidence {
                name: "total_tok_s".into(),
                value: t,
                source: format!("{cell}: the client's count (the plateau)"),
            };
            limit.evidence.insert(0, plateau(t1, &next.cell));
            limit.evidence.insert(0, plateau(t0, &r.cell));
            out.push((i, limit));
        }
    }
    for (i, l) in out {
        records[i].limit = Some(l);
    }
}

/// Whether the step up from `low` to `high` adds less than [`PLATEAU_GAIN`] to total tok/s:
/// a plateau. Only the cell the first such step starts from is judged (the ones past it
/// are on the plateau already).
fn flat(low: Option<&Record>, high: &Record) -> bool {
    match (low.and_then(|l| l.total_tok_s), high.total_tok_s) {
        (Some(t0), Some(t1)) => t1 < (1.0 + PLATEAU_GAIN) * t0,
        _ => false,
    }
}

/// The measured record of `r`'s series with the highest place below `r`'s.
fn step_below<'a>(records: &'a [Record], r: &Record) -> Option<&'a Record> {
    neighbour(records, r, |x, at| x < at, |a, b| a > b)
}

/// The measured record of `r`'s series with the lowest place above `r`'s.
fn step_above<'a>(records: &'a [Record], r: &Record) -> Option<&'a Record> {
    neighbour(records, r, |x, at| x > at, |a, b| a < b)
}

fn neighbour<'a>(
    records: &'a [Record],
    r: &Record,
    side: fn(f64, f64) -> bool,
    closer: fn(f64, f64) -> bool,
) -> Option<&'a Record> {
    let (key, at) = series(r)?;
    let mut best: Option<(&Record, f64)> = None;
    for o in records.iter().filter(|o| measured(o)) {
        if let Some((k, x)) = series(o)
            && k == key
            && side(x, at)
            && best.is_none_or(|(_, b)| closer(x, b))
        {
            best = Some((o, x));
        }
    }
    best.map(|b| b.0)
}

/// A cold request's TTFT p50 at `r`'s context on `r`'s variant: its prefill cell's, else
/// the same series' concurrency-1 cell's.
fn cold_ttft<'a>(records: &'a [Record], r: &Record) -> Option<(f64, &'a str)> {
    let same = |o: &&Record| measured(o) && o.variant == r.variant && o.context == r.context;
    let prefill = records
        .iter()
        .filter(same)
        .find(|o| o.phase == Phase::Prefill);
    let single = || {
        let key = series(r)?.0;
        records
            .iter()
            .filter(same)
            .find(|o| o.concurrency == 1 && series(o).is_some_and(|(k, _)| k == key))
    };
    let o = prefill.or_else(single)?;
    Some((o.ttft_ms?.p50, o.cell.as_str()))
}
