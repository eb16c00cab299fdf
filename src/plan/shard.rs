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

impl Shard {
    /// `--shard TEXT`: `K/N`, or `auto` — read from a scheduler's environment (`var` looks a
    /// variable up): a Slurm job array (`SLURM_ARRAY_TASK_ID` counted from
    /// `SLURM_ARRAY_TASK_MIN`, default 0, out of `SLURM_ARRAY_TASK_COUNT`, or
    /// `…_MAX − …_MIN + 1`), or a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, from 0, out of
    /// `BENCHSPEC_SHARD_COUNT`). Returns the shard and, for `auto`, where it came from.
    pub fn resolve(
        text: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Shard, Option<String>), PlanError> {
        if text.trim() != "auto" {
            return Shard::parse(text).map(|s| (s, None));
        }
        let num = |name: &str| -> Result<Option<i64>, PlanError> {
            match var(name) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    PlanError::NoScheduler(format!("{name}={v} is not a whole number"))
                }),
            }
        };
        let found = match slurm(&num)? {
            Some(found) => Some(found),
            None => kubernetes(&num)?,
        };
        let (k0, n, from) = match found {
            Some(found) => found,
            None => {
                return Err(PlanError::NoScheduler(
                    "no scheduler's variables found (SLURM_ARRAY_TASK_ID, or JOB_COMPLETION_INDEX with BENCHSPEC_SHARD_COUNT); give the shard as K/N".into(),
                ));
            }
        };
        let in_range = (0..n).contains(&k0) && n <= i64::from(u32::MAX);
        if !in_range {
            return Err(PlanError::NoScheduler(format!(
                "{from} does not name a shard from 1 to {n} (task {} of {n}; arrays must be contiguous)",
                k0 + 1
            )));
        }
        let shard = Shard {
            k: (k0 + 1) as u32,
            n: n as u32,
        };
        Ok((shard, Some(format!("shard {shard} from {from}"))))
    }
}

/// A variable as a whole number, when set.
type Num<'a> = dyn Fn(&str) -> Result<Option<i64>, PlanError> + 'a;

/// A Slurm job array's task: (index from 0, count, where it came from).
fn slurm(num: &Num<'_>) -> Result<Option<(i64, i64, String)>, PlanError> {
    let Some(id) = num("SLURM_ARRAY_TASK_ID")? else {
        return Ok(None);
    };
    let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let n = match (num("SLURM_ARRAY_TASK_COUNT")?, num("SLURM_ARRAY_TASK_MAX")?) {
        (Some(c), _) => c,
        (None, Some(max)) => max - min + 1,
        (None, None) => {
            return Err(PlanError::NoScheduler(
                "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX".into(),
            ));
        }
    };
    let from = format!("Slurm (SLURM_ARRAY_TASK_ID={id}, first {min}, {n} tasks)");
    Ok(Some((id - min, n, from)))
}

/// A Kubernetes Indexed Job's index: (index from 0, count, where it came from).
fn kubernetes(num: &Num<'_>) -> Result<Option<(i64, i64, String)>, PlanError> {
    let Some(index) = num("JOB_COMPLETION_INDEX")? else {
        return Ok(None);
    };
    let Some(n) = num("BENCHSPEC_SHARD_COUNT")? else {
        return Err(PlanError::NoScheduler(
            "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job): set BENCHSPEC_SHARD_COUNT to the Job's `completions`".into(),
        ));
    };
    let from = format!(
        "a Kubernetes Indexed Job (JOB_COMPLETION_INDEX={index}, BENCHSPEC_SHARD_COUNT={n})"
    );
    Ok(Some((index, n, from)))
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

#[cfg(test)]
mod tests {
    use super::Shard;
    use crate::plan::PlanError;

    fn auto(vars: &[(&str, &str)]) -> Result<(u32, u32), PlanError> {
        let var = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        Shard::resolve("auto", &var).map(|(s, _)| (s.k, s.n))
    }

    #[test]
    fn auto_reads_the_schedulers_variables() {
        let ok = [
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "0"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ][..],
                (1, 3),
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "3"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                    ("SLURM_ARRAY_TASK_MAX", "3"),
                ][..],
                (3, 3),
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_COUNT", "2"),
                ][..],
                (2, 2),
            ),
            (
                &[
                    ("JOB_COMPLETION_INDEX", "2"),
                    ("BENCHSPEC_SHARD_COUNT", "3"),
                ][..],
                (3, 3),
            ),
        ];
        for (vars, want) in ok {
            assert_eq!(auto(vars).ok(), Some(want), "{vars:?}");
        }
        auto_refuses_missing_or_bad_variables();
        let explicit = Shard::resolve("2/4", &|_| None).map(|(s, from)| (s.k, s.n, from));
        assert_eq!(explicit.ok(), Some((2, 4, None)));
    }

    /// `auto` without a scheduler's variables, or with bad ones, says which and why.
    fn auto_refuses_missing_or_bad_variables() {
        let bad = [
            (&[][..], "no scheduler's variables"),
            (
                &[("JOB_COMPLETION_INDEX", "0")][..],
                "BENCHSPEC_SHARD_COUNT",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "5"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ][..],
                "from 1 to 3",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "x"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ][..],
                "not a whole number",
            ),
            (
                &[("SLURM_ARRAY_TASK_ID", "1")][..],
                "SLURM_ARRAY_TASK_COUNT",
            ),
        ];
        for (vars, msg) in bad {
            let e = auto(vars).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(msg), "{vars:?}: {e}");
        }
    }
}
