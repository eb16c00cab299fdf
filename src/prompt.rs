//! Prompt synthesis to exact token counts with the engine's own tokenizer. A prompt is a
//! short header unique to its slot (and, with a cold cache, to its request) followed by a
//! body shared by the prompts of one context, so prompts of different slots share no prefix
//! beyond a few tokens while the body is sized once per context. Each prompt is checked with
//! the tokenizer; most take one round trip.
//!
//! With shared prefixes (`workload.prefix`), a prompt is one of the groups' prefix texts
//! (each exactly `tokens` long as the engine counts it) followed by that rest: prompts of one
//! group share exactly the prefix's tokens. Fresh prompts go round the groups in turn; a
//! slot's prompt belongs to group `slot % groups`.
//!
//! The body is `workload.text`'s (`crate::text`): random common words, one token each, whose
//! count is searched; or pieces of prose or code, whose count is searched until one more would
//! overshoot, the last few tokens then made up with single-token words between the header
//! and the text, so the length stays exact whatever the text.

use crate::client::Client;
use std::collections::HashMap;

use crate::text::{TextKind, WORDS};

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
    /// What the body is made of.
    text: TextKind,
    /// The pieces of a `natural` or `code` body, as far as drawn.
    pieces: Vec<&'static str>,
    /// Body words (pieces and filler words for prose and code) a prompt of a length needed,
    /// by length and group.
    words_for: HashMap<(u64, Option<usize>), (usize, usize)>,
    /// The shared prefixes, when the workload has them.
    prefix: Option<Prefixes>,
    /// Tokenize round trips so far.
    pub round_trips: u64,
}

/// Most round trips spent on one prompt before giving up.
const MAX_TRIES: usize = 12;

impl Synth {
    /// A synthesizer whose bodies of `text` follow `seed`, with `prefix`'s shared prefixes.
    pub fn new(seed: u64, prefix: Option<crate::plan::vocab::Prefix>, text: TextKind) -> Synth {
        Synth {
            seed,
            body: Vec::new(),
            text,
            pieces: Vec::new(),
            words_for: HashMap::new(),
            prefix: prefix.map(|p| Prefixes {
                tokens: p.tokens.0,
                texts: vec![None; p.groups.max(1) as usize],
                next: 0,
            }),
            round_trips: 0,
        }
    }

    /// The group of the next fresh prompt, when prompts have shared prefixes.
    fn next_group(&mut self) -> Option<usize> {
        let p = self.prefix.as_mut()?;
        let g = p.next % p.texts.len();
        p.next = p.next.wrapping_add(1);
        Some(g)
    }

    /// The group a slot's prompts belong to.
    pub fn slot_group(&self, slot: usize) -> Option<usize> {
        self.prefix.as_ref().map(|p| slot % p.texts.len())
    }

    /// The shared prefix of `group`: exactly the prefix's length on its own.
    pub async fn prefix_text(
        &mut self,
        client: &Client,
        group: usize,
    ) -> Result<Option<String>, PromptError> {
        let Some(p) = &self.prefix else {
            return Ok(None);
        };
        if let Some(Some(text)) = p.texts.get(group) {
            return Ok(Some(text.clone()));
        }
        let tokens = p.tokens;
        let text = self
            .sized(client, tokens, &format!("prefix{group}"), "", None)
            .await?;
        if let Some(slot) = self.prefix.as_mut().and_then(|p| p.texts.get_mut(group)) {
            *slot = Some(text.clone());
        }
        Ok(Some(text))
    }

    /// Every group's prefix text (none without shared prefixes).
    pub async fn prefix_texts(&mut self, client: &Client) -> Result<Vec<String>, PromptError> {
        let groups = self.prefix.as_ref().map_or(0, |p| p.texts.len());
        let mut out = Vec::with_capacity(groups);
        for g in 0..groups {
            out.extend(self.prefix_text(client, g).await?);
        }
        Ok(out)
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

    fn text(&mut self, lead: &str, header: &str, words: usize) -> String {
        let mut text = String::with_capacity(lead.len() + header.len() + words * 5 + 1);
        text.push_str(lead);
        text.push_str(header);
        text.push('\n');
        for w in self.body_words(words) {
            text.push(' ');
            text.push_str(w);
        }
        text
    }

    /// `lead`, the header, `pad` filler words, then the first `units` pieces of the text.
    fn text_of(&mut self, lead: &str, header: &str, (units, pad): (usize, usize)) -> String {
        let mut text = self.text(lead, header, pad);
        if self.pieces.len() < units {
            let n = units.max(self.pieces.len() * 2).max(256);
            self.pieces = crate::text::pieces(self.text, self.seed, n);
        }
        for p in &self.pieces[..units] {
            text.push_str(p);
        }
        text
    }

    /// A prompt of exactly `tokens` tokens whose first tokens (after the next group's
    /// shared prefix, with `workload.prefix`) are unique to `tag`.
    pub async fn exact(
        &mut self,
        client: &Client,
        tokens: u64,
        tag: &str,
    ) -> Result<String, PromptError> {
        let group = self.next_group();
        self.exact_in(client, tokens, tag, group).await
    }

    /// A prompt of exactly `tokens` tokens: `group`'s shared prefix (if any), then a
    /// header unique to `tag`, then the body.
    pub async fn exact_in(
        &mut self,
        client: &Client,
        tokens: u64,
        tag: &str,
        group: Option<usize>,
    ) -> Result<String, PromptError> {
        let lead = match group {
            Some(g) => self.prefix_text(client, g).await?.map(|p| p + "\n"),
            None => None,
        };
        let lead = lead.unwrap_or_default();
        self.sized(client, tokens, tag, &lead, group).await
    }

    /// `lead`, then a header unique to `tag`, then as many body words as make `tokens`.
    async fn sized(
        &mut self,
        client: &Client,
        tokens: u64,
        tag: &str,
        lead: &str,
        group: Option<usize>,
    ) -> Result<String, PromptError> {
        let header = format!("{tag} {}", unique_words(tag));
        let lead_tokens = self
            .prefix
            .as_ref()
            .filter(|_| !lead.is_empty())
            .map_or(0, |p| p.tokens);
        let key = (tokens, group);
        if self.text != TextKind::Random {
            let guess = (tokens.saturating_sub(8 + lead_tokens) / 2) as usize;
            let start = self.words_for.get(&key).copied().unwrap_or((guess, 0));
            return self
                .sized_text(client, tokens, (lead, &header), start, key)
                .await;
        }
        let mut words = self
            .words_for
            .get(&key)
            .map(|w| w.0)
            .unwrap_or(tokens.saturating_sub(8 + lead_tokens) as usize);
        let mut last_step = 0i64;
        for _ in 0..MAX_TRIES {
            let text = self.text(lead, &header, words);
            self.round_trips += 1;
            let count = client.count_tokens(&text).await?;
            if count == tokens {
                self.words_for.insert(key, (words, 0));
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

impl Synth {
    /// [`Synth::sized`] for a body of prose or code: pieces of the text, `(units, pad)`
    /// from `start`, until the text is within a piece or two of `tokens`; filler words, one
    /// token each, then make up the rest.
    async fn sized_text(
        &mut self,
        client: &Client,
        tokens: u64,
        (lead, header): (&str, &str),
        start: (usize, usize),
        key: (u64, Option<usize>),
    ) -> Result<String, PromptError> {
        let (mut units, mut pad) = start;
        for _ in 0..MAX_TRIES {
            let text = self.text_of(lead, header, (units, pad));
            self.round_trips += 1;
            let count = client.count_tokens(&text).await?;
            if count == tokens {
                self.words_for.insert(key, (units, pad));
                return Ok(text);
            }
            // Tokens per piece, as far as this prompt tells.
            let per = (count as f64 / (units + pad + 8) as f64).max(1.0);
            let diff = tokens as i64 - count as i64;
            if diff < 0 && pad as i64 >= -diff {
                pad -= (-diff) as usize;
            } else if diff < 0 {
                let over = (-diff) as usize - pad;
                let fewer = (over as f64 / per).ceil() as usize;
                if fewer > units {
                    return Err(PromptError::HeaderTooLong { tokens, count });
                }
                (units, pad) = (units - fewer, 0);
            } else if diff as f64 >= 2.0 * per + 2.0 {
                units += ((diff as f64 - per) / per).floor().max(1.0) as usize;
            } else {
                pad += diff as usize;
            }
        }
        Err(PromptError::NoExact {
            tokens,
            tries: MAX_TRIES,
        })
    }
}

/// `n` words drawn from `seed`, each one token in most vocabularies (and in the
/// simulator's): a session's new user message of `n` tokens.
pub fn user_words(n: u64, seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut text = String::with_capacity(n as usize * 5);
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if i > 0 {
            text.push(' ');
        }
        text.push_str(WORDS[(state % WORDS.len() as u64) as usize]);
    }
    text
}

/// The shared prefixes of a workload: their length and, once made, each group's text.
#[derive(Debug)]
struct Prefixes {
    tokens: u64,
    texts: Vec<Option<String>>,
    /// Fresh prompts made so far: the next one's group.
    next: usize,
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
