//! `--shard K/N --split-load`: a load beyond one client machine. The load cells are in every
//! shard, each shard offering 1/N of the rate (of a request bound, of a `max_concurrency`)
//! with arrivals and prompts of its own seed, so that N client machines together offer the
//! rate the spec names as N independent arrival streams; the other cells are split over
//! the shards as `--shard` splits them. Every split shard runs its load cells first, in plan
//! order, then its other cells: the shards started together (`run --start-at`) measure
//! each load cell at the same time. `benchspec merge` makes one record of each load cell
//! from every shard's requests ([`whole`] gives the cell back its whole load).

use super::load_cells::Bound;
use super::{Cell, Measure, Plan, Shard};

/// The part of `total` shard `k` of `n` takes (the first `total % n` shards one more).
fn part(total: u32, shard: Shard) -> u32 {
    total / shard.n + u32::from(shard.k <= total % shard.n)
}

impl Plan {
    /// This plan as shard `shard` of N client machines that split its load cells.
    pub fn shard_split(mut self, shard: Shard) -> Plan {
        let is_load = |c: &Cell| matches!(c.measure, Measure::Load(_));
        let others = Plan {
            cells: self.cells.iter().filter(|c| !is_load(c)).cloned().collect(),
            ..self.clone()
        };
        let mut assign = others.shard_of_cells(shard.n).into_iter();
        let keep = shard.k - 1;
        let cells = std::mem::take(&mut self.cells);
        self.cells = cells
            .into_iter()
            .filter_map(|mut c| {
                if !is_load(&c) {
                    let s = assign.next().unwrap_or(0);
                    let mine = if c.runs() { s == keep } else { keep == 0 };
                    return mine.then_some(c);
                }
                if !c.runs() {
                    return (keep == 0).then_some(c);
                }
                if let Measure::Load(load) = &mut c.measure {
                    if !load.rate.is_inf() {
                        load.rate.0 /= f64::from(shard.n);
                    }
                    if let Bound::Requests(n) = load.bound {
                        load.bound = Bound::Requests(part(n, shard).max(1));
                    }
                    load.max_concurrency = load.max_concurrency.map(|m| part(m, shard).max(1));
                }
                Some(c)
            })
            .collect();
        // The load cells first (a stable sort keeps the plan's order within each group).
        self.cells.sort_by_key(|c| !is_load(c));
        self.estimate_s = self.cells.iter().map(|c| c.estimate_s).sum();
        // Each machine its own arrivals and prompts.
        self.workload.seed ^= u64::from(shard.k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.shard = Some(shard);
        self.split = true;
        self
    }
}

/// The load cell the shards' parts `cells` (one per shard) came from: their rates, request
/// bounds and caps added up.
pub fn whole(cells: &[&Cell]) -> Option<Cell> {
    let mut out = (*cells.first()?).clone();
    let Measure::Load(load) = &mut out.measure else {
        return Some(out);
    };
    let parts = || {
        cells.iter().filter_map(|c| match &c.measure {
            Measure::Load(l) => Some(*l),
            _ => None,
        })
    };
    if !load.rate.is_inf() {
        load.rate.0 = parts().map(|l| l.rate.0).sum();
    }
    if let Bound::Requests(_) = load.bound {
        let n = parts()
            .map(|l| match l.bound {
                Bound::Requests(n) => n,
                Bound::Duration(_) => 0,
            })
            .sum();
        load.bound = Bound::Requests(n);
    }
    if load.max_concurrency.is_some() {
        load.max_concurrency = Some(parts().filter_map(|l| l.max_concurrency).sum());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shard holds every load cell at a third of its load, before its other cells;
    /// the other runnable cells are each in exactly one shard; the parts' loads add back up
    /// to the whole.
    #[test]
    fn load_cells_are_in_every_shard_the_others_in_one() {
        let text = "version: 1\nname: s\nengine: {kind: vllm, base_url: 'http://127.0.0.1:9'}\n\
             model: {served_name: m, max_model_len: 100000}\nworkload: {max_output_tokens: 16}\n\
             matrix: {contexts: [512, 1K], concurrency: [1, 2, 4]}\n\
             phases: {load: {contexts: [512], rates: [3, 30], requests: 10, max_concurrency: 4}}\n";
        let full = crate::plan::config::of_yaml(text).sizing_plan();
        let shards: Vec<Plan> = (1..=3)
            .map(|k| full.clone().shard_split(Shard { k, n: 3 }))
            .collect();
        let is_load = |c: &Cell| matches!(c.measure, Measure::Load(_));
        for p in &shards {
            let kinds: Vec<bool> = p.cells.iter().map(is_load).collect();
            let loads = kinds.iter().filter(|l| **l).count();
            assert_eq!(loads, 2, "{:?}", p.cells);
            assert!(
                kinds[..loads].iter().all(|l| *l),
                "load cells first: {kinds:?}"
            );
        }
        let order = |cells: &[Cell]| -> Vec<String> {
            cells
                .iter()
                .filter(|c| is_load(c))
                .map(|c| c.id.clone())
                .collect()
        };
        assert_eq!(order(&shards[1].cells), order(&full.cells), "in plan order");
        for c in full.runnable() {
            let holders: Vec<&Cell> = shards
                .iter()
                .filter_map(|p| p.cells.iter().find(|d| d.id == c.id))
                .collect();
            if !is_load(c) {
                assert_eq!(holders.len(), 1, "{}", c.id);
                continue;
            }
            assert_eq!(holders.len(), 3, "{}", c.id);
            let (Some(whole), Measure::Load(want)) = (whole(&holders), c.measure) else {
                panic!("{}", c.id)
            };
            let Measure::Load(got) = whole.measure else {
                panic!("{}", c.id)
            };
            assert!((got.rate.0 - want.rate.0).abs() < 1e-9, "{}", c.id);
            assert_eq!(got.bound, want.bound, "{}", c.id);
            assert_eq!(got.max_concurrency, want.max_concurrency, "{}", c.id);
        }
        let seeds: std::collections::BTreeSet<u64> =
            shards.iter().map(|p| p.workload.seed).collect();
        assert_eq!(seeds.len(), 3, "each shard draws its own arrivals");
        assert!(shards.iter().all(|p| p.split));
    }

    #[test]
    fn parts_add_up_to_the_whole() {
        for (total, n) in [(10, 3), (2, 3), (9, 3), (1, 1)] {
            let sum: u32 = (1..=n).map(|k| part(total, Shard { k, n })).sum();
            assert_eq!(sum, total, "{total} over {n}");
        }
    }
}
