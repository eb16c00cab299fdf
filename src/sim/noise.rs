//! Run-to-run noise of the simulated engine (off unless asked for): every quarter second of
//! engine time its steps get slower or faster by a factor drawn from a normal distribution
//! around 1 (relative standard deviation `sigma`, seeded), so that repeated measurements of
//! one cell differ as they do on real hardware and their statistics are exercised for real.

use crate::rng::Rng;

/// How long one drawn factor lasts, engine seconds.
const PERIOD_S: f64 = 0.25;

/// The noise of one engine.
#[derive(Debug, Clone)]
pub struct Noise {
    sigma: f64,
    rng: Rng,
    factor: f64,
    until: f64,
}

impl Noise {
    /// Noise of relative standard deviation `sigma` following `seed`.
    pub fn new(sigma: f64, seed: u64) -> Noise {
        Noise {
            sigma,
            rng: Rng::new(seed ^ 0x006e_6f69_7365),
            factor: 1.0,
            until: 0.0,
        }
    }

    /// The factor of a step starting at engine time `now`.
    pub fn factor(&mut self, now: f64) -> f64 {
        if now >= self.until {
            self.factor = (1.0 + self.sigma * self.rng.normal()).max(0.2);
            self.until = now + PERIOD_S;
        }
        self.factor
    }
}

#[cfg(test)]
mod tests {
    use super::Noise;

    #[test]
    fn factors_spread_as_asked_and_follow_the_seed() {
        let mut n = Noise::new(0.1, 7);
        let f: Vec<f64> = (0..4000).map(|i| n.factor(f64::from(i) * 0.25)).collect();
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let sd = (f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f.len() as f64).sqrt();
        assert!(
            (mean - 1.0).abs() < 0.01 && (sd - 0.1).abs() < 0.01,
            "{mean} {sd}"
        );
        // A factor holds for a period; the same seed draws the same factors.
        let mut a = Noise::new(0.1, 7);
        assert_eq!(a.factor(0.0), a.factor(0.2));
        assert_eq!(
            Noise::new(0.1, 7).factor(0.0),
            Noise::new(0.1, 7).factor(0.0)
        );
        assert_ne!(
            Noise::new(0.1, 7).factor(0.0),
            Noise::new(0.1, 8).factor(0.0)
        );
    }
}
