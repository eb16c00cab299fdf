//! `fit --holdout`'s score of what `predict` prints: the held-out cells run against the twin
//! (the simulation, which is `predict`'s answer, not the closed form the fit uses), each value
//! against the measured one and its own 90% interval.

use super::predict::{self, Prediction};
use super::{Twin, TwinError};
use crate::plan::Plan;
use crate::results::Record;
use crate::spec::Loaded;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How `predict` does on the held-out cells.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// Held-out cells predicted (with a per-request tok/s).
    pub cells: usize,
    /// Median |error| of per-request tok/s, percent.
    pub median_pct: Option<f64>,
    /// Median |error| of TTFT p50, percent.
    pub ttft_median_pct: Option<f64>,
    /// Share of per-request tok/s values inside their interval (of those with one).
    pub covered: Option<f64>,
    /// Share of TTFTs inside their interval (of those with one).
    pub ttft_covered: Option<f64>,
}

/// `held` (cell ids) of `loaded`'s plan run against `twin` (the file at `path`) in a scratch
/// directory, scored against `measured`.
pub fn score(
    loaded: &Loaded,
    plan: &Plan,
    (path, twin): (&Path, &Twin),
    held: &[String],
    measured: &[Record],
) -> Result<Scored, TwinError> {
    let settings = super::settings::SpecSettings::of(&loaded.spec);
    let mut p = predict::predict(plan, twin, &settings);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let scratch =
        std::env::temp_dir().join(format!("benchspec-holdout-{}-{nanos}", std::process::id()));
    let only = format!("{{{}}}", held.join(","));
    let records = super::simulate::simulate(loaded, (path, twin), &scratch, Some(only));
    let _ = std::fs::remove_dir_all(&scratch);
    super::answer::add_simulated(&mut p, &records?, twin);
    Ok(against(&p, held, measured))
}

/// The held-out cells of `p` against `measured`.
fn against(p: &Prediction, held: &[String], measured: &[Record]) -> Scored {
    let (mut tok, mut ttft) = (Vec::new(), Vec::new());
    let (mut tok_in, mut ttft_in) = (Vec::new(), Vec::new());
    for id in held {
        let (Some(c), Some(m)) = (
            p.cells.iter().find(|c| &c.cell == id),
            measured.iter().find(|r| &r.cell == id),
        ) else {
            continue;
        };
        let pairs = [
            (
                c.per_request_tok_s,
                m.per_request_tok_s,
                c.interval.per_request_tok_s,
                &mut tok,
                &mut tok_in,
            ),
            (
                c.ttft_ms_p50,
                m.ttft_ms.map(|s| s.p50),
                c.interval.ttft_ms_p50,
                &mut ttft,
                &mut ttft_in,
            ),
        ];
        for (got, want, half, errs, inside) in pairs {
            let (Some(got), Some(want)) = (got, want.filter(|w| *w > 0.0)) else {
                continue;
            };
            errs.push(((got - want) / want * 100.0).abs());
            if let Some(h) = half {
                inside.push((got - want).abs() <= h);
            }
        }
    }
    let share = |v: &[bool]| {
        (!v.is_empty()).then(|| v.iter().filter(|x| **x).count() as f64 / v.len() as f64)
    };
    Scored {
        cells: tok.len(),
        median_pct: (!tok.is_empty()).then(|| super::build::median(tok)),
        ttft_median_pct: (!ttft.is_empty()).then(|| super::build::median(ttft)),
        covered: share(&tok_in),
        ttft_covered: share(&ttft_in),
    }
}
