//! Speculative decoding as the engine counts it: vLLM's `spec_decode` counters (drafts, draft
//! tokens, accepted tokens, accepted tokens per draft position) and its generated tokens,
//! their increase over a cell's window; and the same counts summed from the responses'
//! own timings (llama.cpp's `draft_n` / `draft_n_accepted`), which the client keeps as they
//! end ([`crate::client::Drafts`]).

use super::prom::Scrape;
use crate::results::SpecCounts;
use tokio::time::Instant;

const DRAFTS: &str = "vllm:spec_decode_num_drafts_total";
const DRAFT_TOKENS: &str = "vllm:spec_decode_num_draft_tokens_total";
const ACCEPTED: &str = "vllm:spec_decode_num_accepted_tokens_total";
const PER_POSITION: &str = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
const GENERATED: &str = "vllm:generation_tokens_total";

/// Whether a sample called `name` is one of those read here.
pub fn wanted(name: &str) -> bool {
    [DRAFTS, DRAFT_TOKENS, ACCEPTED, PER_POSITION, GENERATED].contains(&name)
}

/// A counter's increase from `a` to `b` (a reset counts from zero); `None` when `b` lacks it.
fn increase(a: &Scrape, b: &Scrape, name: &str) -> Option<u64> {
    let later = b.sum(&[name])?;
    let earlier = a.sum(&[name]).unwrap_or(0.0);
    let d = if later >= earlier {
        later - earlier
    } else {
        later
    };
    Some(d.round() as u64)
}

/// The per-position counter's values in `s`, by position (summed over the other labels).
fn by_position(s: &Scrape) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for sample in s.samples.iter().filter(|x| x.name == PER_POSITION) {
        let Some(pos) = sample
            .labels
            .iter()
            .find(|(k, _)| k == "position")
            .and_then(|(_, v)| v.parse::<usize>().ok())
        else {
            continue;
        };
        if out.len() <= pos {
            out.resize(pos + 1, 0.0);
        }
        out[pos] += sample.value;
    }
    out
}

/// vLLM's speculation counts from `from` to `to`; `None` when the engine has no such
/// counters (it does not speculate, or is not vLLM).
pub fn counts(from: &Scrape, to: &Scrape) -> Option<SpecCounts> {
    let draft_tokens = increase(from, to, DRAFT_TOKENS)?;
    let (a, b) = (by_position(from), by_position(to));
    Some(SpecCounts {
        drafts: increase(from, to, DRAFTS),
        draft_tokens,
        accepted_tokens: increase(from, to, ACCEPTED).unwrap_or(0),
        output_tokens: increase(from, to, GENERATED),
        by_position: b
            .iter()
            .enumerate()
            .map(|(i, later)| {
                let d = later - a.get(i).copied().unwrap_or(0.0);
                d.max(0.0).round() as u64
            })
            .collect(),
    })
}

/// The counts of the responses that ended in `open..=close` and reported drafts (llama.cpp's
/// timings), forgetting every response the client kept so far; `None` when none did.
pub fn of_responses(
    d: &crate::client::Drafts,
    open: Instant,
    close: Instant,
) -> Option<SpecCounts> {
    let sum = d.take(open, close)?;
    Some(SpecCounts {
        drafts: None,
        draft_tokens: sum.draft,
        accepted_tokens: sum.accepted,
        output_tokens: Some(sum.completion),
        by_position: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM 0.32's CPU build with `--speculative-config '{"method":"ngram",
    /// "num_speculative_tokens":3,"prompt_lookup_max":3}'`, after one greedy request of 24
    /// tokens (its `/metrics`, the lines read here).
    const AFTER: &str = r#"vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 6.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny"} 1.7966628834145129e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 16.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 16.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 6.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="1"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="2"} 5.0
vllm:generation_tokens_total{engine="0",model_name="tiny"} 24.0
"#;

    #[test]
    fn vllm_counters_over_a_window() {
        let now = Instant::now();
        let before = Scrape::only(now, "vllm:generation_tokens_total 0\n", &wanted);
        let after = Scrape::only(now, AFTER, &wanted);
        let c = counts(&before, &after).unwrap();
        assert_eq!(c.drafts, Some(6));
        assert_eq!((c.draft_tokens, c.accepted_tokens), (16, 16));
        assert_eq!(c.output_tokens, Some(24));
        assert_eq!(c.by_position, vec![6, 5, 5]);
        // From a scrape that already counted some: the increase.
        let mid = Scrape::only(
            now,
            &AFTER.replace("16.0", "10.0").replace("} 6.0", "} 4.0"),
            &wanted,
        );
        let d = counts(&mid, &after).unwrap();
        assert_eq!(
            (d.draft_tokens, d.accepted_tokens, d.drafts),
            (6, 6, Some(2))
        );
        // An engine without speculation: nothing, not zeros.
        assert_eq!(counts(&before, &before), None);
    }
}
