//! Load cells split over the shards (`run --split-load`): each shard measured a part of every
//! one, and the merge makes one record of each from all the parts' requests, through the
//! caller's [`Combine`].

use super::Part;
use crate::plan::{Cell, Plan, Workload};
use crate::results::Record;
use crate::rundir::requests::{OpenRequest, Request, RequestLine};
use crate::rundir::{REQUESTS, Result};

/// Makes one record of a load cell every shard measured a part of: the whole cell, the
/// plan's workload, and each part's record with its requests.
pub type Combine<'a> = dyn Fn(&Cell, &Workload, &[(Record, Vec<OpenRequest>)]) -> Record + 'a;

/// Whether every part split the load cells (`--split-load`), so that each measured its
/// part of every one.
fn split(parts: &[Part]) -> bool {
    parts.len() > 1 && parts.iter().all(|p| p.plan.split)
}

/// A load cell of a split plan: measured by every shard.
pub(super) fn is_split(parts: &[Part], cell: &str) -> bool {
    split(parts)
        && parts[0]
            .plan
            .cells
            .iter()
            .any(|c| c.id == cell && matches!(c.measure, crate::plan::Measure::Load(_)))
}

/// The one record of a split load cell: every part's record and requests, combined.
pub(super) fn combined(
    parts: &[Part],
    plan: &Plan,
    cell: &str,
    combine: &Combine<'_>,
) -> Result<Record> {
    let mut each = Vec::new();
    for p in parts {
        if let Some(r) = p.records.iter().find(|r| r.cell == cell) {
            each.push((r.clone(), p.open_requests(cell)?));
        }
    }
    let whole = plan.cells.iter().find(|c| c.id == cell);
    match whole {
        Some(c) if each.len() > 1 => Ok(combine(c, &plan.workload, &each)),
        _ => Ok(each.swap_remove(0).0),
    }
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
