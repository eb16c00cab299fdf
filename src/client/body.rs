//! The bodies of the streamed generation requests, serialized once per prompt: the model,
//! the prompt or messages, `stream_options` (usage in every chunk where the engine streams
//! it; a hosted API gets `include_usage` only), `ignore_eos` where the engine honours it, and
//! the output limit by the name the endpoint takes.

use super::{Api, ClientDialect};
use super::{Client, Prepared, escaped, last_part};
use bytes::Bytes;
use serde_json::Value;

impl Client {
    /// The streamed generation request for `prompt`, serialized once: a slot that sends the
    /// same prompt again and again shares these bytes instead of building a body each time,
    /// and [`Prepared::with_max_tokens`] shares the prompt's bytes between requests.
    pub fn prepare(&self, prompt: &str, max_tokens: u64) -> Prepared {
        let p = self.plain(prompt, max_tokens);
        match &self.images {
            Some(images) if self.api == Api::Chat => with_images(p, images.maker.attach(prompt)),
            _ => p,
        }
    }

    /// [`Client::prepare`] without images.
    fn plain(&self, prompt: &str, max_tokens: u64) -> Prepared {
        let model = Value::String(self.model.clone());
        let (path, prefix, close) = match self.api {
            Api::Completions => (
                "/v1/completions",
                format!("{{\"model\":{model},\"prompt\":"),
                "",
            ),
            Api::Chat => (
                "/v1/chat/completions",
                format!("{{\"model\":{model},\"messages\":[{{\"role\":\"user\",\"content\":"),
                "}]",
            ),
        };
        let eos = if self.ignore_eos {
            ",\"ignore_eos\":true"
        } else {
            ""
        };
        // Hosted APIs refuse fields they do not know, `continuous_usage_stats` among them.
        let continuous = if self.dialect == ClientDialect::Hosted {
            ""
        } else {
            ",\"continuous_usage_stats\":true"
        };
        // `0` for 0.0, as every earlier version sent it.
        let temperature = self.temperature;
        let rest = format!(
            "{close},\"stream\":true,\"stream_options\":{{\"include_usage\":true{continuous}}},\"temperature\":{temperature}{eos}"
        );
        let limit = self.limit_name(self.api == Api::Chat);
        Prepared {
            path,
            prefix: Bytes::from(prefix),
            prompt: escaped(prompt),
            rest: Bytes::from(rest),
            last: last_part(limit, max_tokens),
            max_tokens,
            limit,
            keep_text: false,
            images: 0,
        }
    }

    /// The name of the output limit: OpenAI's chat endpoint takes `max_completion_tokens`
    /// (and refuses `max_tokens` for its newer models); self-hosted engines and every
    /// completions endpoint take `max_tokens`.
    fn limit_name(&self, chat: bool) -> &'static str {
        if chat && self.dialect == ClientDialect::Hosted {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }

    /// A chat request of the given `messages` (a dataset's, or a conversation's), asking
    /// for `max_tokens`; they are sent as they are, without images.
    pub fn prepare_messages(&self, messages: &Value, max_tokens: u64) -> Prepared {
        let mut p = self.plain("", max_tokens);
        p.path = "/v1/chat/completions";
        p.limit = self.limit_name(true);
        p.last = last_part(p.limit, max_tokens);
        p.prefix = Bytes::from(format!(
            "{{\"model\":{},\"messages\":",
            Value::String(self.model.clone())
        ));
        p.prompt = Bytes::from(messages.to_string());
        if let Some(rest) = std::str::from_utf8(&p.rest)
            .ok()
            .and_then(|r| r.strip_prefix("}]"))
        {
            p.rest = Bytes::from(rest.to_string());
        }
        p
    }
}

/// `p` (a chat request of one user message) with its content as parts: the prompt's text,
/// then `parts`, the `n` images' (`workload.images`).
fn with_images(mut p: Prepared, (n, parts): (u32, Bytes)) -> Prepared {
    let (Some(prefix), Some(rest)) = (
        std::str::from_utf8(&p.prefix)
            .ok()
            .and_then(|s| s.strip_suffix("\"content\":")),
        std::str::from_utf8(&p.rest)
            .ok()
            .and_then(|s| s.strip_prefix("}]")),
    ) else {
        return p;
    };
    if n == 0 {
        return p;
    }
    let mut tail = Vec::with_capacity(parts.len() + rest.len() + 4);
    tail.push(b'}');
    tail.extend_from_slice(&parts);
    tail.extend_from_slice(b"]}]");
    tail.extend_from_slice(rest.as_bytes());
    p.prefix = Bytes::from(format!(
        "{prefix}\"content\":[{{\"type\":\"text\",\"text\":"
    ));
    p.rest = Bytes::from(tail);
    p.images = n;
    p
}
