//! Launch commands and URLs as the spec writes them: shell-like splitting (no shell is ever
//! run), `$VAR` and `${VAR}` references and their expansion, and the port a command or a
//! base URL names.

use super::engine::LaunchCommand;

/// Why a launch command or a URL cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// A quote that does not close.
    #[error("unterminated `{0}` quote in the command")]
    Unterminated(char),
    /// A backslash at the very end.
    #[error("the command ends with a lone `\\`")]
    LoneBackslash,
    /// No words at all.
    #[error("the command is empty")]
    Empty,
    /// Not an http(s) URL.
    #[error("`{0}` is not an http(s) URL such as `http://127.0.0.1:8000`")]
    NotUrl(String),
    /// `$NAME` or `${NAME}` names an environment variable that is not set.
    #[error("`${{{0}}}` names an environment variable that is not set")]
    Unset(String),
}

impl LaunchCommand {
    /// The command's arguments, the program first. A string is split like a POSIX shell
    /// splits words: blanks separate, `'…'` is literal, `"…"` honours `\"`, `\\`, `\$`, and a
    /// backslash outside quotes escapes the next character. Nothing is expanded here.
    pub fn args(&self) -> Result<Vec<String>, CommandError> {
        match self {
            LaunchCommand::Args(args) => Ok(args.clone()),
            LaunchCommand::Line(line) => split(line),
        }
    }
}

impl super::Spec {
    /// The words of the engine's launch command, the program first; none without a launch
    /// command or with one that cannot be split (the spec's checks report that).
    pub fn launch_args(&self) -> Vec<String> {
        self.engine
            .launch
            .as_ref()
            .and_then(|l| l.command.args().ok())
            .unwrap_or_default()
    }
}

/// Split a command line into words.
pub fn split(line: &str) -> Result<Vec<String>, CommandError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                continue;
            }
            '\'' => single_quoted(&mut chars, &mut word)?,
            '"' => double_quoted(&mut chars, &mut word)?,
            '\\' => word.push(chars.next().ok_or(CommandError::LoneBackslash)?),
            ch => word.push(ch),
        }
        in_word = true;
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(words)
}

/// The rest of a `'…'` word onto `word`: everything literal up to the closing quote.
fn single_quoted(chars: &mut std::str::Chars, word: &mut String) -> Result<(), CommandError> {
    loop {
        match chars.next() {
            Some('\'') => return Ok(()),
            Some(ch) => word.push(ch),
            None => return Err(CommandError::Unterminated('\'')),
        }
    }
}

/// The rest of a `"…"` word onto `word`: a backslash escapes only `"`, `\`, `$` and a
/// backtick, and is kept before anything else.
fn double_quoted(chars: &mut std::str::Chars, word: &mut String) -> Result<(), CommandError> {
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') => match chars.next() {
                Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                Some(ch) => {
                    word.push('\\');
                    word.push(ch);
                }
                None => return Err(CommandError::Unterminated('"')),
            },
            Some(ch) => word.push(ch),
            None => return Err(CommandError::Unterminated('"')),
        }
    }
}

/// A piece of a launch text: literal text, or a reference to an environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Kept as written.
    Text(&'a str),
    /// `$NAME` or `${NAME}`.
    Var(&'a str),
}

/// `text` cut into literal text and variable references, as a shell reads `$NAME` and
/// `${NAME}` (a name: a letter or `_`, then letters, digits, `_`); `$$` is one literal `$`.
/// Anything else (`$1`, `$ `, `${1}`, `${X:-y}`, an unclosed `${`, a `$` at the end) stays as
/// written: no other shell feature is read.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let (piece, len) = if after.starts_with('$') {
            (Some(Piece::Text("$")), 2)
        } else if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if is_name(&inner[..end]) => (Some(Piece::Var(&inner[..end])), end + 3),
                _ => (None, 1),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            match &after[..end] {
                name if is_name(name) => (Some(Piece::Var(name)), end + 1),
                _ => (None, 1),
            }
        };
        match piece {
            Some(p) => {
                out.push(Piece::Text(&rest[..at]));
                out.push(p);
            }
            None => out.push(Piece::Text(&rest[..at + len])),
        }
        rest = &rest[at + len..];
    }
    out.push(Piece::Text(rest));
    out.retain(|p| *p != Piece::Text(""));
    out
}

/// A shell variable's name: a letter or `_`, then letters, digits and `_`.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The names of the `$NAME` and `${NAME}` references in `text`, in order.
pub fn env_refs(text: &str) -> Vec<String> {
    pieces(text)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name.to_string()),
            Piece::Text(_) => None,
        })
        .collect()
}

/// `text` with every `$NAME` and `${NAME}` replaced from `env` and `$$` made one `$` (see
/// [`pieces`]); an unset variable is an error carrying its name.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, CommandError> {
    let mut out = String::with_capacity(text.len());
    for p in pieces(text) {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => {
                out.push_str(&env(name).ok_or_else(|| CommandError::Unset(name.to_string()))?)
            }
        }
    }
    Ok(out)
}

/// One argument written so that [`split`] reads it back: bare when it is plain, in double
/// quotes when it refers to a variable (`"$HOME/bin/vllm"`, kept readable), else in single
/// quotes (`'{"image":4}'`). `<redacted>` stays as it is.
pub fn quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%^".contains(c);
    if !arg.is_empty() && (arg.chars().all(plain) || arg.ends_with("<redacted>")) {
        arg.to_string()
    } else if arg.contains('$') && !arg.contains(['"', '\\', '`']) {
        format!("\"{arg}\"")
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The value of `--port N` or `--port=N` in the arguments, if written.
pub fn port_arg(args: &[String]) -> Option<&str> {
    flag_value(args, "--port")
}

/// Each engine's launch flag for the requests it runs at once: vLLM's, llama.cpp's slots
/// (`--parallel`, `-np`), SGLang's.
pub const SEQS_FLAGS: [&str; 4] = [
    "--max-num-seqs",
    "--parallel",
    "-np",
    "--max-running-requests",
];

/// The first of `names` written in `args`: its name and its value.
pub fn first_flag<'a>(
    args: &'a [String],
    names: &[&'static str],
) -> Option<(&'static str, &'a str)> {
    names
        .iter()
        .find_map(|f| flag_value(args, f).map(|v| (*f, v)))
}

/// The value of the argument after `flag` (`--api-key KEY` or `--api-key=KEY`).
pub fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        if a == flag {
            return iter.next().map(String::as_str);
        }
        if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
    }
    None
}

/// The parts of an `http(s)://host[:port][/path]` URL that matter here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: String,
    /// The host, brackets kept for IPv6.
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

/// Parse a base URL.
pub fn parse_url(url: &str) -> Result<Url, CommandError> {
    let bad = || CommandError::NotUrl(url.to_string());
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(bad()),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or_else(bad)?;
        (format!("[{h}]"), tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad());
    }
    let port = match port {
        Some(p) => p.parse().map_err(|_| bad())?,
        None => default_port,
    };
    Ok(Url {
        scheme: scheme.to_string(),
        host,
        port,
    })
}

/// A `--base-url` value, checked as the command line reads it: an http(s) URL (a missing
/// scheme gets a suggestion).
pub fn base_url_arg(text: &str) -> Result<String, String> {
    match parse_url(text) {
        Ok(_) => Ok(text.to_string()),
        Err(e) if !text.contains("://") => Err(format!("{e}; did you mean `http://{text}`?")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests;
