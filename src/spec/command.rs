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
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn launch_args_are_the_commands_words_or_none() {
        // (engine yaml, words)
        let cases: [(&str, &[&str]); 3] = [
            (
                "kind: vllm\n  launch: {command: \"vllm serve 'm x' --max-num-seqs 8\"}",
                &["vllm", "serve", "m x", "--max-num-seqs", "8"],
            ),
            (
                "kind: vllm\n  launch: {command: [llama-server, -np, '2']}",
                &["llama-server", "-np", "2"],
            ),
            ("kind: sim", &[]),
        ];
        for (engine, want) in cases {
            let text = format!(
                "version: 1\nname: t\nengine:\n  {engine}\n  base_url: http://127.0.0.1:8000\nmodel: {{served_name: m}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
            );
            let mut spec =
                crate::spec::parse("s.yaml", &text, crate::spec::Stage::Validate, &|_| None)
                    .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()))
                    .spec;
            assert_eq!(spec.launch_args(), words(want), "{engine}");
            // A command that cannot be split has no words.
            if let Some(l) = spec.engine.launch.as_mut() {
                l.command = LaunchCommand::Line("vllm serve 'm".into());
                assert_eq!(spec.launch_args(), words(&[]), "{engine}");
            }
        }
    }

    #[test]
    fn quoting_reads_back() {
        let cases = [
            ("serve", "serve"),
            ("$HOME/env/bin/vllm", "\"$HOME/env/bin/vllm\""),
            ("{\"image\":4,\"audio\":1}", "'{\"image\":4,\"audio\":1}'"),
            ("it's", "'it'\\''s'"),
            ("", "''"),
            ("<redacted>", "<redacted>"),
            ("--api-key=<redacted>", "--api-key=<redacted>"),
        ];
        for (arg, want) in cases {
            assert_eq!(quote(arg), want);
            if !arg.contains("<redacted>") {
                assert_eq!(split(&quote(arg)), Ok(vec![arg.to_string()]), "{arg}");
            }
        }
    }

    #[test]
    fn splitting_table() {
        let cases: &[(&str, Result<Vec<String>, ()>)] = &[
            (
                "vllm serve m --port 8000",
                Ok(words(&["vllm", "serve", "m", "--port", "8000"])),
            ),
            ("a  'b c'  \"d \\\" e\"", Ok(words(&["a", "b c", "d \" e"]))),
            (
                r#"x --limit '{"image":4}'"#,
                Ok(words(&["x", "--limit", r#"{"image":4}"#])),
            ),
            (r"a\ b", Ok(words(&["a b"]))),
            (
                "\"$HOME/bin/vllm\" serve",
                Ok(words(&["$HOME/bin/vllm", "serve"])),
            ),
            ("''", Ok(words(&[""]))),
            ("a 'b", Err(())),
            ("a \"b", Err(())),
            ("a \\", Err(())),
            ("   ", Err(())),
        ];
        for (line, want) in cases {
            assert_eq!(split(line).map_err(|_| ()), *want, "{line}");
        }
    }

    #[test]
    fn env_references() {
        assert_eq!(
            env_refs("--api-key ${VLLM_API_KEY} ${X}y $HOME/bin $_a1.x"),
            vec!["VLLM_API_KEY", "X", "HOME", "_a1"]
        );
        assert!(env_refs("${unterminated $1 $ x $$HOME ${X:-y} ${1} a$").is_empty());
    }

    #[test]
    fn expansion_as_a_shell_reads_names() {
        let env = |n: &str| match n {
            "KEY" => Some("s3cret".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        let cases = [
            ("--api-key ${KEY}", "--api-key s3cret"),
            ("$HOME/${KEY}x", "/home/u/s3cretx"),
            ("$HOME", "/home/u"),
            ("\"$HOME/bin\"", "\"/home/u/bin\""),
            ("${KEY", "${KEY"),
            ("$$HOME costs $$5", "$HOME costs $5"),
            ("a $ b $1 ${X:-y} end$", "a $ b $1 ${X:-y} end$"),
            ("$KEY.$KEY-$KEY/", "s3cret.s3cret-s3cret/"),
        ];
        for (text, want) in cases {
            assert_eq!(expand(text, &env).as_deref(), Ok(want), "{text}");
        }
        assert_eq!(
            expand("${NOPE}", &env),
            Err(CommandError::Unset("NOPE".into()))
        );
        assert_eq!(
            expand("$NOPE/x", &env),
            Err(CommandError::Unset("NOPE".into()))
        );
    }

    #[test]
    fn ports() {
        assert_eq!(port_arg(&words(&["--port", "8000"])), Some("8000"));
        assert_eq!(port_arg(&words(&["--port=9"])), Some("9"));
        assert_eq!(port_arg(&words(&["--portx", "1"])), None);
        assert_eq!(flag_value(&words(&["--api-key=k"]), "--api-key"), Some("k"));
    }

    #[test]
    fn urls() {
        let u = parse_url("http://127.0.0.1:8000").map(|u| u.port);
        assert_eq!(u, Ok(8000));
        assert_eq!(parse_url("https://h/v1").map(|u| u.port), Ok(443));
        assert_eq!(
            parse_url("http://[::1]:30000/x").map(|u| (u.host, u.port)),
            Ok(("[::1]".into(), 30000))
        );
        assert!(parse_url("ftp://h").is_err());
        assert!(parse_url("http://:80").is_err());
        assert!(parse_url("http://h:99999").is_err());
        assert_eq!(base_url_arg("http://h:1").as_deref(), Ok("http://h:1"));
        let e = base_url_arg("localhost:8000").unwrap_err();
        assert!(e.ends_with("did you mean `http://localhost:8000`?"), "{e}");
    }
}
