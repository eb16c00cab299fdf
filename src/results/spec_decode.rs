//! A cell's speculative decoding (docs/results.md, `spec_decode`): how many tokens a draft
//! proposed, how many the target model accepted, from the server's counters (vLLM) or its
//! responses' timings (llama.cpp). Absent when nothing was drafted: a server that does not
//! speculate has no acceptance, which is not an acceptance of 0.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a cell's speculative-decoding counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SpecSource {
    /// vLLM's `/metrics` counters (`vllm:spec_decode_*`), their increase over the window.
    VllmMetrics,
    /// llama.cpp's `timings.draft_n` and `timings.draft_n_accepted` in each response's last
    /// chunk, summed over the responses that ended in the window.
    LlamacppTimings,
}

impl SpecSource {
    /// As records write it.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecSource::VllmMetrics => "vllm-metrics",
            SpecSource::LlamacppTimings => "llamacpp-timings",
        }
    }
}

/// A cell's speculative decoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpecDecode {
    /// Drafts proposed (verification steps with a draft); absent where the server does not
    /// count them (llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<u64>,
    /// Draft tokens proposed.
    pub draft_tokens: u64,
    /// Draft tokens the target model accepted.
    pub accepted_tokens: u64,
    /// `accepted_tokens / draft_tokens`.
    pub acceptance_rate: f64,
    /// `accepted_tokens / drafts`: the mean accepted length of a draft (vLLM's "mean
    /// acceptance length" is this plus one, the token the target model adds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_per_draft: Option<f64>,
    /// `draft_tokens / output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafted_per_output_token: Option<f64>,
    /// The output tokens over the same window and requests as the counts (vLLM's
    /// `generation_tokens_total` increase; the responses' `completion_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Per draft position `i`: drafts whose token `i` was accepted / drafts (vLLM's
    /// `spec_decode_num_accepted_tokens_per_pos`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_by_position: Vec<f64>,
    /// Where the counts come from.
    pub source: SpecSource,
}

/// Counts of speculation over a window, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecCounts {
    /// Drafts, where counted.
    pub drafts: Option<u64>,
    /// Draft tokens.
    pub draft_tokens: u64,
    /// Accepted draft tokens.
    pub accepted_tokens: u64,
    /// Output tokens over the same window, where known.
    pub output_tokens: Option<u64>,
    /// Accepted tokens per draft position.
    pub by_position: Vec<u64>,
}

impl SpecCounts {
    /// These counts and `other`'s together (several servers): a count known on one side
    /// only is unknown in the sum.
    pub fn add(&self, other: &SpecCounts) -> SpecCounts {
        let n = self.by_position.len().max(other.by_position.len());
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        SpecCounts {
            drafts: self.drafts.zip(other.drafts).map(|(a, b)| a + b),
            draft_tokens: self.draft_tokens + other.draft_tokens,
            accepted_tokens: self.accepted_tokens + other.accepted_tokens,
            output_tokens: self
                .output_tokens
                .zip(other.output_tokens)
                .map(|(a, b)| a + b),
            by_position: (0..n)
                .map(|i| at(&self.by_position, i) + at(&other.by_position, i))
                .collect(),
        }
    }

    /// The record's block; `None` when nothing was drafted.
    pub fn block(&self, source: SpecSource) -> Option<SpecDecode> {
        use super::stats::round;
        if self.draft_tokens == 0 {
            return None;
        }
        let per = |n: u64, d: u64| (d > 0).then(|| round(n as f64 / d as f64, 4));
        let drafts = self.drafts.filter(|d| *d > 0);
        Some(SpecDecode {
            drafts: self.drafts,
            draft_tokens: self.draft_tokens,
            accepted_tokens: self.accepted_tokens,
            acceptance_rate: round(self.accepted_tokens as f64 / self.draft_tokens as f64, 4),
            accepted_per_draft: drafts.and_then(|d| per(self.accepted_tokens, d)),
            drafted_per_output_token: self.output_tokens.and_then(|o| per(self.draft_tokens, o)),
            output_tokens: self.output_tokens,
            acceptance_by_position: match drafts {
                Some(d) => self
                    .by_position
                    .iter()
                    .map(|a| round(*a as f64 / d as f64, 4))
                    .collect(),
                None => Vec::new(),
            },
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratios_by_hand() {
        // vLLM's own counters after one request (tests/.../spec_vllm.txt): 6 drafts, 16
        // draft tokens, 16 accepted, positions 6/5/5, 24 generated tokens.
        let c = SpecCounts {
            drafts: Some(6),
            draft_tokens: 16,
            accepted_tokens: 16,
            output_tokens: Some(24),
            by_position: vec![6, 5, 5],
        };
        let b = c.block(SpecSource::VllmMetrics).unwrap();
        assert_eq!(b.acceptance_rate, 1.0);
        assert_eq!(b.accepted_per_draft, Some(2.6667)); // 16 / 6
        assert_eq!(b.drafted_per_output_token, Some(0.6667)); // 16 / 24
        assert_eq!(b.acceptance_by_position, vec![1.0, 0.8333, 0.8333]);
        // llama.cpp counts no drafts: no per-draft figures, never a 0 for them.
        let l = SpecCounts {
            drafts: None,
            draft_tokens: 40,
            accepted_tokens: 10,
            output_tokens: Some(50),
            by_position: vec![],
        };
        let b = l.block(SpecSource::LlamacppTimings).unwrap();
        assert_eq!((b.acceptance_rate, b.accepted_per_draft), (0.25, None));
        assert_eq!(b.drafted_per_output_token, Some(0.8));
        assert!(b.acceptance_by_position.is_empty());
        let json = serde_json::to_value(&b).unwrap();
        assert!(json.get("drafts").is_none() && json.get("accepted_per_draft").is_none());
        // Nothing drafted: no block.
        assert_eq!(SpecCounts::default().block(SpecSource::VllmMetrics), None);
        // Two servers: a count one of them lacks is unknown in the sum.
        let sum = c.add(&l);
        assert_eq!(
            (sum.draft_tokens, sum.drafts, sum.output_tokens),
            (56, None, Some(74))
        );
    }
}
