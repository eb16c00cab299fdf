//! What the client is told before a run: the endpoint, the model, the API and the engine's
//! dialect, the key, and the limits. Resolved from the spec by the plan stage; the client
//! never reads a spec or the environment itself.

use std::time::Duration;

/// Which endpoint the generation requests go to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Api {
    /// `/v1/completions`.
    #[default]
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// How the server differs from the plain OpenAI API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientDialect {
    /// A self-hosted serving engine (vLLM, SGLang, TensorRT-LLM, the simulator): a
    /// `/tokenize` endpoint, `continuous_usage_stats`, `ignore_eos`, `max_tokens`.
    #[default]
    Serving,
    /// llama.cpp's server: `/tokenize` and `/apply-template` of its own shapes.
    LlamaCpp,
    /// A hosted OpenAI-compatible API: no field it does not know, no `ignore_eos`, and
    /// `max_completion_tokens` on chat.
    Hosted,
}

/// An API key: sent as a bearer token, never printed (its `Debug` is redacted), and
/// checked to be a valid header value, so a CR or LF in it cannot inject headers.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// Why a key cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the API key holds a character a header cannot carry (a control character such as CR or LF, or a non-ASCII one) at byte {at}; set the variable to the key alone"
)]
pub struct BadKey {
    /// Where the first bad byte is.
    pub at: usize,
}

impl ApiKey {
    /// `key` as a key, if every byte of it can stand in an HTTP header value.
    pub fn new(key: String) -> Result<ApiKey, BadKey> {
        match key
            .bytes()
            .position(|b| !(b == b'\t' || (0x20..0x7f).contains(&b)))
        {
            Some(at) => Err(BadKey { at }),
            None => Ok(ApiKey(key)),
        }
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(…)")
    }
}

/// Everything the client needs for one run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `http://host:port` or `https://…`.
    pub base: String,
    /// More servers beside `base` (replicas, endpoints): generation requests are spread
    /// over all of them.
    pub others: Vec<String>,
    /// How they are spread.
    pub balance: super::Balance,
    /// The model name sent with every request.
    pub model: String,
    /// Completions or chat.
    pub api: Api,
    /// The engine's dialect.
    pub dialect: ClientDialect,
    /// The bearer token, if any.
    pub key: Option<ApiKey>,
    /// A request with no bytes for this long fails as `stall_timeout`.
    pub stall: Duration,
    /// Ask the engine to ignore end-of-sequence (never sent to a hosted API).
    pub ignore_eos: bool,
    /// Keep-alive connections kept.
    pub pool: usize,
    /// LoRA adapters (name, weight): each request's `model` is one, drawn with
    /// `adapter_seed`; empty: every request names `model`.
    pub adapters: Vec<(String, f64)>,
    /// The seed of the adapters' draws.
    pub adapter_seed: u64,
    /// The sampling temperature sent with every request (0: greedy).
    pub temperature: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_with_a_line_break_is_refused_where_it_breaks() {
        let table = [
            ("sk-abc123", None),
            ("sk-abc\r\nX-Evil: 1", Some(6)),
            ("sk\n", Some(2)),
            ("\u{7f}", Some(0)),
            ("sk-é", Some(3)),
            ("with\ttab", None),
        ];
        for (key, at) in table {
            let got = ApiKey::new(key.into()).err().map(|e| e.at);
            assert_eq!(got, at, "{key:?}");
        }
    }

    #[test]
    fn a_key_is_never_in_debug_output() {
        let Ok(k) = ApiKey::new("sk-secret".into()) else {
            panic!("a plain key is accepted")
        };
        assert!(!format!("{k:?}").contains("secret"));
    }
}
