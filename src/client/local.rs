//! A local tokenizer (`workload.tokenizer`): a Hugging Face `tokenizer.json` read by the
//! `tokenizers` crate, and the model's chat template from `tokenizer_config.json` rendered
//! with minijinja as Hugging Face renders it (Jinja with `trim_blocks`, `lstrip_blocks` and
//! Python's string methods). Prompts are then sized without the engine's `/tokenize`, so
//! engines without one (TensorRT-LLM, hosted APIs) are measured with exact prompt lengths.

use super::Api;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why a local tokenizer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The file cannot be read or is not a tokenizer.
    #[error("`workload.tokenizer`: cannot load `{}`: {why}", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// Chat prompts need the model's chat template.
    #[error(
        "`workload.api: chat` with a local tokenizer needs the model's chat template: put its `tokenizer_config.json` (with `chat_template`) beside `{}`",
        path.display()
    )]
    NoTemplate {
        /// The tokenizer file.
        path: PathBuf,
    },
    /// The chat template did not render, or a text did not encode.
    #[error("`workload.tokenizer`: {0}")]
    Use(String),
}

/// A tokenizer and, when its config gives one, the chat template.
pub struct LocalTokenizer {
    tokenizer: tokenizers::Tokenizer,
    chat: Option<Chat>,
    path: PathBuf,
}

/// The chat template and the special tokens it may name.
struct Chat {
    env: minijinja::Environment<'static>,
    bos: String,
    eos: String,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalTokenizer({})", self.path.display())
    }
}

/// The `tokenizer.json` that `path` names: the file itself, or the one in the directory.
pub fn tokenizer_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("tokenizer.json")
    } else {
        path.to_path_buf()
    }
}

impl LocalTokenizer {
    /// Load the tokenizer at `path` (a `tokenizer.json`, or a directory holding one) and the
    /// `tokenizer_config.json` beside it, when there is one.
    pub fn load(path: &Path) -> Result<LocalTokenizer, TokenizerError> {
        let file = tokenizer_file(path);
        let load = |why: String| TokenizerError::Load {
            path: file.clone(),
            why,
        };
        let tokenizer = tokenizers::Tokenizer::from_file(&file).map_err(|e| load(e.to_string()))?;
        let config = file.with_file_name("tokenizer_config.json");
        let chat = if config.is_file() {
            let text = std::fs::read_to_string(&config).map_err(|e| load(e.to_string()))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| load(format!("{}: {e}", config.display())))?;
            chat(&v).map_err(|e| load(format!("{}: its `chat_template`: {e}", config.display())))?
        } else {
            None
        };
        Ok(LocalTokenizer {
            tokenizer,
            chat,
            path: file,
        })
    }

    /// The length of `text` as the engine sees it under `api`: a completion prompt with the
    /// tokenizer's special tokens (a BOS where the model adds one), a chat prompt as one user
    /// message through the chat template with the generation prompt.
    pub fn count(&self, text: &str, api: Api) -> Result<u64, TokenizerError> {
        let (input, special) = match api {
            Api::Completions => (text.to_string(), true),
            Api::Chat => (self.chat_prompt(text)?, false),
        };
        let enc = self
            .tokenizer
            .encode_fast(input, special)
            .map_err(|e| TokenizerError::Use(e.to_string()))?;
        Ok(enc.len() as u64)
    }

    /// `text` as one user message through the chat template.
    pub fn chat_prompt(&self, text: &str) -> Result<String, TokenizerError> {
        let chat = self
            .chat
            .as_ref()
            .ok_or_else(|| TokenizerError::NoTemplate {
                path: self.path.clone(),
            })?;
        let t = chat
            .env
            .get_template("chat")
            .map_err(|e| TokenizerError::Use(e.to_string()))?;
        t.render(minijinja::context! {
            messages => vec![minijinja::context! { role => "user", content => text }],
            add_generation_prompt => true,
            bos_token => chat.bos.as_str(),
            eos_token => chat.eos.as_str(),
        })
        .map_err(|e| TokenizerError::Use(format!("the chat template: {e}")))
    }

    /// Whether chat prompts can be sized.
    pub fn has_chat_template(&self) -> bool {
        self.chat.is_some()
    }
}

/// The chat template of a `tokenizer_config.json` (a string, or a list of named templates of
/// which `default` is taken), ready to render.
fn chat(config: &Value) -> Result<Option<Chat>, minijinja::Error> {
    let source = match config.get("chat_template") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
            .or_else(|| list.first())
            .and_then(|t| t.get("template"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => return Ok(None),
    };
    let special = |key: &str| -> String {
        match config.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            None => String::new(),
        }
    };
    let mut env = minijinja::Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()?;
    env.set_syntax(syntax);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<(), minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_template_owned("chat", source)?;
    Ok(Some(Chat {
        env,
        bos: special("bos_token"),
        eos: special("eos_token"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word-level tokenizer: every known word one token, `<s>` a special token.
    const TOKENIZER: &str = r#"{"version":"1.0","truncation":null,"padding":null,
      "added_tokens":[{"id":0,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
      "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},
      "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
        "pair":[{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]}}},
      "decoder":null,
      "model":{"type":"WordLevel","vocab":{"<s>":0,"<unk>":1,"hello":2,"world":3,"user":4,"[":5,"]":6},"unk_token":"<unk>"}}"#;

    fn dir(config: Option<&str>) -> (PathBuf, LocalTokenizer) {
        let d = std::env::temp_dir().join(format!(
            "benchspec-tok-{}-{}",
            std::process::id(),
            config.map_or(0, str::len)
        ));
        let _ = std::fs::create_dir_all(&d);
        let _ = std::fs::write(d.join("tokenizer.json"), TOKENIZER);
        let _ = std::fs::remove_file(d.join("tokenizer_config.json"));
        if let Some(c) = config {
            let _ = std::fs::write(d.join("tokenizer_config.json"), c);
        }
        let t = LocalTokenizer::load(&d);
        assert!(t.is_ok(), "{:?}", t.err());
        (d.clone(), t.unwrap_or_else(|_| unreachable!()))
    }

    #[test]
    fn completions_count_special_tokens_and_chat_renders_the_template() {
        let config = r#"{"bos_token": {"content": "<s>"}, "chat_template":
            "{% for m in messages %}{{ bos_token }}[ {{ m['role'] }} ] {{ m['content'].strip() }}\n{% endfor %}{% if add_generation_prompt %}[ ]{% endif %}"}"#;
        let (d, t) = dir(Some(config));
        // The post-processor adds `<s>` to a completion prompt.
        assert_eq!(t.count("hello world", Api::Completions).ok(), Some(3));
        let prompt = t.chat_prompt("  hello world ").unwrap_or_default();
        assert_eq!(prompt, "<s>[ user ] hello world\n[ ]");
        // `<s>`, `[`, `user`, `]`, `hello`, `world`, `[`, `]`: no second `<s>` for chat.
        assert_eq!(t.count("  hello world ", Api::Chat).ok(), Some(8));
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn chat_without_a_template_says_what_to_add() {
        let (d, t) = dir(None);
        assert!(!t.has_chat_template());
        let err = t.count("hello", Api::Chat).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("tokenizer_config.json")),
            "{err:?}"
        );
        let missing = LocalTokenizer::load(&d.join("nope.json"))
            .err()
            .map(|e| e.to_string());
        assert!(
            missing
                .as_deref()
                .is_some_and(|e| e.contains("cannot load") && e.contains("nope.json")),
            "{missing:?}"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
