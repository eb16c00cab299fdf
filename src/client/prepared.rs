//! A generation request serialized once: the JSON body in parts, so that the requests of
//! a slot (its warm-up and every measured one) share the prompt's bytes, however long the
//! prompt.

use bytes::Bytes;

/// A generation request serialized once, shared by every send of it: the JSON body is
/// `prefix`, the JSON-escaped `prompt`, `rest` and `last` (the output limit and the closing
/// brace).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(super) path: &'static str,
    pub(super) prefix: Bytes,
    pub(super) prompt: Bytes,
    pub(super) rest: Bytes,
    pub(super) last: Bytes,
    pub(super) max_tokens: u64,
    /// The name of the output limit: `max_tokens`, or `max_completion_tokens` for a hosted
    /// API's chat endpoint.
    pub(super) limit: &'static str,
    /// The answer's text is kept in the outcome (a session's turn).
    pub(super) keep_text: bool,
    /// Images after the prompt's text (`workload.images`).
    pub(super) images: u32,
}

impl Prepared {
    /// The same request asking for `max_tokens`, sharing the prompt's bytes.
    pub fn with_max_tokens(&self, max_tokens: u64) -> Prepared {
        Prepared {
            last: last_part(self.limit, max_tokens),
            max_tokens,
            ..self.clone()
        }
    }

    /// The images the request carries after its text.
    pub fn images(&self) -> u32 {
        self.images
    }

    /// The same request naming `model` (a LoRA adapter) instead of `base`, the model its
    /// body was prepared with; the prompt's bytes are shared.
    pub fn with_model(&self, base: &str, model: &str) -> Prepared {
        let old = 9 + serde_json::Value::String(base.to_string())
            .to_string()
            .len();
        let mut prefix = format!(
            "{{\"model\":{}",
            serde_json::Value::String(model.to_string())
        );
        if self.prefix.starts_with(b"{\"model\":") && self.prefix.len() >= old {
            prefix.push_str(&String::from_utf8_lossy(&self.prefix[old..]));
        } else {
            return self.clone();
        }
        Prepared {
            prefix: Bytes::from(prefix),
            ..self.clone()
        }
    }

    /// The same request, keeping its answer's text in the outcome.
    pub fn keeping_text(mut self) -> Prepared {
        self.keep_text = true;
        self
    }

    /// The parts of the body, in order.
    pub(super) fn parts(&self) -> [&Bytes; 4] {
        [&self.prefix, &self.prompt, &self.rest, &self.last]
    }

    /// The body's length in bytes.
    pub(super) fn len(&self) -> usize {
        self.parts().iter().map(|p| p.len()).sum()
    }

    /// The endpoint's path (`/v1/completions`, `/v1/chat/completions`).
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The body in one piece (for reqwest, or another HTTP client).
    pub fn whole(&self) -> Bytes {
        let mut body = Vec::with_capacity(self.len());
        for p in self.parts() {
            body.extend_from_slice(p);
        }
        Bytes::from(body)
    }
}

/// `text` as a JSON string, in an allocation of its size: a slot keeps it for the whole
/// context, so no spare capacity is held (128 slots × 123K-token prompts).
pub(super) fn escaped(text: &str) -> Bytes {
    let mut out = Vec::with_capacity(text.len() + text.len() / 16 + 2);
    let _ = serde_json::to_writer(&mut out, text);
    out.shrink_to_fit();
    Bytes::from(out)
}

/// The body's last part: the output limit named `limit`, and the closing brace.
pub(super) fn last_part(limit: &str, max_tokens: u64) -> Bytes {
    Bytes::from(format!(",\"{limit}\":{max_tokens}}}"))
}
