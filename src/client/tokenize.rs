//! Counting a prompt's tokens as the engine does: with the local tokenizer when the spec
//! names one, else the engine's own endpoint in its dialect — vLLM's and SGLang's
//! `/tokenize` (a prompt, or vLLM's chat messages), llama.cpp's `/tokenize` with `content`
//! after `/apply-template` for chat.

use super::info::json_of;
use super::{Api, ClientDialect};
use super::{ApiError, Client};
use serde_json::{Value, json};

impl Client {
    /// The prompt's length in tokens as the engine counts it, chat template included.
    pub async fn count_tokens(&self, text: &str) -> Result<u64, ApiError> {
        if let Some(n) = self.transport.as_ref().and_then(|t| t.count_tokens(text)) {
            return Ok(n);
        }
        if let Some(local) = &self.local {
            return Ok(local.count(text, self.api)?);
        }
        let messages = json!([{"role": "user", "content": text}]);
        let (path, body) = match (self.dialect, self.api) {
            (ClientDialect::LlamaCpp, Api::Completions) => {
                ("/tokenize", json!({"content": text, "add_special": true}))
            }
            (ClientDialect::LlamaCpp, Api::Chat) => {
                let templated = self
                    .post_json("/apply-template", &json!({"messages": messages}))
                    .await?;
                let prompt = templated
                    .get("prompt")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ApiError::NoPrompt {
                        path: "/apply-template".into(),
                    })?
                    .to_string();
                ("/tokenize", json!({"content": prompt, "add_special": true}))
            }
            (_, Api::Completions) => ("/tokenize", json!({"model": self.model, "prompt": text})),
            (_, Api::Chat) => (
                "/tokenize",
                json!({"model": self.model, "messages": messages}),
            ),
        };
        let v = self.post_json(path, &body).await?;
        v.get("count")
            .and_then(Value::as_u64)
            .or_else(|| {
                v.get("tokens")
                    .and_then(Value::as_array)
                    .map(|t| t.len() as u64)
            })
            .ok_or_else(|| ApiError::NoCount { path: path.into() })
    }

    async fn post_json(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        if let Some(server) = &self.inner {
            let post = (axum::http::Method::POST, path, body.to_string().into());
            return Client::inner_json(server, post).await;
        }
        let r = self.post(path, body).send().await.map_err(ApiError::Send)?;
        json_of(path, r).await
    }
}
