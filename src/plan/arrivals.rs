//! Arrival schedules of open-loop cells, drawn ahead from a seed: exponential gaps (Poisson),
//! gamma gaps of shape k (vLLM's `--burstiness`: CV = 1/√k, same mean), or constant gaps;
//! `inf` sends everything at once. Pure: the same seed gives the same schedule.

use crate::plan::vocab::{Arrivals, Distribution, Spread};
use crate::plan::{Bound, OpenLoad};
use std::time::Duration;

use crate::rng::Rng;

/// Most arrivals one cell schedules, whatever its rate × duration: a guard against a
/// schedule that could not be held in memory.
pub const MAX_ARRIVALS: usize = 10_000_000;

/// How many requests `load` sends: its count, or rate × duration (at least one).
pub fn count(load: &OpenLoad) -> usize {
    let n = match load.bound {
        Bound::Requests(n) => n as usize,
        Bound::Duration(_) if load.rate.is_inf() => 1,
        Bound::Duration(d) => (load.rate.0 * d.as_secs_f64()).round().max(1.0) as usize,
    };
    n.min(MAX_ARRIVALS)
}

/// The arrival times of `load`, as offsets from the cell's start; the first is at 0. The
/// gaps are drawn, then scaled so that their mean is exactly 1 / rate: the rate offered is
/// the rate over the cell, not only in expectation (their spread is unchanged).
pub fn schedule(load: &OpenLoad, seed: u64) -> Vec<Duration> {
    let n = count(load);
    if load.rate.is_inf() {
        return vec![Duration::ZERO; n];
    }
    let mut rng = Rng::new(seed);
    let k = load.burstiness.max(1e-6);
    let gaps: Vec<f64> = (1..n)
        .map(|_| match load.arrivals {
            Arrivals::Poisson => rng.exp(),
            Arrivals::Gamma => rng.gamma(k) / k,
            Arrivals::Constant => 1.0,
        })
        .collect();
    let sum: f64 = gaps.iter().sum();
    let scale = if sum > 0.0 {
        gaps.len() as f64 / sum / load.rate.0
    } else {
        0.0
    };
    let mut t = 0.0;
    let mut out = Vec::with_capacity(n);
    out.push(Duration::ZERO);
    for g in gaps {
        t += g * scale;
        out.push(Duration::from_secs_f64(t));
    }
    out
}

/// `n` lengths around `centre` as `spread` draws them (all `centre` without one), each
/// between 1 and `max`.
pub fn lengths(centre: u64, spread: Option<Spread>, n: usize, seed: u64, max: u64) -> Vec<u64> {
    let Some(sp) = spread.filter(|s| s.spread > 0.0) else {
        return vec![centre.clamp(1, max.max(1)); n];
    };
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| (drawn(centre as f64, sp, &mut rng).round().max(1.0) as u64).min(max.max(1)))
        .collect()
}

/// One value around `c` as `sp` draws it (before rounding and clamping): uniform in
/// c × (1 ± s), or normal or log-normal with mean c and standard deviation c × s.
pub fn drawn(c: f64, sp: Spread, rng: &mut Rng) -> f64 {
    let s = sp.spread;
    match sp.distribution {
        Distribution::Uniform => c * (1.0 - s + 2.0 * s * (1.0 - rng.unit())),
        Distribution::Normal => c * (1.0 + s * rng.normal()),
        Distribution::Lognormal => {
            let var = (1.0 + s * s).ln();
            (c.ln() - var / 2.0 + var.sqrt() * rng.normal()).exp()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::vocab::Rate;
    use crate::results::stats::gap_stats;

    fn load(arrivals: Arrivals, rate: f64, k: f64, bound: Bound) -> OpenLoad {
        OpenLoad {
            rate: Rate(rate),
            arrivals,
            burstiness: k,
            max_concurrency: None,
            bound,
            input: None,
            output: None,
        }
    }

    fn secs(s: &[Duration]) -> Vec<f64> {
        s.iter().map(Duration::as_secs_f64).collect()
    }

    #[test]
    fn gaps_have_the_rate_and_spread_asked_for() {
        // (arrivals, shape, expected CV, tolerance)
        let cases = [
            (Arrivals::Poisson, 1.0, 1.0, 0.05),
            (Arrivals::Gamma, 0.25, 2.0, 0.12),
            (Arrivals::Gamma, 4.0, 0.5, 0.03),
            (Arrivals::Constant, 1.0, 0.0, 1e-9),
        ];
        for (arrivals, k, cv, tol) in cases {
            let s = schedule(&load(arrivals, 20.0, k, Bound::Requests(20_000)), 7);
            assert_eq!(s.len(), 20_000);
            let (mean, got) = gap_stats(&secs(&s)).unwrap_or_default();
            assert!(
                (mean * 20.0 - 1.0).abs() < 0.03,
                "{arrivals:?} k={k}: mean gap {mean}"
            );
            assert!(
                (got - cv).abs() <= tol,
                "{arrivals:?} k={k}: cv {got}, want {cv}"
            );
        }
    }

    #[test]
    fn a_duration_bounds_the_arrivals_and_a_seed_fixes_them() {
        let l = load(
            Arrivals::Poisson,
            10.0,
            1.0,
            Bound::Duration(Duration::from_secs(60)),
        );
        let a = schedule(&l, 1);
        assert_eq!(a, schedule(&l, 1));
        assert_ne!(a, schedule(&l, 2));
        assert!(a.iter().all(|t| t.as_secs_f64() < 60.0));
        assert_eq!(a.len(), 600);
        assert_eq!(a.first(), Some(&Duration::ZERO));
    }

    #[test]
    fn lengths_have_the_mean_and_spread_asked_for() {
        // (distribution, spread, expected CV) around 8192
        let cases = [
            (Distribution::Uniform, 0.25, 0.25 / 3f64.sqrt()),
            (Distribution::Normal, 0.1, 0.1),
            (Distribution::Lognormal, 0.5, 0.5),
        ];
        for (distribution, spread, cv) in cases {
            let sp = Some(Spread {
                distribution,
                spread,
            });
            let v: Vec<f64> = lengths(8192, sp, 20_000, 3, u64::MAX)
                .into_iter()
                .map(|x| x as f64)
                .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
            assert!(
                (mean / 8192.0 - 1.0).abs() < 0.02,
                "{distribution:?}: mean {mean}"
            );
            assert!(
                (sd / mean - cv).abs() < 0.02,
                "{distribution:?}: cv {}",
                sd / mean
            );
        }
        assert_eq!(lengths(100, None, 3, 1, 64), vec![64; 3], "capped at max");
        let u = lengths(
            1000,
            Some(Spread {
                distribution: Distribution::Uniform,
                spread: 0.5,
            }),
            1000,
            1,
            10_000,
        );
        assert!(u.iter().all(|&x| (500..=1500).contains(&x)));
    }

    #[test]
    fn inf_sends_everything_at_once() {
        let l = OpenLoad {
            rate: Rate::INF,
            ..load(Arrivals::Poisson, 1.0, 1.0, Bound::Requests(50))
        };
        let s = schedule(&l, 1);
        assert_eq!(s.len(), 50);
        assert!(s.iter().all(|t| t.is_zero()));
    }
}
