//! The simulator's own deterministic tokenizer. A token is a run of up to six ASCII letters or
//! digits, or one other non-blank character; blanks only separate. It is linear in the
//! text, needs no vocabulary file, and lets a client build prompts of an exact length with
//! one round trip: `n` words of at most six letters are `n` tokens.

/// Token ids of `text`.
pub fn encode(text: &str) -> Vec<u32> {
    let mut ids = Vec::new();
    for_each_token(text, |t| ids.push(token_id(t)));
    ids
}

/// The number of tokens in `text`, without building the id list.
pub fn count(text: &str) -> usize {
    let mut n = 0;
    for_each_token(text, |_| n += 1);
    n
}

/// The token strings of `text`.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// The longest run of letters or digits that is still one token.
pub const MAX_WORD: usize = 6;

fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            let start = i;
            while i < bytes.len() && i - start < MAX_WORD && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            f(&text[start..i]);
        } else if b.is_ascii_whitespace() {
            i += 1;
        } else {
            // One character (of any width) is one token.
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            f(&text[i..i + len]);
            i += len;
        }
    }
}

/// A stable id for a token string (FNV-1a folded into a 32k vocabulary).
pub fn token_id(piece: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in piece.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % 32_000
}

/// The words generated text is made of.
pub const OUTPUT_WORDS: [&str; 16] = [
    "the", "model", "keeps", "going", "and", "every", "token", "counts", "here", "as", "one",
    "more", "word", "of", "text", "again",
];

/// The text of the `i`-th generated token of a request: a short word with a leading space,
/// so the generated text tokenizes back to exactly its token count.
pub fn output_piece(request_seed: u64, i: usize) -> &'static str {
    let k = (request_seed
        .wrapping_add(i as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        >> 60) as usize;
    OUTPUT_WORDS[k % OUTPUT_WORDS.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenization_table() {
        let cases: &[(&str, &[&str])] = &[
            ("hello world", &["hello", "world"]),
            ("benchmarking", &["benchm", "arking"]),
            ("a,b", &["a", ",", "b"]),
            ("  ", &[]),
            ("héllo", &["h", "é", "llo"]),
            ("8K tokens!", &["8K", "tokens", "!"]),
        ];
        for (text, want) in cases {
            assert_eq!(pieces(text), *want, "{text}");
            assert_eq!(count(text), want.len());
            assert_eq!(encode(text).len(), want.len());
        }
    }

    #[test]
    fn output_tokenizes_to_its_length() {
        let text: String = (0..500)
            .map(|i| format!(" {}", output_piece(7, i)))
            .collect();
        assert_eq!(count(&text), 500);
    }
}
