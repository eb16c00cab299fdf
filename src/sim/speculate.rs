//! Speculative decoding in the simulated engine (`engine.sim.speculative`): each decode step
//! of a request drafts up to `draft_tokens` tokens, the target model accepts them one after
//! the other, each with the acceptance probability of the prompt's kind of text
//! (`crate::text::guess`), stopping at the first rejection; the step then emits the accepted
//! tokens and the one the target model adds. A draft never reaches past the request's last
//! token nor past the KV block the step may add. The step's cost is unchanged (the draft and
//! its verification are free): what speculation changes here is tokens per step. The draws
//! and vLLM's counters (`vllm:spec_decode_*`) are kept here.

use crate::text::TextKind;

/// How the simulator speculates.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculation {
    /// Draft tokens proposed per step (vLLM's `num_speculative_tokens`).
    pub draft_tokens: usize,
    /// The probability that a draft token is accepted, its predecessors accepted, by kind of
    /// prompt text: random, natural, code.
    pub acceptance: [f64; 3],
}

impl Speculation {
    /// The acceptance probability of a prompt of `kind`.
    pub fn acceptance_of(&self, kind: TextKind) -> f64 {
        let i = match kind {
            TextKind::Random => 0,
            TextKind::Natural => 1,
            TextKind::Code => 2,
        };
        self.acceptance[i].clamp(0.0, 1.0)
    }
}

/// vLLM's speculative-decoding counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecCounters {
    /// Drafts proposed.
    pub drafts: u64,
    /// Draft tokens proposed.
    pub draft_tokens: u64,
    /// Draft tokens accepted.
    pub accepted: u64,
    /// Drafts whose token at each position was accepted.
    pub per_position: Vec<u64>,
}

/// The scheduler's drafting: its draws and its counters.
#[derive(Debug)]
pub struct Drafter {
    k: usize,
    state: u64,
    /// What was drafted and accepted so far.
    pub counts: SpecCounters,
}

impl Drafter {
    /// Drafting `k` tokens a step, the draws following `seed`.
    pub fn new(k: usize, seed: u64) -> Drafter {
        Drafter {
            k,
            state: seed ^ 0x5eed_5eed_5eed_5eed,
            counts: SpecCounters {
                per_position: vec![0; k],
                ..SpecCounters::default()
            },
        }
    }

    /// Draft tokens a step.
    pub fn k(&self) -> usize {
        self.k
    }

    fn unit(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One step of a request whose tokens are accepted with probability `p` and that has
    /// room for `room` more tokens: the tokens drafted and accepted (0, 0 when the room is
    /// one token: no draft).
    pub fn step(&mut self, p: f64, room: usize) -> (usize, usize) {
        let k = self.k.min(room.saturating_sub(1));
        if k == 0 {
            return (0, 0);
        }
        let mut accepted = 0;
        while accepted < k && self.unit() < p {
            accepted += 1;
        }
        let c = &mut self.counts;
        c.drafts += 1;
        c.draft_tokens += k as u64;
        c.accepted += accepted as u64;
        for slot in c.per_position.iter_mut().take(accepted) {
            *slot += 1;
        }
        (k, accepted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_follow_the_probability_and_the_room() {
        let mut d = Drafter::new(3, 1);
        assert_eq!(d.step(1.0, 10), (3, 3), "all accepted");
        assert_eq!(d.step(0.0, 10), (3, 0), "none accepted");
        assert_eq!(d.step(1.0, 2), (1, 1), "no further than the room");
        assert_eq!(d.step(1.0, 1), (0, 0), "the last token: no draft");
        assert_eq!(d.counts.drafts, 3);
        assert_eq!((d.counts.draft_tokens, d.counts.accepted), (7, 4));
        assert_eq!(d.counts.per_position, vec![2, 1, 1]);
        // p = 0.5, k = 3: E[accepted] = 0.5 + 0.25 + 0.125 = 0.875 a draft (by hand).
        let mut d = Drafter::new(3, 7);
        for _ in 0..20_000 {
            d.step(0.5, 100);
        }
        let mean = d.counts.accepted as f64 / d.counts.drafts as f64;
        assert!((mean - 0.875).abs() < 0.03, "{mean}");
        let first = d.counts.per_position[0] as f64 / d.counts.drafts as f64;
        assert!((first - 0.5).abs() < 0.02, "{first}");
    }
}
