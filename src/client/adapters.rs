//! The LoRA adapter each generation request goes to (`workload.adapters`): a mix of names
//! with weights, drawn per request from a seeded sequence — the n-th request of a run draws
//! the n-th value, so the same seed gives the same choices in the same order — and sent as
//! the request's `model`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The adapters of a run and their shares.
#[derive(Debug)]
pub struct Mix {
    names: Vec<String>,
    /// The running sum of the weights, normalized to end at 1.
    cumulative: Vec<f64>,
    seed: u64,
    draws: AtomicU64,
}

impl Mix {
    /// The mix of `weights` (name, positive weight), drawn with `seed`; `None` when empty.
    pub fn new(weights: &[(String, f64)], seed: u64) -> Option<Mix> {
        let total: f64 = weights.iter().map(|(_, w)| w.max(0.0)).sum();
        if weights.is_empty() || total <= 0.0 {
            return None;
        }
        let mut sum = 0.0;
        let cumulative = weights
            .iter()
            .map(|(_, w)| {
                sum += w.max(0.0) / total;
                sum
            })
            .collect();
        Some(Mix {
            names: weights.iter().map(|(n, _)| n.clone()).collect(),
            cumulative,
            seed,
            draws: AtomicU64::new(0),
        })
    }

    /// The adapter of the next request, by its place in [`Mix::names`].
    pub fn pick(&self) -> usize {
        let n = self.draws.fetch_add(1, Relaxed);
        let u = crate::rng::Rng::new(self.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unit();
        self.cumulative
            .iter()
            .position(|c| u <= *c)
            .unwrap_or(self.names.len() - 1)
    }

    /// The adapters' names, in the mix's order.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(weights: &[(&str, f64)], seed: u64) -> Mix {
        let w: Vec<(String, f64)> = weights.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        Mix::new(&w, seed).unwrap_or_else(|| panic!("a mix of {weights:?}"))
    }

    /// 3:1 over 4,000 draws: about 3,000 and 1,000 (binomial sd ≈ 27); the same seed draws
    /// the same sequence, another seed another.
    #[test]
    fn draws_follow_the_weights_and_the_seed() {
        let m = mix(&[("a", 3.0), ("b", 1.0)], 7);
        let draws: Vec<usize> = (0..4000).map(|_| m.pick()).collect();
        let a = draws.iter().filter(|&&i| i == 0).count();
        assert!((2880..=3120).contains(&a), "{a} of 4000 to a");
        let again = mix(&[("a", 3.0), ("b", 1.0)], 7);
        assert!((0..4000).all(|k| again.pick() == draws[k]), "same seed");
        let other = mix(&[("a", 3.0), ("b", 1.0)], 8);
        assert!((0..100).any(|k| other.pick() != draws[k]), "another seed");
        assert!(Mix::new(&[], 1).is_none());
    }
}
