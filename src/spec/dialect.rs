//! What each engine kind's API needs of the spec (docs/spec.md, engine kinds): a local
//! tokenizer that exists where it is named, and is given where the engine cannot count
//! tokens itself — TensorRT-LLM's `trtllm-serve` and hosted APIs have no `/tokenize`, and
//! SGLang's counts no chat messages — and `ignore_eos`, which hosted APIs refuse.

use super::diag::Problem;
use super::engine::EngineKind;
use super::workload::ApiSpec;
use serde_json::Value;

/// The problems of `workload.tokenizer` and `ignore_eos` for the spec's engine kinds (the
/// base kind and every variant's); `resolve` finds the tokenizer's files.
pub fn check(json: &Value, resolve: &super::files::Resolve) -> Vec<Problem> {
    let at = |p: &str| json.pointer(p);
    let api: ApiSpec = parse(at("/workload/api")).unwrap_or_default();
    let tokenizer = at("/workload/tokenizer")
        .and_then(Value::as_str)
        .unwrap_or("server");
    let mut kinds: Vec<EngineKind> = parse(at("/engine/kind")).into_iter().collect();
    if let Some(Value::Array(vs)) = at("/engine/variants") {
        kinds.extend(vs.iter().filter_map(|v| parse::<EngineKind>(v.get("kind"))));
    }
    let mut out = Vec::new();
    if tokenizer == "server" {
        for kind in &kinds {
            if let Some(why) = cannot_count(*kind, api) {
                out.push(Problem::error(
                    "/engine/kind",
                    format!("{why}: give `workload.tokenizer` (the model's `tokenizer.json`, or a directory holding it and `tokenizer_config.json`) so prompts are sized locally"),
                ));
            }
        }
    } else {
        out.extend(local(tokenizer, api, resolve));
    }
    if kinds.contains(&EngineKind::Openai) && at("/workload/ignore_eos") == Some(&Value::Bool(true))
    {
        out.push(Problem::warning(
            "/workload/ignore_eos",
            "hosted OpenAI-compatible APIs refuse `ignore_eos`: it is not sent to a `kind: openai` engine, whose output lengths vary (recorded, never a validity failure)",
        ));
    }
    out
}

fn parse<T: serde::de::DeserializeOwned>(v: Option<&Value>) -> Option<T> {
    v.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Why `kind` cannot count the prompts of `api` itself, when it cannot.
pub fn cannot_count(kind: EngineKind, api: ApiSpec) -> Option<&'static str> {
    match (kind, api) {
        (EngineKind::Trtllm, _) => Some("`trtllm-serve` has no `/tokenize`"),
        (EngineKind::Openai, _) => Some("an OpenAI-compatible API has no `/tokenize`"),
        (EngineKind::Sglang, ApiSpec::Chat) => {
            Some("SGLang's `/tokenize` counts a prompt, not chat messages")
        }
        _ => None,
    }
}

/// A local tokenizer must exist (and, for chat prompts, its config beside it).
fn local(name: &str, api: ApiSpec, resolve: &super::files::Resolve) -> Vec<Problem> {
    let ptr = "/workload/tokenizer";
    let path = resolve(super::files::FileRef::Tokenizer, name);
    let file = if path.is_dir() {
        path.join("tokenizer.json")
    } else {
        path.clone()
    };
    if !file.is_file() {
        let what = if path.is_dir() {
            format!("`{name}` holds no `tokenizer.json`")
        } else {
            format!(
                "`{name}` does not exist (relative to the spec: {})",
                path.display()
            )
        };
        return vec![Problem::error(
            ptr,
            format!(
                "{what}; name the model's `tokenizer.json` or a directory holding it, or write `server`"
            ),
        )];
    }
    let config = file.with_file_name("tokenizer_config.json");
    if api == ApiSpec::Chat && !config.is_file() {
        return vec![Problem::error(
            ptr,
            format!(
                "chat prompts need the model's chat template: put its `tokenizer_config.json` beside `{}`",
                file.display()
            ),
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(json: Value) -> Vec<String> {
        let files = crate::spec::files::Files::BesideSpec;
        check(&json, &|what, name: &str| {
            files.resolve("/nonexistent/spec.yaml", what, name)
        })
        .into_iter()
        .map(|p| format!("{} {}", p.pointer, p.message))
        .collect()
    }

    #[test]
    fn engines_without_tokenize_need_a_local_tokenizer() {
        let cases = [
            (
                serde_json::json!({"engine": {"kind": "trtllm"}}),
                Some("`trtllm-serve` has no `/tokenize`"),
            ),
            (
                serde_json::json!({"engine": {"kind": "openai"}}),
                Some("has no `/tokenize`"),
            ),
            (
                serde_json::json!({"engine": {"kind": "sglang"}, "workload": {"api": "chat"}}),
                Some("not chat messages"),
            ),
            (serde_json::json!({"engine": {"kind": "sglang"}}), None),
            (
                serde_json::json!({"engine": {"kind": "vllm", "variants": [{"name": "t", "kind": "trtllm"}]}}),
                Some("`trtllm-serve`"),
            ),
            (
                serde_json::json!({"engine": {"kind": "openai"}, "workload": {"tokenizer": "tok.json"}}),
                Some("`tok.json` does not exist"),
            ),
        ];
        for (json, want) in cases {
            let got = problems(json.clone());
            match want {
                Some(w) => assert!(got.iter().any(|p| p.contains(w)), "{json}: {got:?}"),
                None => assert!(got.is_empty(), "{json}: {got:?}"),
            }
        }
        let warn = problems(
            serde_json::json!({"engine": {"kind": "openai"}, "workload": {"ignore_eos": true}}),
        );
        assert!(
            warn.iter().any(|p| p.starts_with("/workload/ignore_eos")),
            "{warn:?}"
        );
    }
}
