//! The engine's informational endpoints as the client asks them: readiness, `/v1/models`,
//! `/version`, `/metrics`, over the network or from a server in this process, and their
//! errors in words a user can act on (never carrying the key). [`Client::introspect`] is the
//! one way to ask a server what it is (`init`, and the run's manifest).

use super::{Api, ApiKey, Client, ClientDialect, Settings, exchange, http_builder, local};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Why a request to one of the engine's informational endpoints failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The HTTP client could not be made.
    #[error("cannot build the HTTP client: {}", describe(.0))]
    Build(reqwest::Error),
    /// The request could not be sent or its answer not read.
    #[error("{}", describe(.0))]
    Send(reqwest::Error),
    /// The server answered with an error status.
    #[error("{path} answered HTTP {status}")]
    Status {
        /// The endpoint.
        path: String,
        /// The HTTP status.
        status: u16,
    },
    /// The answer was not JSON.
    #[error("{path} did not answer JSON: {}", describe(source))]
    NotJson {
        /// The endpoint.
        path: String,
        /// The error.
        source: reqwest::Error,
    },
    /// The in-process server's answer was not JSON.
    #[error("{path} did not answer JSON: {why}")]
    BadJson {
        /// The endpoint.
        path: String,
        /// The parser's words.
        why: String,
    },
    /// The in-process server's answer broke off.
    #[error("{path}: the answer broke off")]
    Broken {
        /// The endpoint.
        path: String,
    },
    /// The tokenize answer had no count.
    #[error("{path} answered without `count` or `tokens`")]
    NoCount {
        /// The endpoint.
        path: String,
    },
    /// The chat template answer had no prompt.
    #[error("{path} answered without `prompt`")]
    NoPrompt {
        /// The endpoint.
        path: String,
    },
    /// The local tokenizer could not count.
    #[error(transparent)]
    Local(#[from] local::TokenizerError),
}

/// How long each informational answer may take while a server is asked what it is.
pub const INTROSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a server said about itself: `/v1/models` (it must answer), and `/version`, `/props`
/// (llama.cpp), `/get_server_info` (SGLang) as JSON objects and `/metrics` as text, each
/// `None` where it did not answer so.
#[derive(Debug, Clone, Default)]
pub struct Introspection {
    /// `/v1/models`.
    pub models: Value,
    /// `/version`.
    pub version: Option<Value>,
    /// llama.cpp's `/props`.
    pub props: Option<Value>,
    /// SGLang's `/get_server_info`.
    pub server_info: Option<Value>,
    /// `/metrics`.
    pub metrics: Option<String>,
}

impl Introspection {
    /// The entries of `/v1/models`, in its order.
    pub fn model_entries(&self) -> Vec<&Value> {
        self.models
            .get("data")
            .and_then(Value::as_array)
            .map(|d| d.iter().collect())
            .unwrap_or_default()
    }

    /// The model ids of `/v1/models`, in its order.
    pub fn model_ids(&self) -> Vec<String> {
        self.model_entries()
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }

    /// The `/v1/models` entry of model `id`.
    pub fn model(&self, id: &str) -> Option<&Value> {
        self.model_entries()
            .into_iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
    }
}

impl Client {
    /// A client that only asks `base`'s informational endpoints (`init`: no model chosen yet).
    pub fn asking(base: &str, key: Option<ApiKey>) -> Result<Client, ApiError> {
        Client::new(Settings {
            base: base.to_string(),
            others: Vec::new(),
            balance: Default::default(),
            model: String::new(),
            api: Api::default(),
            dialect: ClientDialect::default(),
            key,
            stall: INTROSPECT_TIMEOUT,
            ignore_eos: false,
            pool: 1,
            adapters: Vec::new(),
            adapter_seed: 0,
            temperature: 0.0,
        })
    }

    /// Ask the server what it is; an error only when `/v1/models` does not answer JSON.
    pub async fn introspect(&self) -> Result<Introspection, ApiError> {
        let models = self.json_within("/v1/models", INTROSPECT_TIMEOUT).await?;
        let object = |r: Result<Value, ApiError>| r.ok().filter(Value::is_object);
        Ok(Introspection {
            models,
            version: object(self.json_within("/version", INTROSPECT_TIMEOUT).await),
            props: object(self.json_within("/props", INTROSPECT_TIMEOUT).await),
            server_info: object(
                self.json_within("/get_server_info", INTROSPECT_TIMEOUT)
                    .await,
            ),
            metrics: self.get_text("/metrics", INTROSPECT_TIMEOUT).await.ok(),
        })
    }

    /// GET `path` as JSON, the answer within `timeout`.
    async fn json_within(&self, path: &str, timeout: Duration) -> Result<Value, ApiError> {
        if let Some(server) = &self.inner {
            let get = (axum::http::Method::GET, path, bytes::Bytes::new());
            return Client::inner_json(server, get).await;
        }
        let r = self
            .get(path)
            .timeout(timeout)
            .send()
            .await
            .map_err(ApiError::Send)?;
        json_of(path, r).await
    }

    /// An exchange with the in-process server: the body of its 2xx answer, as text.
    async fn inner_text(
        server: &Arc<dyn exchange::Exchange>,
        (method, path, body): (axum::http::Method, &str, bytes::Bytes),
    ) -> Result<String, ApiError> {
        let r =
            exchange::Reading::new(server.exchange(exchange::request(method, path, body)).await);
        if !(200..300).contains(&r.status) {
            return Err(ApiError::Status {
                path: path.into(),
                status: r.status,
            });
        }
        r.text()
            .await
            .map_err(|()| ApiError::Broken { path: path.into() })
    }

    /// [`Client::inner_text`] as JSON.
    pub(super) async fn inner_json(
        server: &Arc<dyn exchange::Exchange>,
        call: (axum::http::Method, &str, bytes::Bytes),
    ) -> Result<Value, ApiError> {
        let path = call.1.to_string();
        let text = Client::inner_text(server, call).await?;
        serde_json::from_str(&text).map_err(|e| ApiError::BadJson {
            path,
            why: e.to_string(),
        })
    }

    /// Whether GET `path` answers 2xx.
    pub async fn get_ok(&self, path: &str) -> bool {
        if let Some(server) = &self.inner {
            let get = (axum::http::Method::GET, path, bytes::Bytes::new());
            return Client::inner_text(server, get).await.is_ok();
        }
        let rb = self
            .http
            .get(format!("{}{path}", self.base))
            .timeout(Duration::from_secs(5));
        rb.send().await.is_ok_and(|r| r.status().is_success())
    }

    /// Whether the server answers GET `path` at all (any HTTP status) on a new connection:
    /// a pooled connection may outlive the server's listening socket.
    pub async fn answers_afresh(&self, path: &str) -> bool {
        if self.inner.is_some() {
            return true;
        }
        let Ok(http) = http_builder()
            .http1_only()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(5))
            .build()
        else {
            return false;
        };
        let mut rb = http.get(format!("{}{path}", self.base));
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key.expose());
        }
        rb.send().await.is_ok()
    }

    /// A GET of `path` on the engine, with the API key.
    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let rb = self.http.get(format!("{}{path}", self.base));
        match &self.key {
            Some(key) => rb.bearer_auth(key.expose()),
            None => rb,
        }
    }

    /// GET `path` as JSON.
    pub async fn get_json(&self, path: &str) -> Result<Value, ApiError> {
        if let Some(server) = &self.inner {
            let get = (axum::http::Method::GET, path, bytes::Bytes::new());
            return Client::inner_json(server, get).await;
        }
        let r = self.get(path).send().await.map_err(ApiError::Send)?;
        json_of(path, r).await
    }

    /// GET `path` as text (a 2xx answer within `timeout`).
    pub async fn get_text(&self, path: &str, timeout: Duration) -> Result<String, ApiError> {
        if let Some(server) = &self.inner {
            let get = (axum::http::Method::GET, path, bytes::Bytes::new());
            return Client::inner_text(server, get).await;
        }
        let r = self
            .get(path)
            .timeout(timeout)
            .send()
            .await
            .map_err(ApiError::Send)?;
        if !r.status().is_success() {
            return Err(ApiError::Status {
                path: path.into(),
                status: r.status().as_u16(),
            });
        }
        r.text().await.map_err(ApiError::Send)
    }
}

/// The JSON body of a successful answer from `path`.
pub(super) async fn json_of(path: &str, r: reqwest::Response) -> Result<Value, ApiError> {
    let status = r.status();
    if !status.is_success() {
        return Err(ApiError::Status {
            path: path.into(),
            status: status.as_u16(),
        });
    }
    r.json().await.map_err(|source| ApiError::NotJson {
        path: path.into(),
        source,
    })
}

/// A reqwest error in words: a refused or failed connection and a timeout as such (the
/// HTTP library's layers are not the user's business), anything else with its causes.
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut innermost = text.clone();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        innermost = s.to_string();
        text.push_str(": ");
        text.push_str(&innermost);
        source = s.source();
    }
    if e.is_connect() && innermost.contains("refused") {
        "connection refused (is the server running, on this port?)".into()
    } else if e.is_connect() {
        format!("cannot connect: {innermost}")
    } else if e.is_timeout() {
        "no answer in time".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::replay::{Answer, replaying};

    /// llama.cpp's answers (its `/v1/models` and `/props` as b6000 serves them): what
    /// answered JSON objects is kept, what did not (`/version`, `/get_server_info`, a 418 of
    /// the replay) is `None`; a `/version` that is no object is `None` too.
    #[tokio::test]
    async fn introspect_keeps_what_answered() {
        let client = replaying(
            Api::Completions,
            vec![
                Answer::get(
                    "/v1/models",
                    r#"{"data":[{"id":"smollm2","owned_by":"llamacpp","meta":{"n_ctx":4096}},{"id":"b"}]}"#,
                ),
                Answer::get(
                    "/props",
                    r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":2}"#,
                ),
                Answer::get("/version", "[1]"),
                Answer::get("/metrics", "llamacpp:prompt_tokens_total 0\n"),
            ],
        );
        let a = client.introspect().await.expect("the models answered");
        assert_eq!(a.model_ids(), ["smollm2", "b"]);
        let entry = a.model("smollm2").and_then(|m| m.pointer("/meta/n_ctx"));
        assert_eq!(entry.and_then(Value::as_u64), Some(4096));
        assert!(a.model("c").is_none());
        let slots = a.props.as_ref().and_then(|p| p.get("total_slots"));
        assert_eq!(slots.and_then(Value::as_u64), Some(2));
        assert!(a.version.is_none() && a.server_info.is_none());
        assert_eq!(
            a.metrics.as_deref(),
            Some("llamacpp:prompt_tokens_total 0\n")
        );
        let none = replaying(Api::Completions, Vec::new()).introspect().await;
        assert!(matches!(none, Err(ApiError::Status { status: 418, .. })));
    }
}
