//! The answer's text, kept for a request that asks for it (a session's turn, whose answer
//! the next turn resends exactly as received): each token-bearing chunk's `text`, or the chat
//! delta's `content`, parsed a second time only for such requests.

use super::Outcome;
use serde::Deserialize;
use std::borrow::Cow;

/// The generated text of a chunk's first choice, read only for a request that keeps its
/// answer (a session's turn): `text`, or the chat delta's `content`.
#[derive(Deserialize)]
struct TextEvent<'a> {
    #[serde(default, borrow)]
    choices: Vec<TextChoice<'a>>,
}

#[derive(Deserialize)]
struct TextChoice<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<TextDelta<'a>>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

/// Append a token-bearing chunk's text (`text`, or the chat delta's `content`) to the
/// outcome's answer.
pub(super) fn keep_text(data: &str, out: &mut Outcome) {
    let Ok(ev) = serde_json::from_str::<TextEvent>(data) else {
        return;
    };
    let Some(choice) = ev.choices.into_iter().next() else {
        return;
    };
    let piece = choice.text.or_else(|| choice.delta.and_then(|d| d.content));
    if let Some(piece) = piece {
        out.text.get_or_insert_with(String::new).push_str(&piece);
    }
}
