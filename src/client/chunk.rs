//! Reading one streamed chunk: is it token-bearing (docs/results.md), how many tokens does it
//! carry (cumulative usage differenced, else one, reconciled later), did the stream finish or
//! report an error. A chunk is read into borrowed, typed fields — the first choice's text
//! presence, the usage counts, the finish reason, an error — skipping everything else, so no
//! JSON tree is built and nothing is allocated per chunk.

use super::outcome::{Chunk, Failure, Outcome};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use tokio::time::Instant;

/// The fields of a chunk that are measured; the rest is skipped unread.
#[derive(Deserialize)]
struct Event<'a> {
    /// Present and not null: the stream reports an error.
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    choices: Option<FirstChoice>,
    /// llama.cpp's server's own timings, in the last chunk.
    #[serde(default)]
    timings: Option<Timings>,
}

/// llama.cpp's `timings`: the drafts of its speculative decoding, when it has a draft model.
#[derive(Deserialize)]
struct Timings {
    #[serde(default)]
    draft_n: Option<u64>,
    #[serde(default)]
    draft_n_accepted: Option<u64>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// OpenAI's, vLLM's and llama.cpp's `cached_tokens`: the prompt's tokens found in the
    /// prefix cache.
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// What the first choice says: does it carry generated text, did it finish.
#[derive(Deserialize, Default)]
struct Choice {
    #[serde(default)]
    text: NonEmpty,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: NonEmpty,
    #[serde(default)]
    reasoning_content: NonEmpty,
    #[serde(default)]
    reasoning: NonEmpty,
    #[serde(default)]
    tool_calls: NonEmpty,
}

impl Choice {
    /// Generated text: `text`, `delta.content`, `delta.reasoning_content`, `delta.reasoning`
    /// or a tool-call delta. Role-only and empty chunks carry none.
    fn token_bearing(&self) -> bool {
        self.text.0
            || self.delta.as_ref().is_some_and(|d| {
                d.content.0 || d.reasoning_content.0 || d.reasoning.0 || d.tool_calls.0
            })
    }
}

/// Whether a value is a non-empty string or a non-empty array; anything else is "empty".
#[derive(Default)]
struct NonEmpty(bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NonEmptyVisitor)
    }
}

struct NonEmptyVisitor;

impl<'de> Visitor<'de> for NonEmptyVisitor {
    type Value = NonEmpty;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<NonEmpty, E> {
        Ok(NonEmpty(!v.is_empty()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NonEmpty, A::Error> {
        let first = seq.next_element::<IgnoredAny>()?.is_some();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(NonEmpty(first))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<NonEmpty, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(NonEmpty(false))
    }
    fn visit_unit<E: de::Error>(self) -> Result<NonEmpty, E> {
        Ok(NonEmpty(false))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<NonEmpty, E> {
        Ok(NonEmpty(false))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<NonEmpty, E> {
        Ok(NonEmpty(false))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<NonEmpty, E> {
        Ok(NonEmpty(false))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<NonEmpty, E> {
        Ok(NonEmpty(false))
    }
}

/// The first element of `choices`; the others are skipped.
struct FirstChoice(Option<Choice>);

impl<'de> Deserialize<'de> for FirstChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstChoice;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstChoice, A::Error> {
                let first = seq.next_element::<Choice>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<FirstChoice, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Per-stream state while reading chunks.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    cumulative: u64,
    pub(super) finished: bool,
    /// Some token-bearing chunk came without usage: usage is then only a final total.
    lost_usage: bool,
    /// The generated text is kept in the outcome.
    pub(super) keep_text: bool,
}

impl ChunkState {
    /// Read one event that arrived at `at`; a token-bearing chunk is returned.
    pub(super) fn event(
        &mut self,
        data: &str,
        at: Instant,
        out: &mut Outcome,
    ) -> Result<Option<Chunk>, Failure> {
        if data == "[DONE]" {
            return Ok(None);
        }
        let ev: Event = serde_json::from_str(data).map_err(|_| Failure::Json)?;
        if ev.error.is_some() || ev.object.as_deref() == Some("error") {
            out.message = super::refusal::message_of(data.as_bytes());
            return Err(Failure::StreamError);
        }
        let usage = ev.usage.unwrap_or(Usage {
            prompt_tokens: None,
            completion_tokens: None,
            prompt_tokens_details: None,
        });
        if let Some(p) = usage.prompt_tokens {
            out.usage_prompt = Some(p);
        }
        if let Some(c) = usage.prompt_tokens_details.and_then(|d| d.cached_tokens) {
            out.usage_cached = Some(c);
        }
        if let Some(Timings {
            draft_n: Some(n),
            draft_n_accepted,
        }) = ev.timings
        {
            out.drafted = Some((n, draft_n_accepted.unwrap_or(0)));
        }
        let completion = usage.completion_tokens;
        if let Some(c) = completion {
            out.usage_completion = Some(c);
        }
        let choice = ev.choices.and_then(|c| c.0).unwrap_or_default();
        if choice.finish_reason.is_some() {
            self.finished = true;
        }
        if !choice.token_bearing() {
            return Ok(None);
        }
        out.chunks += 1;
        if self.keep_text {
            super::text::keep_text(data, out);
        }
        // Cumulative usage on every chunk gives each chunk's tokens; usage that appears only
        // on the last chunk (llama.cpp) is a total, reconciled by the caller.
        let (tokens, from_usage) = match completion {
            Some(c) if !self.lost_usage && c > self.cumulative => (c - self.cumulative, true),
            _ => (1, false),
        };
        self.lost_usage |= !from_usage;
        self.cumulative += tokens;
        out.all_usage &= from_usage;
        out.counted += tokens;
        Ok(Some(Chunk {
            sent: out.sent,
            at,
            tokens,
            from_usage,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_bearing_table() {
        let cases = [
            (json!({"text": " a"}), true),
            (json!({"text": "\"quoted\"\n"}), true),
            (json!({"text": ""}), false),
            (json!({"text": null}), false),
            (json!({"text": 7}), false),
            (
                json!({"delta": {"role": "assistant", "content": ""}}),
                false,
            ),
            (json!({"delta": {"content": "x"}}), true),
            (
                json!({"delta": {"content": null, "reasoning_content": "x"}}),
                true,
            ),
            (json!({"delta": {"reasoning": "x"}}), true),
            (json!({"delta": {"tool_calls": [{"index": 0}]}}), true),
            (json!({"delta": {"tool_calls": []}}), false),
            (json!({"delta": {}}), false),
            (json!({"delta": null}), false),
        ];
        for (choice, want) in cases {
            let data = json!({"id": "x", "choices": [choice.clone(), {"text": "second"}]});
            let mut st = ChunkState::default();
            let mut out = outcome(Instant::now());
            let got = st.event(&data.to_string(), Instant::now(), &mut out);
            assert_eq!(got.map(|c| c.is_some()), Ok(want), "{choice}");
        }
    }

    fn outcome(sent: Instant) -> Outcome {
        Outcome::started(sent)
    }

    #[test]
    fn finish_reason_error_and_null_fields() {
        let now = Instant::now();
        let cases = [
            (
                r#"{"choices":[{"text":"","finish_reason":"length"}]}"#,
                Ok(true),
            ),
            (
                r#"{"choices":[{"text":"a","finish_reason":null}]}"#,
                Ok(false),
            ),
            (r#"{"choices":null,"usage":null,"error":null}"#, Ok(false)),
            (
                r#"{"object":"error","message":"x"}"#,
                Err(Failure::StreamError),
            ),
            (r#"{"error":{"message":"boom"}}"#, Err(Failure::StreamError)),
            (r#"{"choices":[{"text":"a"}"#, Err(Failure::Json)),
        ];
        for (data, want) in cases {
            let mut st = ChunkState::default();
            let got = st.event(data, now, &mut outcome(now)).map(|_| st.finished);
            assert_eq!(got, want, "{data}");
        }
    }

    #[test]
    fn a_kept_answer_is_the_text_as_received_and_cached_tokens_are_read() {
        let now = Instant::now();
        let stream = [
            r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hello"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
            r#"{"choices":[{"delta":{"content":", \"world\"\n"}}]}"#,
            r#"{"choices":[{"text":" and more"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}}"#,
        ];
        for keep in [true, false] {
            let mut st = ChunkState {
                keep_text: keep,
                ..ChunkState::default()
            };
            let mut out = outcome(now);
            for data in stream {
                assert!(st.event(data, now, &mut out).is_ok(), "{data}");
            }
            let want = keep.then(|| "Hello, \"world\"\n and more".to_string());
            assert_eq!(out.text, want, "reasoning is not part of the answer");
            assert_eq!(out.chunks, 4);
            assert_eq!(out.usage_cached, Some(8));
        }
    }

    #[test]
    fn usage_differences_count_several_tokens_per_chunk() {
        let mut st = ChunkState::default();
        let now = Instant::now();
        let mut out = Outcome::started(now);
        let c1 = st.event(
            r#"{"choices":[{"text":" a b c"}],"usage":{"prompt_tokens":9,"completion_tokens":3}}"#,
            now,
            &mut out,
        );
        let c2 = st.event(
            r#"{"choices":[{"text":" d"}],"usage":{"prompt_tokens":9,"completion_tokens":4}}"#,
            now,
            &mut out,
        );
        assert_eq!(c1.ok().flatten().map(|c| c.tokens), Some(3));
        assert_eq!(c2.ok().flatten().map(|c| c.tokens), Some(1));
        let last = st.event(
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}"#,
            now,
            &mut out,
        );
        assert_eq!(last, Ok(None));
        assert_eq!(
            (
                out.counted,
                out.usage_completion,
                out.usage_prompt,
                out.all_usage
            ),
            (4, Some(4), Some(9), true)
        );
        assert_eq!(st.event("{oops", now, &mut out), Err(Failure::Json));
        assert_eq!(
            st.event(r#"{"error":{"message":"boom"}}"#, now, &mut out),
            Err(Failure::StreamError)
        );
        assert_eq!(
            out.message.as_deref(),
            Some("boom"),
            "the stream's own words"
        );
    }
}
