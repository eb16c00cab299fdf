//! `init`: a first spec. Without a server, the quickstart spec (the embedded simulator);
//! with `--from URL`, a spec for the server running there, from what it says about itself
//! ([`probe`]), rendered as commented YAML ([`render`]) and checked like any spec before it
//! is written. Nothing here prints.

mod probe;
mod render;

pub use probe::{Served, probe};
pub use render::{Choices, Sizes, render, sizes};

use crate::spec::{self, Severity, Stage};
use std::io::Write as _;
use std::path::Path;

/// The quickstart spec (`specs/quickstart.yaml`), as shipped.
const QUICKSTART: &str = include_str!("../../specs/quickstart.yaml");

/// Why `init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// `--from` is not an http(s) URL.
    #[error("--from `{url}`: {why}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// Nothing answered at the URL.
    #[error("the server at {url} cannot be reached: {why}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// Why, in words.
        why: String,
    },
    /// Something answered, but not an OpenAI-compatible API serving a model.
    #[error("the server at {url} is not an OpenAI-compatible engine serving a model: {why}")]
    NotOpenAi {
        /// The URL asked.
        url: String,
        /// What it answered.
        why: String,
    },
    /// `--model` names a model the server does not serve.
    #[error("the server does not serve `{model}`; it serves {there}: pick one with --model")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The models it serves.
        there: String,
    },
    /// The file is there already.
    #[error("`{path}` exists; add --force to overwrite it, or name another file with --out")]
    Exists {
        /// The file.
        path: String,
    },
    /// `init` writes YAML only.
    #[error("`{path}`: init writes YAML; name the file `.yaml` or `.yml`")]
    NotYaml {
        /// The file.
        path: String,
    },
    /// The spec written for this server would not validate (an engine that cannot count
    /// tokens needs `--tokenizer`, say).
    #[error("the spec for this server would not validate: {problems}")]
    Invalid {
        /// The problems, each with its field.
        problems: String,
    },
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The file could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The quickstart spec, without its editor comment (its schema path is the repository's).
pub fn quickstart() -> String {
    QUICKSTART
        .lines()
        .filter(|l| !l.starts_with("# yaml-language-server:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Check `text` as the spec at `path` would be checked by `validate`: the spec `init`
/// writes must pass.
pub fn check(path: &str, text: &str) -> Result<(), InitError> {
    if !matches!(spec::Syntax::of(path), Some(spec::Syntax::Yaml)) {
        return Err(InitError::NotYaml {
            path: path.to_string(),
        });
    }
    let env = |name: &str| std::env::var(name).ok();
    match spec::parse(path, text, Stage::Validate, &env) {
        Ok(_) => Ok(()),
        Err(e) => {
            let problems: Vec<String> = e
                .diagnostics()
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| format!("{} (at {})", d.message, d.pointer))
                .collect();
            Err(InitError::Invalid {
                problems: problems.join("; "),
            })
        }
    }
}

/// Write `text` to `path`, refusing an existing file unless `force`.
pub fn write(path: &Path, text: &str, force: bool) -> Result<(), InitError> {
    let shown = path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            InitError::Exists {
                path: shown.clone(),
            }
        } else {
            InitError::Write {
                path: shown.clone(),
                source,
            }
        }
    })?;
    file.write_all(text.as_bytes())
        .map_err(|source| InitError::Write {
            path: shown,
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quickstart_validates() {
        let text = quickstart();
        assert!(text.contains("kind: sim") && !text.contains("yaml-language-server"));
        check("quickstart.yaml", &text).unwrap();
    }

    #[test]
    fn a_rendered_spec_validates_for_every_kind_that_counts_tokens() {
        for (kind, mml) in [
            (spec::EngineKind::Vllm, Some(131072)),
            (spec::EngineKind::LlamaCpp, Some(4096)),
            (spec::EngineKind::Sglang, None),
        ] {
            let served = Served {
                base_url: "http://127.0.0.1:8000".into(),
                kind,
                kind_from: "a test".into(),
                version: Some("1.0".into()),
                version_from: "`/version`",
                models: vec!["org/model: x".into(), "other".into()],
                model: "org/model: x".into(),
                max_model_len: mml,
                max_model_len_from: "`/v1/models`",
                quantization: Some("Q4_1".into()),
                slots: Some(2),
            };
            let choices = Choices {
                duration: "5s".into(),
                ..Choices::default()
            };
            let text = render(&served, &choices);
            check("s.yaml", &text).unwrap_or_else(|e| panic!("{kind:?}: {e}\n{text}"));
            assert!(text.contains("served_name: \"org/model: x\""), "{text}");
        }
    }
}
