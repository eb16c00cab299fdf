//! `benchspec init`: write a first spec — the quickstart, or one for a running server.

use super::output::Out;
use crate::Error;
use crate::init::{self, Choices};
use std::path::{Path, PathBuf};

/// The options of `init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Ask the OpenAI-compatible server at URL (http://host:port) what it serves, and write a
    /// spec that attaches to it; without it, the quickstart spec (the embedded simulator).
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// The spec file to write (YAML); `-` prints it instead.
    #[arg(long, value_name = "FILE", default_value = "benchspec.yaml")]
    pub out: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// The model to measure, when the server serves several (default: the first listed).
    #[arg(long, value_name = "NAME", requires = "from")]
    pub model: Option<String>,
    /// Each decode cell's measured window.
    #[arg(long, value_name = "DURATION", default_value = "5s", requires = "from")]
    pub duration: String,
    /// A local `tokenizer.json` (or a directory holding it) for engines without
    /// `/tokenize` (TensorRT-LLM, hosted APIs).
    #[arg(long, value_name = "PATH", requires = "from")]
    pub tokenizer: Option<PathBuf>,
    /// The NAME of the environment variable holding the server's API key (sent while asking,
    /// and written into the spec).
    #[arg(long, value_name = "NAME", requires = "from")]
    pub api_key_env: Option<String>,
}

/// Run `init`.
pub fn run(args: &InitArgs, out: &Out) -> Result<i32, Error> {
    let stdout = args.out.as_os_str() == "-";
    let path = if stdout {
        "benchspec.yaml".to_string()
    } else {
        args.out.display().to_string()
    };
    if !stdout && !args.force && args.out.exists() {
        return Err(init::InitError::Exists { path }.into());
    }
    let (text, what) = match &args.from {
        None => (
            init::quickstart(),
            "the quickstart spec (the embedded simulator)".to_string(),
        ),
        Some(url) => from_server(args, url)?,
    };
    init::check(&path, &text)?;
    if stdout {
        out.print(&text);
        return Ok(0);
    }
    init::write(&args.out, &text, args.force)?;
    out.info(&format!(
        "wrote {path}: {what}\ncheck it with `benchspec validate {path}`, see its cells with `benchspec plan {path}`, measure with `benchspec run {path}`"
    ));
    Ok(0)
}

/// The spec for the server at `url`, and a line saying what it found.
fn from_server(args: &InitArgs, url: &str) -> Result<(String, String), Error> {
    let key = args
        .api_key_env
        .as_deref()
        .and_then(|name| std::env::var(name).ok());
    let served = init::probe(url, key.as_deref(), args.model.as_deref())?;
    let choices = Choices {
        duration: args.duration.clone(),
        tokenizer: args.tokenizer.as_deref().map(absolute),
        api_key_env: args.api_key_env.clone(),
    };
    let limit = served
        .max_model_len
        .map_or("no context limit reported".to_string(), |m| {
            format!("max_model_len {m}")
        });
    let what = format!(
        "{} {}at {} serving `{}` ({limit})",
        served.kind.as_str(),
        served
            .version
            .as_deref()
            .map_or(String::new(), |v| format!("{v} ")),
        served.base_url,
        served.model
    );
    Ok((init::render(&served, &choices), what))
}

/// A path as the spec must name it: the spec resolves relative paths against its own folder,
/// the user typed it relative to the working directory.
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
