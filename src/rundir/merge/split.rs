//! Load cells split over the shards (`run --split-load`): each shard measured a part of every
//! one, and the merge makes one record of each from all the parts' requests
//! ([`super::combine`]). A cell is the whole load only when every shard measured its part
//! and their sending windows overlap (at least [`MIN_OVERLAP`] of their union); otherwise
//! its record is marked invalid, saying why.

use super::Part;
use super::combine::combine;
use crate::plan::{Cell, Measure, Plan};
use crate::results::{Record, Status};
use crate::rundir::requests::{OpenRequest, Request, RequestLine};
use crate::rundir::{REQUESTS, Result};

/// The least overlap (intersection / union) of the shards' measured windows of a split
/// load cell for its record to stand for the whole load.
pub const MIN_OVERLAP: f64 = 0.9;

/// Words of the reason a cell whose shards did not run together is invalid.
pub(super) const NOT_TOGETHER: &str = "did not run it together";

/// Whether the parts split the load cells (`--split-load`), so that each measured its
/// part of every one.
fn split(parts: &[Part]) -> bool {
    !parts.is_empty() && parts.iter().all(|p| p.plan.split)
}

/// A load cell of a split plan: measured by every shard.
pub(super) fn is_split(parts: &[Part], cell: &str) -> bool {
    split(parts)
        && parts.iter().any(|p| {
            p.plan
                .cells
                .iter()
                .any(|c| c.id == cell && matches!(c.measure, Measure::Load(_)))
        })
}

/// A runnable split load cell some shard has no record of.
pub(super) struct Partial {
    cell: String,
    missing: Vec<u32>,
    n: u32,
}

impl Partial {
    /// `` `load/1K/r4` (shard 2 of 2) ``.
    pub(super) fn describe(&self) -> String {
        let ks: Vec<String> = self.missing.iter().map(u32::to_string).collect();
        format!("`{}` (shard {} of {})", self.cell, ks.join(", "), self.n)
    }
}

/// The shards (from 1) with no record of `cell`.
fn missing_shards(parts: &[Part], cell: &str) -> Vec<u32> {
    let n = parts.first().map_or(0, |p| p.shard().1);
    let has = |k: u32| {
        parts
            .iter()
            .any(|p| p.shard().0 == k && p.records.iter().any(|r| r.cell == cell))
    };
    (1..=n).filter(|&k| !has(k)).collect()
}

/// The runnable split load cells of `plan` that some shard did not record.
pub(super) fn partial(parts: &[Part], plan: &Plan) -> Vec<Partial> {
    let n = parts.first().map_or(0, |p| p.shard().1);
    plan.cells
        .iter()
        .filter(|c| c.runs() && is_split(parts, &c.id))
        .filter_map(|c| {
            let missing = missing_shards(parts, &c.id);
            (!missing.is_empty()).then(|| Partial {
                cell: c.id.clone(),
                missing,
                n,
            })
        })
        .collect()
}

/// The plan's cell of split load cell `id`: the parts' loads added up when every shard's
/// is there; else the whole plan's (`whole`, from the spec), as the merged plan names the
/// cell whatever was measured of it.
pub(super) fn whole_cell(parts: &[Part], id: &str, whole: Option<&Plan>) -> Option<Cell> {
    let all: Vec<&Cell> = parts
        .iter()
        .filter_map(|p| p.plan.cells.iter().find(|d| d.id == id))
        .collect();
    let mut cell = crate::plan::split::whole(&all)?;
    let n = parts[0].shard().1 as usize;
    if all.len() < n
        && let Some(w) = whole.and_then(|w| w.cells.iter().find(|c| c.id == id))
    {
        cell.measure = w.measure;
    }
    Some(cell)
}

/// The one record of a split load cell: every part's record and requests, combined. A
/// part skipped it (past a rate that saturated that shard): that part's record, saying
/// so. Parts missing: the parts there are, combined and marked invalid. Parts that did not
/// run together: combined and marked invalid.
pub(super) fn combined(parts: &[Part], plan: &Plan, record: &Record) -> Result<Record> {
    let cell = record.cell.as_str();
    let mut each = Vec::new();
    let mut cells = Vec::new();
    for p in parts {
        if let Some(r) = p.records.iter().find(|r| r.cell == cell) {
            if r.status == Status::Skipped {
                let mut r = r.clone();
                r.reasons
                    .push(format!("skipped by shard {}/{}", p.shard().0, p.shard().1));
                return Ok(r);
            }
            each.push((r.clone(), p.open_requests(cell)?));
            cells.extend(p.plan.cells.iter().find(|c| c.id == cell));
        }
    }
    let missing = missing_shards(parts, cell);
    let given = crate::plan::split::whole(&cells);
    let (Some(whole), Some(given)) = (plan.cells.iter().find(|c| c.id == cell), given) else {
        return Ok(record.clone());
    };
    if !missing.is_empty() {
        let mut rec = combine(&given, &plan.workload, &each);
        let ks: Vec<String> = missing.iter().map(u32::to_string).collect();
        invalid(
            &mut rec,
            format!(
                "part of the load only: shard(s) {} of {} did not measure this split load cell (not given, or stopped before it)",
                ks.join(", "),
                parts[0].shard().1
            ),
        );
        return Ok(rec);
    }
    let mut rec = combine(whole, &plan.workload, &each);
    if let Some(why) = apart(parts, &each) {
        invalid(&mut rec, why);
    }
    Ok(rec)
}

/// `rec` marked invalid (a failed one stays failed) for `why`.
fn invalid(rec: &mut Record, why: String) {
    if rec.status == Status::Valid {
        rec.status = Status::Invalid;
    }
    rec.reasons.push(why);
}

/// Why the parts `each` (of `parts`, in shard order) do not make one load: their measured
/// windows overlap less than [`MIN_OVERLAP`], or a window is unknown.
fn apart(parts: &[Part], each: &[(Record, Vec<OpenRequest>)]) -> Option<String> {
    let windows: Option<Vec<(f64, f64)>> = each.iter().map(|(r, l)| window(r, l)).collect();
    let Some(windows) = windows else {
        return Some(format!(
            "cannot tell whether the shards {NOT_TOGETHER}: a part's record has no window (started_at, and its requests or measured_s)"
        ));
    };
    let o = overlap(&windows);
    if o >= MIN_OVERLAP {
        return None;
    }
    let t0 = windows.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
    let each: Vec<String> = parts
        .iter()
        .zip(&windows)
        .map(|(p, (a, b))| format!("shard {} {:.1}–{:.1} s", p.shard().0, a - t0, b - t0))
        .collect();
    Some(format!(
        "the shards {NOT_TOGETHER}: their sending windows overlap {:.0}% (under {:.0}%): {}; start them at one instant with `run --start-at`",
        o * 100.0,
        MIN_OVERLAP * 100.0,
        each.join(", ")
    ))
}

/// A part's sending window in Unix seconds: from `window_started_at` (else `started_at`, to
/// the second, for records of older runs) to its last send — the time it offered its load;
/// a slower drain of its last requests is no sign the parts ran apart. Without its requests,
/// the record's whole `measured_s`.
fn window(r: &Record, lines: &[OpenRequest]) -> Option<(f64, f64)> {
    let at = r.open.window_started_at.as_deref().unwrap_or(&r.started_at);
    let start = crate::results::unix_of_rfc3339(at)?;
    let sent = lines
        .iter()
        .map(|l| l.sent_s)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    Some((start, start + sent.or(r.measured_s)?))
}

/// How much the windows overlap: the time inside all of them over the time inside any
/// (from the first start to the last end); 0 when they span no time.
pub(super) fn overlap(windows: &[(f64, f64)]) -> f64 {
    let start = windows.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
    let end = windows
        .iter()
        .map(|w| w.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let inner_start = windows
        .iter()
        .map(|w| w.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let inner_end = windows.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
    let union = end - start;
    if windows.is_empty() || union.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return 0.0;
    }
    (inner_end - inner_start).max(0.0) / union
}

impl Part {
    /// The requests of `cell` this part saved (an open-loop cell's).
    fn open_requests(&self, cell: &str) -> Result<Vec<OpenRequest>> {
        let path = self.dir.file(REQUESTS);
        if !path.is_file() {
            return Ok(Vec::new());
        }
        let lines: Vec<RequestLine> = crate::rundir::jsonl::read_lines(&path)?;
        Ok(lines
            .into_iter()
            .filter(|l| l.cell == cell)
            .filter_map(|l| match l.request {
                Request::Open(o) => Some(o),
                Request::Window(_) | Request::Turn(_) => None,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{MIN_OVERLAP, overlap, window};
    use crate::rundir::OpenRequest;

    /// A shard's window is its sending time: started 10:00:00.000, sends to 3.5 s, its last
    /// request ending at 9.0 s (a slow drain) — [start, start + 3.5], not + 9.0; without its
    /// requests, the record's `measured_s`.
    #[test]
    fn a_window_ends_at_the_last_send_not_the_drain() {
        let mut r: crate::results::Record = serde_json::from_value(serde_json::json!({
            "schema": "benchspec.result.v1", "cell": "load/1K/r4", "phase": "load",
            "context": 1024, "concurrency": 0, "status": "valid", "reasons": [],
            "started_at": "2026-12-07T10:00:00Z", "measured_s": 9.0, "prompt_tokens": 1024,
            "output_tokens": 1, "token_source": "usage", "total_tok_s": 1.0,
            "per_request_tok_s": null, "avg_active": null, "requests_started": 8,
            "completed": 8, "errors": 0, "error_kinds": {}, "tbt_ms": null, "ttft_ms": null,
            "prefill_tok_s": null, "labels": {}, "server_prompt_tokens": null
        }))
        .unwrap_or_else(|e| unreachable!("{e}"));
        r.open.window_started_at = Some("2026-12-07T10:00:00.000Z".into());
        let line = |sent: f64| OpenRequest {
            due_s: sent,
            admitted_s: sent,
            sent_s: sent,
            first_token_s: None,
            last_token_s: None,
            end_s: 9.0,
            prompt_tokens: 1024,
            output_tokens: 1,
            usage_prompt_tokens: None,
            usage_cached_tokens: None,
            error: None,
            itl_us: Vec::new(),
            endpoint: None,
            adapter: None,
        };
        let lines: Vec<OpenRequest> = (0..8).map(|i| line(f64::from(i) * 0.5)).collect();
        let t0 = 1_796_637_600.0;
        assert_eq!(window(&r, &lines), Some((t0, t0 + 3.5)));
        assert_eq!(window(&r, &[]), Some((t0, t0 + 9.0)));
    }

    /// Overlaps worked by hand: intersection over union.
    #[test]
    fn overlap_is_intersection_over_union() {
        // Windows, their overlap, and whether that is together.
        type Case<'a> = (&'a [(f64, f64)], f64, bool);
        let cases: &[Case] = &[
            // [0,10] and [4,14]: 6 s in both of 14 s in either.
            (&[(0.0, 10.0), (4.0, 14.0)], 6.0 / 14.0, false),
            (&[(0.0, 10.0), (0.0, 10.0)], 1.0, true),
            // 9 of 11 s: 82%, under 90%.
            (&[(0.0, 10.0), (1.0, 11.0)], 9.0 / 11.0, false),
            // 9.5 of 10.5 s: 90.5%.
            (&[(0.0, 10.0), (0.5, 10.5)], 9.5 / 10.5, true),
            // One inside the other: 8 of 10 s.
            (&[(0.0, 10.0), (1.0, 9.0)], 0.8, false),
            // Three: inside all [1,10] = 9 s of [0,11] = 11 s.
            (&[(0.0, 10.0), (1.0, 11.0), (0.5, 10.5)], 9.0 / 11.0, false),
            // Apart: nothing in common.
            (&[(0.0, 4.0), (6.0, 10.0)], 0.0, false),
            (&[(5.0, 5.0), (5.0, 5.0)], 0.0, false),
            (&[], 0.0, false),
        ];
        for &(w, want, together) in cases {
            let got = overlap(w);
            assert!((got - want).abs() < 1e-12, "{w:?}: {got} vs {want}");
            assert_eq!(got >= MIN_OVERLAP, together, "{w:?}");
        }
    }
}
