//! A small seeded random generator shared by what must be reproducible from a seed: the
//! arrival schedules of open-loop cells and the simulator's run-to-run noise.

/// A small seeded generator (SplitMix64): fast, and good enough for arrival gaps.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator following `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Exponential with mean 1.
    pub fn exp(&mut self) -> f64 {
        -self.unit().ln()
    }

    /// Gamma with shape `k` and scale 1 (Marsaglia–Tsang; k < 1 boosted by U^(1/k)).
    pub fn gamma(&mut self, k: f64) -> f64 {
        if k < 1.0 {
            return self.gamma(k + 1.0) * self.unit().powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.unit();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}
