//! Reading one streamed chunk: is it token-bearing (contract §5), how many tokens does it
//! carry (cumulative usage differenced, else one, reconciled later), did the stream finish or
//! report an error.

use super::outcome::{Chunk, Failure, Outcome};
use serde_json::Value;
use tokio::time::Instant;

/// Per-stream state while reading chunks.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    cumulative: u64,
    pub(super) finished: bool,
    /// Some token-bearing chunk came without usage: usage is then only a final total.
    lost_usage: bool,
}

impl ChunkState {
    /// Read one event; a token-bearing chunk is returned.
    pub(super) fn event(
        &mut self,
        data: &str,
        at: Instant,
        out: &mut Outcome,
    ) -> Result<Option<Chunk>, Failure> {
        if data == "[DONE]" {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|_| Failure::Json)?;
        if v.get("error").is_some_and(|e| !e.is_null())
            || v.get("object").and_then(Value::as_str) == Some("error")
        {
            return Err(Failure::StreamError);
        }
        let usage = v.get("usage").filter(|u| !u.is_null());
        if let Some(p) = usage
            .and_then(|u| u.get("prompt_tokens"))
            .and_then(Value::as_u64)
        {
            out.usage_prompt = Some(p);
        }
        let completion = usage
            .and_then(|u| u.get("completion_tokens"))
            .and_then(Value::as_u64);
        let choice = v.get("choices").and_then(|c| c.get(0));
        if choice
            .and_then(|c| c.get("finish_reason"))
            .is_some_and(|f| !f.is_null())
        {
            self.finished = true;
        }
        if let Some(c) = completion {
            out.usage_completion = Some(c);
        }
        if !choice.is_some_and(token_bearing) {
            return Ok(None);
        }
        out.chunks += 1;
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
            at,
            tokens,
            from_usage,
        }))
    }
}

/// Whether a choice carries generated text: `text`, `delta.content`, `delta.reasoning_content`,
/// `delta.reasoning` or a tool-call delta. Role-only and empty chunks do not.
pub fn token_bearing(choice: &Value) -> bool {
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if non_empty(choice.get("text")) {
        return true;
    }
    let Some(delta) = choice.get("delta") else {
        return false;
    };
    non_empty(delta.get("content"))
        || non_empty(delta.get("reasoning_content"))
        || non_empty(delta.get("reasoning"))
        || delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_bearing_table() {
        let cases = [
            (json!({"text": " a"}), true),
            (json!({"text": ""}), false),
            (
                json!({"delta": {"role": "assistant", "content": ""}}),
                false,
            ),
            (json!({"delta": {"content": "x"}}), true),
            (json!({"delta": {"reasoning_content": "x"}}), true),
            (json!({"delta": {"reasoning": "x"}}), true),
            (json!({"delta": {"tool_calls": [{"index": 0}]}}), true),
            (json!({"delta": {}}), false),
        ];
        for (choice, want) in cases {
            assert_eq!(token_bearing(&choice), want, "{choice}");
        }
    }

    #[test]
    fn usage_differences_count_several_tokens_per_chunk() {
        let mut st = ChunkState::default();
        let now = Instant::now();
        let mut out = Outcome {
            sent: now,
            chunks: 0,
            counted: 0,
            usage_completion: None,
            usage_prompt: None,
            all_usage: true,
            failure: None,
        };
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
    }
}
