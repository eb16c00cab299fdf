//! Prompt synthesis to exact token counts with the engine's own tokenizer. A prompt is a
//! short header unique to its slot (and, with a cold cache, to its request) followed by a
//! body shared by the prompts of one context, so prompts of different slots share no prefix
//! beyond a few tokens while the body is sized once per context. Each prompt is checked with
//! the tokenizer; most take one round trip.

use crate::client::Client;
use std::collections::HashMap;

/// Common short English words: each is one token (with its leading space) in most BPE
/// vocabularies, and at most six letters so the simulator counts it as one too.
const WORDS: [&str; 64] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "out", "up", "into", "do",
    "any", "your", "what", "some", "time", "only", "other", "new", "also", "may", "first", "these",
];

/// Why a prompt of an exact length could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The engine could not count tokens.
    #[error(transparent)]
    Tokenize(#[from] crate::client::ApiError),
    /// Even the header is longer than the prompt asked for.
    #[error("cannot make a prompt of {tokens} tokens: the header alone is {count}")]
    HeaderTooLong {
        /// The length asked for.
        tokens: u64,
        /// The header's length.
        count: u64,
    },
    /// The search did not land on the exact length.
    #[error("no prompt of exactly {tokens} tokens after {tries} tokenize round trips")]
    NoExact {
        /// The length asked for.
        tokens: u64,
        /// Round trips tried.
        tries: usize,
    },
}

/// Makes prompts of exact lengths, remembering how many body words each length needed.
#[derive(Debug)]
pub struct Synth {
    seed: u64,
    body: Vec<&'static str>,
    words_for: HashMap<u64, usize>,
    /// Tokenize round trips so far.
    pub round_trips: u64,
}

/// Most round trips spent on one prompt before giving up.
const MAX_TRIES: usize = 12;

impl Synth {
    /// A synthesizer whose bodies follow `seed`.
    pub fn new(seed: u64) -> Synth {
        Synth {
            seed,
            body: Vec::new(),
            words_for: HashMap::new(),
            round_trips: 0,
        }
    }

    fn body_words(&mut self, n: usize) -> &[&'static str] {
        let mut state = self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        while self.body.len() < n {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            self.body.push(WORDS[(state % WORDS.len() as u64) as usize]);
        }
        &self.body[..n]
    }

    fn text(&mut self, header: &str, words: usize) -> String {
        let mut text = String::with_capacity(header.len() + words * 5);
        text.push_str(header);
        text.push('\n');
        for w in self.body_words(words) {
            text.push(' ');
            text.push_str(w);
        }
        text
    }

    /// A prompt of exactly `tokens` tokens whose first tokens are unique to `tag`.
    pub async fn exact(
        &mut self,
        client: &Client,
        tokens: u64,
        tag: &str,
    ) -> Result<String, PromptError> {
        let header = format!("{tag} {}", unique_words(tag));
        let mut words = self
            .words_for
            .get(&tokens)
            .copied()
            .unwrap_or(tokens.saturating_sub(8) as usize);
        let mut last_step = 0i64;
        for _ in 0..MAX_TRIES {
            let text = self.text(&header, words);
            self.round_trips += 1;
            let count = client.count_tokens(&text).await?;
            if count == tokens {
                self.words_for.insert(tokens, words);
                return Ok(text);
            }
            let diff = tokens as i64 - count as i64;
            // Take the whole difference, unless that only flips back and forth.
            let step = if diff.signum() == -last_step.signum() && diff.abs() <= 2 {
                diff.signum()
            } else {
                diff
            };
            last_step = step;
            let next = words as i64 + step;
            if next < 0 {
                return Err(PromptError::HeaderTooLong { tokens, count });
            }
            words = next as usize;
        }
        Err(PromptError::NoExact {
            tokens,
            tries: MAX_TRIES,
        })
    }
}

/// A few words drawn from `tag`, so different tags diverge within the first tokens.
fn unique_words(tag: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tag.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (0..4)
        .map(|i| WORDS[((h >> (i * 8)) % WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}
