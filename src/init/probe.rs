//! Asking a running server what it is: its models (`/v1/models`), its version (`/version`,
//! llama.cpp's `/props`, SGLang's `/get_server_info`), its engine (those endpoints and the
//! metric names of `/metrics`) and its context limit (vLLM's `max_model_len` in `/v1/models`,
//! llama.cpp's `n_ctx` per slot, SGLang's `context_length`).

use super::InitError;
use crate::client::{ApiError, ApiKey, Client, Introspection};
use crate::spec::EngineKind;
use serde_json::Value;

/// What a server said about itself, and where each answer came from (for the comments).
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The base URL asked, without a trailing slash.
    pub base_url: String,
    /// The engine it is.
    pub kind: EngineKind,
    /// How the engine was recognised.
    pub kind_from: String,
    /// The version it reports.
    pub version: Option<String>,
    /// The endpoint that gave the version.
    pub version_from: &'static str,
    /// The model ids of `/v1/models`, in its order.
    pub models: Vec<String>,
    /// The model the spec measures.
    pub model: String,
    /// The context limit (prompt + output) of that model.
    pub max_model_len: Option<u64>,
    /// The endpoint that gave it.
    pub max_model_len_from: &'static str,
    /// The weights' quantization, when the server says (llama.cpp's `model_ftype`).
    pub quantization: Option<String>,
    /// Requests served at once, when the server says (llama.cpp's `total_slots`).
    pub slots: Option<u64>,
}

/// The answers of the endpoints asked, `None` where one did not answer with JSON (or text).
type Answers = Introspection;

/// Ask the server at `base_url` (with `key` as a bearer token) what it serves; `model`
/// picks one of several models.
pub fn probe(base_url: &str, key: Option<&str>, model: Option<&str>) -> Result<Served, InitError> {
    let base = checked_url(base_url)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(InitError::Runtime)?;
    let answers = rt.block_on(ask(&base, key))?;
    understand(&base, &answers, model)
}

/// `http://host:port` or `https://…`, without a trailing slash.
fn checked_url(url: &str) -> Result<String, InitError> {
    let bad = |why: &str| InitError::BadUrl {
        url: url.to_string(),
        why: why.to_string(),
    };
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("give the scheme, as in http://127.0.0.1:8000"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("give a host, as in http://127.0.0.1:8000"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Ask the server through the client's one introspection ([`Client::introspect`]); its
/// errors in `init`'s words.
async fn ask(base: &str, key: Option<&str>) -> Result<Answers, InitError> {
    let unreachable_why = |why: String| InitError::Unreachable {
        url: base.to_string(),
        why,
    };
    let key = key
        .map(|k| ApiKey::new(k.to_string()))
        .transpose()
        .map_err(|e| unreachable_why(e.to_string()))?;
    let client = Client::asking(base, key).map_err(|e| unreachable_why(e.to_string()))?;
    let not_openai = |why: String| InitError::NotOpenAi {
        url: base.to_string(),
        why,
    };
    client.introspect().await.map_err(|e| match e {
        ApiError::Send(e) => unreachable(base, &e),
        ApiError::Status { status, .. } => {
            not_openai(format!("`GET /v1/models` answered HTTP {status}"))
        }
        ApiError::NotJson { .. } | ApiError::BadJson { .. } => {
            not_openai("`GET /v1/models` did not answer JSON".into())
        }
        e => not_openai(e.to_string()),
    })
}

/// Why nothing answered, in words (reqwest's own chain names its internals).
fn unreachable(base: &str, e: &reqwest::Error) -> InitError {
    let why = if e.is_timeout() {
        "it did not answer in time"
    } else if e.is_connect() {
        "nothing accepts connections there (is the server running, on this port?)"
    } else {
        "the request failed before an answer"
    };
    InitError::Unreachable {
        url: base.to_string(),
        why: why.to_string(),
    }
}

fn understand(base: &str, a: &Answers, model: Option<&str>) -> Result<Served, InitError> {
    let models = a.model_ids();
    let chosen = match model {
        Some(m) if models.iter().any(|x| x == m) => m.to_string(),
        Some(m) => {
            return Err(InitError::UnknownModel {
                model: m.to_string(),
                there: models.join(", "),
            });
        }
        None => models
            .first()
            .cloned()
            .ok_or_else(|| InitError::NotOpenAi {
                url: base.to_string(),
                why: "`GET /v1/models` lists no model".into(),
            })?,
    };
    let entry = a.model(&chosen).unwrap_or(&Value::Null);
    let (kind, kind_from) = engine_kind(a, entry);
    let (version, version_from) = version(a, kind);
    let (max_model_len, max_model_len_from) = context_limit(a, entry);
    let props = |key: &str| a.props.as_ref().and_then(|p| p.get(key).cloned());
    Ok(Served {
        base_url: base.to_string(),
        kind,
        kind_from,
        version,
        version_from,
        models,
        model: chosen,
        max_model_len,
        max_model_len_from,
        quantization: props("model_ftype").and_then(|v| v.as_str().map(str::to_string)),
        slots: props("total_slots").and_then(|v| v.as_u64()),
    })
}

/// The engine, from the most specific evidence first.
fn engine_kind(a: &Answers, entry: &Value) -> (EngineKind, String) {
    let owned_by = entry.get("owned_by").and_then(Value::as_str).unwrap_or("");
    let metrics = a.metrics.as_deref().unwrap_or("");
    let has = |prefix: &str| metrics.lines().any(|l| l.starts_with(prefix));
    let llama_props = a
        .props
        .as_ref()
        .is_some_and(|p| p.get("default_generation_settings").is_some());
    let found = |kind, from: &str| (kind, from.to_string());
    if llama_props {
        found(EngineKind::LlamaCpp, "llama.cpp's `/props`")
    } else if owned_by == "llamacpp" || has("llamacpp:") {
        found(
            EngineKind::LlamaCpp,
            "llama.cpp's `/v1/models` and `/metrics`",
        )
    } else if a.server_info.is_some() || has("sglang:") || owned_by == "sglang" {
        found(
            EngineKind::Sglang,
            "SGLang's `/get_server_info` and `/metrics`",
        )
    } else if crate::telemetry::trtllm::is_iteration_stats(metrics) {
        found(
            EngineKind::Trtllm,
            "TensorRT-LLM's iteration statistics on `/metrics`",
        )
    } else if has("vllm:") || owned_by == "vllm" {
        found(EngineKind::Vllm, "vLLM's `/v1/models` and `/metrics`")
    } else if a.version.is_some() {
        found(EngineKind::Vllm, "`/version`, as vLLM serves it")
    } else {
        found(
            EngineKind::Openai,
            "no engine-specific endpoint answered: an OpenAI-compatible API",
        )
    }
}

fn version(a: &Answers, kind: EngineKind) -> (Option<String>, &'static str) {
    let text = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match kind {
        EngineKind::LlamaCpp => (text(a.props.as_ref(), "build_info"), "`/props`"),
        EngineKind::Sglang if a.server_info.is_some() => (
            text(a.server_info.as_ref(), "version"),
            "`/get_server_info`",
        ),
        _ => (text(a.version.as_ref(), "version"), "`/version`"),
    }
}

fn context_limit(a: &Answers, entry: &Value) -> (Option<u64>, &'static str) {
    let at = |v: Option<&Value>, pointer: &str| v.and_then(|v| v.pointer(pointer)?.as_u64());
    if let Some(n) = at(Some(entry), "/max_model_len") {
        return (Some(n), "`/v1/models`");
    }
    if let Some(n) = at(a.props.as_ref(), "/default_generation_settings/n_ctx") {
        return (Some(n), "`/props` (`n_ctx` per slot)");
    }
    if let Some(n) = at(Some(entry), "/meta/n_ctx") {
        return (Some(n), "`/v1/models` (`n_ctx`)");
    }
    if let Some(n) = at(a.server_info.as_ref(), "/context_length") {
        return (Some(n), "`/get_server_info`");
    }
    (None, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_url_needs_a_scheme_and_a_host() {
        assert!(matches!(
            checked_url("localhost:8000"),
            Err(InitError::BadUrl { .. })
        ));
        assert!(matches!(
            checked_url("http://"),
            Err(InitError::BadUrl { .. })
        ));
        assert_eq!(
            checked_url("http://127.0.0.1:8000/").unwrap(),
            "http://127.0.0.1:8000"
        );
    }

    #[test]
    fn llama_cpp_is_known_by_its_props() {
        let a = Answers {
            models: json!({"data": [{"id": "smollm2", "owned_by": "llamacpp", "meta": {"n_ctx": 4096}}]}),
            props: Some(
                json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2, "build_info": "b123", "model_ftype": "Q4_1"}),
            ),
            ..Answers::default()
        };
        let s = understand("http://h:1", &a, None).unwrap();
        assert_eq!(s.kind, EngineKind::LlamaCpp);
        assert_eq!(
            (s.version.as_deref(), s.max_model_len, s.slots),
            (Some("b123"), Some(4096), Some(2))
        );
        assert_eq!(s.quantization.as_deref(), Some("Q4_1"));
    }

    #[test]
    fn vllm_sglang_and_unknown_servers() {
        let models =
            json!({"data": [{"id": "a", "owned_by": "vllm", "max_model_len": 8192}, {"id": "b"}]});
        let a = Answers {
            models: models.clone(),
            version: Some(json!({"version": "0.9.1"})),
            metrics: Some("# HELP x\nvllm:num_requests_running 0\n".into()),
            ..Answers::default()
        };
        let s = understand("http://h:1", &a, Some("a")).unwrap();
        assert_eq!(
            (s.kind, s.version.as_deref(), s.max_model_len),
            (EngineKind::Vllm, Some("0.9.1"), Some(8192))
        );
        assert!(matches!(
            understand("http://h:1", &a, Some("c")),
            Err(InitError::UnknownModel { .. })
        ));
        let sglang = Answers {
            models: models.clone(),
            server_info: Some(json!({"version": "0.5", "context_length": 32768})),
            ..Answers::default()
        };
        let s = understand("http://h:1", &sglang, Some("b")).unwrap();
        assert_eq!(
            (s.kind, s.version.as_deref(), s.max_model_len),
            (EngineKind::Sglang, Some("0.5"), Some(32768))
        );
        let bare = Answers {
            models,
            ..Answers::default()
        };
        let s = understand("http://h:1", &bare, Some("b")).unwrap();
        assert_eq!((s.kind, s.max_model_len), (EngineKind::Openai, None));
    }
}
