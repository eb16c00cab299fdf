//! What prompt bodies are made of (`workload.text`): `random` common words (the prompts of
//! every earlier version), `natural` English prose, or `code`, the last two cut from small
//! texts embedded here and shuffled by paragraph with the workload's seed. A draft model's
//! acceptance depends on how predictable the text is, so this is the axis that sweeps it.
//! The simulator tells the kinds apart with [`guess`]. A leaf: it imports nothing of
//! benchspec.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Common short English words: each is one token (with its leading space) in most BPE
/// vocabularies, and at most six letters so the simulator counts it as one too.
pub const WORDS: [&str; 64] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "out", "up", "into", "do",
    "any", "your", "what", "some", "time", "only", "other", "new", "also", "may", "first", "these",
];

/// The kind of text a prompt's body is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TextKind {
    /// Common short words drawn at random with the seed: unpredictable to a draft model.
    #[default]
    Random,
    /// English prose (the opening of Lewis Carroll's *Alice's Adventures in Wonderland*,
    /// 1865, public domain), its paragraphs shuffled with the seed.
    Natural,
    /// Source code (a small Rust module written for benchspec), its items shuffled with
    /// the seed.
    Code,
}

impl TextKind {
    /// `random`, `natural` or `code`, as the spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TextKind::Random => "random",
            TextKind::Natural => "natural",
            TextKind::Code => "code",
        }
    }
}

/// The prose: the opening of chapter I of *Alice's Adventures in Wonderland* (Lewis
/// Carroll, 1865; public domain, as Project Gutenberg's eBook #11 prints it), paragraphs
/// separated by a blank line (and one before the first).
pub const NATURAL: &str = include_str!("text/natural.txt");

/// The code: a small Rust module written for benchspec, items separated by a blank line (and one before the first).
pub const CODE: &str = include_str!("text/code.txt");

/// The pieces of `kind`'s body for `seed`, as many as asked: each is a run of non-blank
/// characters with the blanks before it, so that the first `n` pieces are a text as written
/// (line breaks and indentation kept). The paragraphs (items, for code) come in an order
/// drawn from `seed`, shuffled again at each repetition. `random` has no pieces: its body is
/// drawn word by word by the prompt synthesizer.
pub fn pieces(kind: TextKind, seed: u64, n: usize) -> Vec<&'static str> {
    let source = match kind {
        TextKind::Random => return Vec::new(),
        TextKind::Natural => NATURAL,
        TextKind::Code => CODE,
    };
    let paragraphs: Vec<&str> = source
        .split("\n\n")
        .map(str::trim_end)
        .filter(|p| !p.trim().is_empty())
        .collect();
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(n);
    let mut order: Vec<usize> = (0..paragraphs.len()).collect();
    while out.len() < n {
        // Fisher–Yates with xorshift: a new order for each repetition.
        for i in (1..order.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        for &p in &order {
            let text = paragraphs[p];
            let mut first = true;
            for piece in split_pieces(text) {
                if out.len() == n {
                    return out;
                }
                // A paragraph starts after a blank line: its first piece is led by `\n\n`
                // (a piece is a slice of the source, so the break is the one before it).
                out.push(if first {
                    with_break(source, piece)
                } else {
                    piece
                });
                first = false;
            }
        }
    }
    out
}

/// `piece` (a slice of `source`, which starts with a blank line as every paragraph follows
/// one) with the blank line before it.
fn with_break(source: &'static str, piece: &'static str) -> &'static str {
    let start = piece.as_ptr() as usize - source.as_ptr() as usize;
    &source[start.saturating_sub(2)..start + piece.len()]
}

/// The pieces of `text`: each run of non-blank characters with the blanks before it.
fn split_pieces(text: &'static str) -> impl Iterator<Item = &'static str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        (i > start).then(|| &text[start..i])
    })
}

/// The kind of text `prompt` most looks like, for a simulator to pick its acceptance:
/// `code` when it has both braces, else `natural` when more than a quarter of its words
/// (runs of letters, lower-cased) are neither [`WORDS`] nor in `also` (another known
/// vocabulary, such as the simulator's generated words), else `random`.
pub fn guess(prompt: &str, also: &[&str]) -> TextKind {
    if prompt.contains('{') && prompt.contains('}') {
        return TextKind::Code;
    }
    let (mut words, mut other) = (0usize, 0usize);
    for w in prompt
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
    {
        words += 1;
        let w = w.to_ascii_lowercase();
        if !WORDS.contains(&w.as_str()) && !also.contains(&w.as_str()) {
            other += 1;
        }
    }
    if words > 0 && other * 4 > words {
        TextKind::Natural
    } else {
        TextKind::Random
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_the_text_as_written_and_follow_the_seed() {
        for kind in [TextKind::Natural, TextKind::Code] {
            let a = pieces(kind, 7, 3000);
            assert_eq!(a.len(), 3000, "{kind:?} repeats to any length");
            assert_eq!(a, pieces(kind, 7, 3000), "the same seed, the same text");
            assert_ne!(a, pieces(kind, 8, 3000), "another seed, another order");
            let joined: String = a.concat();
            let source = if kind == TextKind::Code {
                CODE
            } else {
                NATURAL
            };
            // Every paragraph of the result is a paragraph of the source, as written.
            for p in joined
                .split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .take(5)
            {
                assert!(source.contains(p), "{kind:?}: `{p}` is not in the source");
            }
            assert_eq!(guess(&joined, &[]), kind, "the kind is told apart");
        }
        assert!(pieces(TextKind::Random, 1, 10).is_empty());
    }

    #[test]
    fn guesses() {
        let table = [
            (
                "slot0x1024 the of and\n the in is that for",
                TextKind::Random,
            ),
            (
                "prefix0 the of\n model keeps going the and",
                TextKind::Random,
            ),
            (
                "Alice was beginning to get very tired of sitting",
                TextKind::Natural,
            ),
            ("fn main() { let x = 1; }", TextKind::Code),
            ("", TextKind::Random),
        ];
        for (text, want) in table {
            assert_eq!(guess(text, &["model", "keeps", "going"]), want, "{text}");
        }
    }
}
