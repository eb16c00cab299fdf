//! vLLM's request and response shapes, as the simulator reads and writes them: completions
//! and chat requests, the streamed chunks (with `continuous_usage_stats` and the separate
//! final `choices: []` usage chunk), `/tokenize`, `/v1/models` and vLLM's error body.

use super::tokenizer;
use serde::Deserialize;
use serde_json::{Value, json};

/// A prompt: text or token ids.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    /// Text.
    Text(String),
    /// Token ids.
    Ids(Vec<u32>),
    /// A batch of one text (OpenAI allows a list).
    Batch(Vec<String>),
}

/// One chat message.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, …
    pub role: String,
    /// Text content (content parts are joined).
    #[serde(default)]
    pub content: Content,
}

/// Message content: a string or OpenAI content parts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// No content.
    #[default]
    None,
    /// Plain text.
    Text(String),
    /// Parts; only `text` parts count.
    Parts(Vec<Value>),
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::None => String::new(),
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a final chunk with usage.
    #[serde(default)]
    pub include_usage: bool,
    /// Put usage in every chunk.
    #[serde(default)]
    pub continuous_usage_stats: bool,
}

/// The fields of a completions or chat request the simulator uses; others are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct GenRequest {
    /// The served model name.
    pub model: Option<String>,
    /// Completions prompt.
    pub prompt: Option<Prompt>,
    /// Chat messages.
    pub messages: Option<Vec<Message>>,
    /// Output limit (`max_completion_tokens` for chat also accepted).
    pub max_tokens: Option<usize>,
    /// The chat name of the output limit.
    pub max_completion_tokens: Option<usize>,
    /// Generate at least this many tokens.
    #[serde(default)]
    pub min_tokens: usize,
    /// Ignore the end of sequence: decode to the limit.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Stream the answer as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// The chat template: each message as `<|role|> content <|end|>`, then the assistant's turn.
pub fn chat_prompt(messages: &[Message], add_generation_prompt: bool) -> String {
    let mut text = String::new();
    for m in messages {
        text.push_str(&format!("<|{}|>\n{}\n<|end|>\n", m.role, m.content.text()));
    }
    if add_generation_prompt {
        text.push_str("<|assistant|>\n");
    }
    text
}

/// A request without one prompt to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PromptMissing {
    /// A batch of several prompts.
    #[error("the simulator serves one prompt per request")]
    Batch,
    /// Neither a prompt nor messages.
    #[error("either `prompt` or `messages` must be given")]
    None,
}

impl GenRequest {
    /// The prompt's token ids (chat through the template).
    pub fn prompt_ids(&self) -> Result<Vec<u32>, PromptMissing> {
        if let Some(messages) = &self.messages {
            return Ok(tokenizer::encode(&chat_prompt(messages, true)));
        }
        match &self.prompt {
            Some(Prompt::Text(t)) => Ok(tokenizer::encode(t)),
            Some(Prompt::Ids(ids)) => Ok(ids.clone()),
            Some(Prompt::Batch(b)) if b.len() == 1 => Ok(tokenizer::encode(&b[0])),
            Some(Prompt::Batch(_)) => Err(PromptMissing::Batch),
            None => Err(PromptMissing::None),
        }
    }

    /// The images of the chat messages' content parts, in order; an error for one that
    /// cannot be read.
    pub fn images(&self) -> Result<Vec<super::images::SeenImage>, super::SimError> {
        let mut out = Vec::new();
        for m in self.messages.iter().flatten() {
            if let Content::Parts(parts) = &m.content {
                super::images::read(parts, &mut out)?;
            }
        }
        Ok(out)
    }

    /// The prompt's text (chat through the template); empty for token ids.
    pub fn prompt_text(&self) -> String {
        match (&self.messages, &self.prompt) {
            (Some(messages), _) => chat_prompt(messages, true),
            (None, Some(Prompt::Text(t))) => t.clone(),
            (None, Some(Prompt::Batch(b))) => b.concat(),
            _ => String::new(),
        }
    }

    /// The output limit, vLLM's default when absent (the rest of the context).
    pub fn limit(&self, prompt_len: usize, max_model_len: usize) -> usize {
        self.max_completion_tokens
            .or(self.max_tokens)
            .unwrap_or(max_model_len.saturating_sub(prompt_len))
    }
}

/// The request body of `/tokenize`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenizeRequest {
    /// Text to tokenize.
    pub prompt: Option<String>,
    /// Text to tokenize, llama.cpp's name for it.
    pub content: Option<String>,
    /// Chat messages to tokenize through the template.
    pub messages: Option<Vec<Message>>,
    /// Add the assistant's turn (chat).
    #[serde(default = "yes")]
    pub add_generation_prompt: bool,
}

fn yes() -> bool {
    true
}

/// vLLM's error body.
pub fn error_body(kind: &str, message: &str, code: u16, param: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// vLLM's message for a prompt that leaves no room in `max_model_len`. vLLM tokenizes at
/// most `max_model_len + 1` tokens of it, hence "at least".
pub fn too_long(prompt_len: usize, max_model_len: usize) -> String {
    let n = prompt_len.min(max_model_len.saturating_add(1));
    format!(
        "This model's maximum context length is {max_model_len} tokens. However, your prompt contains at least {n} input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value={n})"
    )
}

/// Usage as vLLM writes it at the end (a whole response, the final usage chunk).
pub fn usage(prompt: usize, completion: usize, cached: usize) -> Value {
    json!({"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion, "prompt_tokens_details": {"cached_tokens": cached}})
}

/// The running usage vLLM puts in every chunk with `continuous_usage_stats`: no
/// `prompt_tokens_details` (the cached tokens come in the final chunk); chat's with
/// `completion_tokens_details: null`.
pub fn running_usage(kind: EndpointKind, prompt: usize, completion: usize) -> Value {
    let mut u = json!({"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion});
    if kind == EndpointKind::Chat {
        u["completion_tokens_details"] = Value::Null;
    }
    u
}

/// Which endpoint a stream belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// `/v1/completions`.
    Completion,
    /// `/v1/chat/completions`.
    Chat,
}

impl EndpointKind {
    /// The prefix of a response id: `cmpl` or `chatcmpl`.
    pub fn id_prefix(self) -> &'static str {
        match self {
            EndpointKind::Completion => "cmpl",
            EndpointKind::Chat => "chatcmpl",
        }
    }
}

/// The fixed parts of every chunk of one response.
#[derive(Debug, Clone)]
pub struct Head {
    /// `cmpl-…` or `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// Served model name.
    pub model: String,
    /// Endpoint.
    pub kind: EndpointKind,
}

impl Head {
    fn object(&self, stream: bool) -> &'static str {
        match (self.kind, stream) {
            (EndpointKind::Completion, _) => "text_completion",
            (EndpointKind::Chat, true) => "chat.completion.chunk",
            (EndpointKind::Chat, false) => "chat.completion",
        }
    }

    /// The chat stream's first chunk: the role, empty content, with the running usage (no
    /// token yet) when `continuous_usage_stats` asks for it.
    pub fn role_chunk(&self, usage: Option<Value>) -> Value {
        let mut chunk = json!({"id": self.id, "object": self.object(true), "created": self.created, "model": self.model,
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]});
        if let Some(u) = usage {
            chunk["usage"] = u;
        }
        chunk["prompt_token_ids"] = Value::Null;
        chunk["prompt_text"] = Value::Null;
        chunk
    }

    /// A chunk carrying `text`; `reasoning` puts it in `reasoning_content` (chat).
    pub fn token_chunk(
        &self,
        text: &str,
        reasoning: bool,
        finish: Option<&str>,
        usage: Option<Value>,
    ) -> Value {
        let choice = match self.kind {
            EndpointKind::Completion => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish, "stop_reason": null,
                       "prompt_token_ids": null, "token_ids": null})
            }
            EndpointKind::Chat => {
                let delta = if reasoning {
                    json!({"reasoning_content": text})
                } else {
                    json!({"content": text})
                };
                // vLLM writes a chat chunk's `stop_reason` only with its finish reason.
                let mut c =
                    json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish});
                if finish.is_some() {
                    c["stop_reason"] = Value::Null;
                }
                c["token_ids"] = Value::Null;
                c
            }
        };
        let mut chunk = json!({"id": self.id, "object": self.object(true), "created": self.created, "model": self.model, "choices": [choice]});
        if let Some(u) = usage {
            chunk["usage"] = u;
        }
        chunk
    }

    /// vLLM's separate final usage chunk, with its `system_fingerprint` (`vllm-VERSION-…`);
    /// chat's `prompt_tokens_details` also has `created_cache_tokens` (0).
    pub fn usage_chunk(&self, mut usage: Value, version: &str) -> Value {
        if self.kind == EndpointKind::Chat
            && let Some(d) = usage.get_mut("prompt_tokens_details")
        {
            d["created_cache_tokens"] = 0.into();
        }
        json!({"id": self.id, "object": self.object(true), "created": self.created, "model": self.model, "choices": [], "usage": usage,
               "system_fingerprint": format!("vllm-{version}-00000000")})
    }

    /// A whole non-streamed response.
    pub fn full(&self, reasoning: &str, content: &str, finish: &str, usage: Value) -> Value {
        let choice = match self.kind {
            EndpointKind::Completion => {
                json!({"index": 0, "text": content, "logprobs": null, "finish_reason": finish, "stop_reason": null, "prompt_logprobs": null})
            }
            EndpointKind::Chat => {
                json!({"index": 0, "message": {"role": "assistant", "content": content, "reasoning_content": if reasoning.is_empty() { Value::Null } else { Value::from(reasoning) }, "tool_calls": []}, "logprobs": null, "finish_reason": finish, "stop_reason": null})
            }
        };
        json!({"id": self.id, "object": self.object(false), "created": self.created, "model": self.model, "choices": [choice], "usage": usage})
    }
}
