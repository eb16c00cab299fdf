//! Sharding: split the runnable cells of a plan over N machines, deterministically and
//! completely. Shards are contiguous runs of the plan's order, so each shard keeps a
//! context's concurrencies together (its warmed prompt cache), and a `decode-warmup` prefill
//! never leaves the decode cell whose warm-up measures it. Skipped cells belong to shard 1,
//! so that merged shards list every cell of the plan exactly once.

use super::{Measure, Plan, PlanError, Prefill};
use serde::{Deserialize, Serialize};

/// Shard K of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 1.
    pub k: u32,
    /// How many shards.
    pub n: u32,
}

impl Shard {
    /// Parse `K/N`.
    pub fn parse(text: &str) -> Result<Shard, PlanError> {
        let bad = || PlanError::BadShard(text.to_string());
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl Plan {
    /// The shard index (0-based) of every cell: units of the run order are cut into N
    /// contiguous parts of about equal estimated time, each unit going where its midpoint
    /// falls. Skipped cells get shard 0.
    pub fn shard_of_cells(&self, n: u32) -> Vec<u32> {
        let units = self.units();
        let weight = |u: &Vec<usize>| -> f64 {
            let w: f64 = u.iter().map(|&i| self.cells[i].estimate_s).sum();
            if w > 0.0 { w } else { 1e-3 }
        };
        let total: f64 = units.iter().map(weight).sum();
        let mut assign = vec![0u32; self.cells.len()];
        let mut before = 0.0;
        for unit in &units {
            let w = weight(unit);
            let mid = (before + w / 2.0) / total.max(f64::MIN_POSITIVE);
            let shard = ((mid * f64::from(n)).floor() as u32).min(n - 1);
            for &i in unit {
                assign[i] = shard;
            }
            before += w;
        }
        assign
    }

    /// Runnable cells grouped into what must run on one machine: a decode-warmup prefill
    /// with the next cell of its context.
    fn units(&self) -> Vec<Vec<usize>> {
        let mut units: Vec<Vec<usize>> = Vec::new();
        let mut join_next = false;
        for (i, cell) in self.cells.iter().enumerate().filter(|(_, c)| c.runs()) {
            match units.last_mut() {
                Some(last) if join_next => last.push(i),
                _ => units.push(vec![i]),
            }
            join_next = cell.measure == Measure::Prefill(Prefill::DecodeWarmup);
        }
        units
    }

    /// This plan cut down to one shard.
    pub fn shard(mut self, shard: Shard) -> Plan {
        let assign = self.shard_of_cells(shard.n);
        let keep = shard.k - 1;
        let cells = std::mem::take(&mut self.cells);
        self.cells = cells
            .into_iter()
            .zip(assign)
            .filter(|(c, s)| if c.runs() { *s == keep } else { keep == 0 })
            .map(|(c, _)| c)
            .collect();
        self.estimate_s = self.cells.iter().map(|c| c.estimate_s).sum();
        self.shard = Some(shard);
        self
    }
}
