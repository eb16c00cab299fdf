//! A dataset of prompts for load cells (`phases.load.dataset`): a JSONL file beside the spec,
//! one request a line — `{"prompt": "…"}` or `{"messages": [{"role": …, "content": …}]}`, with
//! an optional `"output_tokens": N` — read and checked whole at validate time, so a missing
//! file or a bad line is a located error before anything runs.

use super::diag::Problem;
use super::workload::ApiSpec;
use serde_json::Value;
use std::path::Path;

/// Datasets larger than this are refused: they are read whole before a cell starts.
pub const MAX_DATASET_BYTES: u64 = 256 << 20;

/// What is wrong with a dataset, naming the file (and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatasetError {
    /// The file cannot be read.
    #[error("cannot read the dataset `{file}`: {why}")]
    Read {
        /// The file as the spec names it.
        file: String,
        /// The I/O error.
        why: String,
    },
    /// The file is too large to read whole.
    #[error("the dataset `{file}` is {bytes} bytes; at most {MAX_DATASET_BYTES} are read")]
    TooLarge {
        /// The file as the spec names it.
        file: String,
        /// Its size.
        bytes: u64,
    },
    /// A line is not a request.
    #[error("`{file}` line {line}: {why}")]
    Line {
        /// The file as the spec names it.
        file: String,
        /// From 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No line holds a request.
    #[error("the dataset `{file}` has no requests")]
    Empty {
        /// The file as the spec names it.
        file: String,
    },
}

/// One request of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// A completions prompt (chat wraps it as one user message).
    pub prompt: Option<String>,
    /// Chat messages, as given.
    pub messages: Option<Value>,
    /// Tokens to generate (default: `workload.max_output_tokens`).
    pub output_tokens: Option<u64>,
}

/// The entries of the dataset at `path`, or what is wrong with it (the file and line).
pub fn read(path: &Path, shown: &str, api: ApiSpec) -> Result<Vec<Entry>, DatasetError> {
    let unreadable = |e: std::io::Error| DatasetError::Read {
        file: shown.to_string(),
        why: e.to_string(),
    };
    let bytes = std::fs::metadata(path).map_err(unreadable)?.len();
    if bytes > MAX_DATASET_BYTES {
        return Err(DatasetError::TooLarge {
            file: shown.to_string(),
            bytes,
        });
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    parse(&text, shown, api)
}

/// The entries of a dataset's text.
pub fn parse(text: &str, shown: &str, api: ApiSpec) -> Result<Vec<Entry>, DatasetError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |why: String| DatasetError::Line {
            file: shown.to_string(),
            line: i + 1,
            why,
        };
        let v: Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON ({e})")))?;
        out.push(entry(&v, api).map_err(|p| at(p.to_string()))?);
    }
    if out.is_empty() {
        return Err(DatasetError::Empty {
            file: shown.to_string(),
        });
    }
    Ok(out)
}

/// What is wrong with one line of a dataset.
#[derive(Debug, thiserror::Error)]
enum LineProblem {
    #[error("`prompt` must be a string")]
    Prompt,
    #[error("`messages` must be a list of {{\"role\": …, \"content\": \"…\"}}")]
    Messages,
    #[error("`output_tokens` must be a whole number above 0")]
    OutputTokens,
    #[error("needs `prompt` (a string) or `messages` (a list)")]
    Neither,
    #[error(
        "has `messages` but `workload.api` is `completions`: give `prompt`, or set `api: chat`"
    )]
    ChatOnly,
}

fn entry(v: &Value, api: ApiSpec) -> Result<Entry, LineProblem> {
    let prompt = match v.get("prompt") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(LineProblem::Prompt),
    };
    let messages = match v.get("messages") {
        None => None,
        Some(m) if is_messages(m) => Some(m.clone()),
        Some(_) => return Err(LineProblem::Messages),
    };
    let output_tokens = match v.get("output_tokens") {
        None => None,
        Some(n) => Some(
            n.as_u64()
                .filter(|n| *n > 0)
                .ok_or(LineProblem::OutputTokens)?,
        ),
    };
    match (&prompt, &messages, api) {
        (None, None, _) => Err(LineProblem::Neither),
        (None, Some(_), ApiSpec::Completions) => Err(LineProblem::ChatOnly),
        _ => Ok(Entry {
            prompt,
            messages,
            output_tokens,
        }),
    }
}

fn is_messages(m: &Value) -> bool {
    m.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter().all(|x| {
                x.get("role").is_some_and(Value::is_string)
                    && x.get("content").is_some_and(Value::is_string)
            })
    })
}

/// The problems of the spec's dataset, if it names one: the file, its lines, and the one
/// context it stands for.
pub fn check(json: &Value, resolve: &super::files::Resolve) -> Vec<Problem> {
    let ptr = "/phases/load/dataset";
    let Some(name) = json.pointer(ptr).and_then(Value::as_str) else {
        return Vec::new();
    };
    let api = json
        .pointer("/workload/api")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    if let Err(why) = read(&resolve(super::files::FileRef::Dataset, name), name, api) {
        out.push(Problem::error(ptr, why.to_string()));
    }
    let count = |p: &str| json.pointer(p).and_then(Value::as_array).map(Vec::len);
    let contexts = count("/phases/load/contexts").or(count("/matrix/contexts"));
    if contexts.is_some_and(|n| n != 1) {
        out.push(Problem::error(
            ptr,
            "a dataset's prompts keep their own lengths: list the one context they stand for in `phases.load.contexts`",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_checked_one_by_one() {
        let cases = [
            ("{\"prompt\": \"hi\"}\n", ApiSpec::Completions, None),
            (
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"output_tokens\": 8}\n",
                ApiSpec::Chat,
                None,
            ),
            (
                "\n{\"prompt\": \"a\"}\nnot json\n",
                ApiSpec::Completions,
                Some("line 3: not JSON"),
            ),
            (
                "{\"prompt\": 3}\n",
                ApiSpec::Completions,
                Some("line 1: `prompt` must be a string"),
            ),
            (
                "{\"text\": \"x\"}\n",
                ApiSpec::Completions,
                Some("needs `prompt`"),
            ),
            (
                "{\"prompt\": \"x\", \"output_tokens\": 0}\n",
                ApiSpec::Completions,
                Some("above 0"),
            ),
            (
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n",
                ApiSpec::Completions,
                Some("set `api: chat`"),
            ),
            ("\n\n", ApiSpec::Completions, Some("has no requests")),
        ];
        for (text, api, want) in cases {
            let got = parse(text, "d.jsonl", api);
            match want {
                None => assert!(got.is_ok(), "{text}: {got:?}"),
                Some(w) => {
                    let e = got.err().map(|e| e.to_string()).unwrap_or_default();
                    assert!(e.contains(w), "{text}: {e}");
                }
            }
        }
    }
}
