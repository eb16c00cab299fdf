//! The order of a merged run: the plan the spec expands to (without the server's limits,
//! which only a run knows) gives each cell its place, so the merged `plan.json` and
//! `results.jsonl` list the cells as one unsharded run would — also when split shards ran
//! their load cells first, or shard 1 holds the skipped cells of the whole plan.

use super::Part;
use crate::plan::{Cell, Measure, Plan, Shard};
use crate::results::Record;
use std::collections::HashMap;

/// The whole plan the shards' spec expands to; `None` when the spec copy cannot be read.
pub(super) fn whole_plan(first: &Part) -> Option<Plan> {
    let path = first.spec.path.display().to_string();
    let files = crate::spec::files::Files::Kept(first.dir.path().to_path_buf());
    let loaded = crate::spec::parse_in(
        &path,
        &first.spec.text,
        crate::spec::Stage::Validate,
        &|_| None,
        files,
    )
    .ok()?;
    Some(crate::plan::expand(
        &loaded.spec,
        &crate::plan::sim::rates_for,
    ))
}

/// The cells shards `shards` (of `n`) of `whole` hold, as `run --shard` (with `split`,
/// `--split-load`) assigns them; a split load cell, in every shard, is not among them.
pub(super) fn cells_of_shards(whole: &Plan, shards: &[u32], n: u32, split: bool) -> Vec<Cell> {
    if shards.is_empty() || n == 0 {
        return Vec::new();
    }
    if split {
        return shards
            .iter()
            .flat_map(|&k| whole.clone().shard_split(Shard { k, n }).cells)
            .filter(|c| !(c.runs() && matches!(c.measure, Measure::Load(_))))
            .collect();
    }
    let shard = whole.shard_of_cells(n);
    whole
        .cells
        .iter()
        .zip(shard)
        .filter(|(c, k)| match c.runs() {
            true => shards.contains(&(k + 1)),
            false => shards.contains(&1),
        })
        .map(|(c, _)| c.clone())
        .collect()
}

/// `cells` in `whole`'s order; a cell `whole` does not hold stays after the cell it
/// followed.
pub(super) fn in_plan_order(cells: Vec<Cell>, whole: Option<&Plan>) -> Vec<Cell> {
    let rank = ranks(whole);
    let mut last = 0;
    let mut keyed: Vec<((usize, usize), Cell)> = cells
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let key = match rank.get(c.id.as_str()) {
                Some(&r) => {
                    last = r;
                    (r, 0)
                }
                None => (last, i + 1),
            };
            (key, c)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, c)| c).collect()
}

/// Each cell id of `whole`, with its place.
fn ranks(whole: Option<&Plan>) -> HashMap<&str, usize> {
    whole
        .map(|w| {
            w.cells
                .iter()
                .enumerate()
                .map(|(i, c)| (c.id.as_str(), i))
                .collect()
        })
        .unwrap_or_default()
}

/// Every part's records in `plan`'s order of their cells; a record of no cell of the plan
/// (a capacity search's probe) goes before the next cell its part recorded, as it was
/// written.
pub(super) fn records_in_order<'a>(parts: &'a [Part], plan: &Plan) -> Vec<&'a Record> {
    let place: HashMap<&str, usize> = plan
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    let mut keyed: Vec<((usize, usize, usize), &Record)> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        let mut owner = usize::MAX;
        for (i, r) in part.records.iter().enumerate().rev() {
            if let Some(&at) = place.get(r.cell.as_str()) {
                owner = at;
            }
            keyed.push(((owner, p, i), r));
        }
    }
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let text = "version: 1\nname: s\nengine: {kind: vllm, base_url: 'http://127.0.0.1:9'}\n\
             model: {served_name: m, max_model_len: 100000}\nworkload: {max_output_tokens: 16}\n\
             matrix: {contexts: [512, 1K], concurrency: [1, 2]}\n\
             phases: {load: {contexts: [512, 1K], rates: [2, 4], requests: 10}}\n";
        crate::plan::config::of_yaml(text).sizing_plan()
    }

    /// Split shards' cells (load cells first in each) put back in the whole plan's order,
    /// every cell once; an id the whole plan lacks stays after the cell it followed.
    #[test]
    fn shards_cells_go_back_in_plan_order() {
        let whole = plan();
        let ids = |cells: &[Cell]| cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let mut cells: Vec<Cell> = Vec::new();
        for k in [2, 1] {
            for c in whole.clone().shard_split(Shard { k, n: 2 }).cells {
                if !cells.iter().any(|d| d.id == c.id) {
                    cells.push(c);
                }
            }
        }
        assert_ne!(ids(&cells), ids(&whole.cells), "the shards' order differs");
        let mut extra = whole.cells[1].clone();
        extra.id = "extra".into();
        let at = cells.iter().position(|c| c.id == whole.cells[1].id);
        cells.insert(at.map_or(0, |i| i + 1), extra);
        let mut want = ids(&whole.cells);
        want.insert(2, "extra".into());
        assert_eq!(ids(&in_plan_order(cells, Some(&whole))), want);
    }

    /// The cells of a missing split shard: its own non-load cells, no load cell.
    #[test]
    fn a_missing_split_shard_holds_no_load_cell() {
        let whole = plan();
        let two = cells_of_shards(&whole, &[2], 2, true);
        assert!(!two.is_empty());
        assert!(two.iter().all(|c| !matches!(c.measure, Measure::Load(_))));
        let one = cells_of_shards(&whole, &[1], 2, true);
        let runnable = whole
            .runnable()
            .filter(|c| !matches!(c.measure, Measure::Load(_)));
        assert_eq!(one.len() + two.len(), runnable.count());
    }
}
