//! Diagnostics: a problem found in a spec, located at `FILE:LINE:COL` through its JSON
//! pointer, and rendered either as one grep-able line or with the source line and a caret.

use super::doc::{Kind, Node, Pos, pointer_tokens};
use serde::Serialize;
use std::fmt::Write as _;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The spec cannot be run.
    Error,
    /// The spec runs, but probably not as meant.
    Warning,
}

/// A problem before it is located in a file: a JSON pointer and a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// Where in the document (`/matrix/contexts/2`).
    pub pointer: String,
    /// Point at the last key of `pointer` rather than at its value (unknown fields).
    pub on_key: bool,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    /// An error at `pointer`.
    pub fn error(pointer: &str, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Error,
            pointer: pointer.to_string(),
            on_key: false,
            message: message.into(),
        }
    }

    /// A warning at `pointer`.
    pub fn warning(pointer: &str, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(pointer, message)
        }
    }

    /// Point at the key rather than the value.
    pub fn on_key(mut self) -> Self {
        self.on_key = true;
        self
    }

    /// Locate the problem in `file`, whose text is `source` and tree is `root`.
    pub fn locate(self, file: &str, source: &str, root: Option<&Node>) -> Diagnostic {
        let (pos, width) = match root {
            Some(root) => position(root, &self.pointer, self.on_key),
            None => (Pos { line: 1, col: 1 }, 1),
        };
        Diagnostic::new(
            file,
            source,
            pos,
            width,
            self.severity,
            self.message,
            self.pointer,
        )
    }
}

fn position(root: &Node, pointer: &str, on_key: bool) -> (Pos, usize) {
    if on_key {
        let tokens: Vec<String> = pointer_tokens(pointer).collect();
        if let Some((last, parents)) = tokens.split_last() {
            let parent: String = parents
                .iter()
                .map(|t| format!("/{}", super::doc::escape_token(t)))
                .collect();
            return (root.key_pos(&parent, last), last.chars().count().max(1));
        }
    }
    let (node, resolved) = root.walk(pointer);
    (node.pos, if resolved { scalar_width(node) } else { 1 })
}

fn scalar_width(node: &Node) -> usize {
    match &node.kind {
        Kind::Str(s) => s.chars().count().max(1),
        Kind::Int(i) => i.to_string().len(),
        Kind::Float(f) => f.to_string().len(),
        Kind::Bool(b) => b.to_string().len(),
        _ => 1,
    }
}

/// A located problem, ready to print.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The spec file as named on the command line.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
    /// The JSON pointer of the offending value (empty for the whole document).
    pub pointer: String,
    /// The source line, for the caret view.
    #[serde(skip)]
    pub source_line: Option<String>,
    /// How many characters the caret underlines.
    #[serde(skip)]
    pub width: usize,
}

impl Diagnostic {
    /// A diagnostic at `pos` in `file`.
    pub fn new(
        file: &str,
        source: &str,
        pos: Pos,
        width: usize,
        severity: Severity,
        message: String,
        pointer: String,
    ) -> Self {
        let pos = if pos.line == 0 {
            Pos { line: 1, col: 1 }
        } else {
            pos
        };
        let source_line = source.lines().nth(pos.line - 1).map(str::to_string);
        // A quoted scalar's position is its opening quote: underline the quotes too.
        let quoted = source_line
            .as_deref()
            .and_then(|l| l.chars().nth(pos.col.saturating_sub(1)))
            .is_some_and(|c| c == '"' || c == '\'');
        let width = if quoted { width + 2 } else { width };
        Diagnostic {
            severity,
            file: file.to_string(),
            line: pos.line,
            column: pos.col.max(1),
            message,
            pointer,
            source_line,
            width: width.max(1),
        }
    }

    /// `FILE:LINE:COL: error: message (at /pointer)`.
    pub fn line_form(&self, color: bool) -> String {
        let (label, code) = match self.severity {
            Severity::Error => ("error", "1;31"),
            Severity::Warning => ("warning", "1;33"),
        };
        let label = if color {
            format!("\x1b[{code}m{label}\x1b[0m")
        } else {
            label.to_string()
        };
        let at = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" (at {})", self.pointer)
        };
        format!(
            "{}:{}:{}: {label}: {}{at}",
            self.file, self.line, self.column, self.message
        )
    }

    /// The line form followed by the source line and a caret under the offending text.
    pub fn caret_form(&self, color: bool) -> String {
        let mut out = self.line_form(color);
        if let Some(src) = &self.source_line {
            let gutter = self.line.to_string();
            let pad = " ".repeat(gutter.len());
            let indent: String = src
                .chars()
                .take(self.column - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let avail = src.chars().count().saturating_sub(self.column - 1).max(1);
            let carets = "^".repeat(self.width.min(avail));
            let carets = if color {
                format!("\x1b[1;31m{carets}\x1b[0m")
            } else {
                carets
            };
            let _ = write!(out, "\n{pad} |\n{gutter} | {src}\n{pad} | {indent}{carets}");
        }
        out
    }
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .iter()
        .map(|c| (levenshtein(&lower, &c.to_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.chars().count().max(word.chars().count()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance in characters, a swap of neighbours counting as one edit (optimal string
/// alignment), so `tiyn` is one edit from `tiny`.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let fields = ["contexts", "concurrency"];
        let cases = [
            ("concurency", Some("concurrency")),
            ("Concurrency", Some("concurrency")),
            ("context", Some("contexts")),
            ("contxts", Some("contexts")),
            ("threads", None),
            ("c", None),
        ];
        for (word, want) in cases {
            assert_eq!(suggest(word, &fields), want, "{word}");
        }
    }

    #[test]
    fn distances() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
        assert_eq!(levenshtein("tiyn", "tiny"), 1);
    }

    #[test]
    fn caret_points_at_the_column() {
        let src = "matrix:\n  concurency: [1]\n";
        let d = Diagnostic::new(
            "s.yaml",
            src,
            Pos { line: 2, col: 3 },
            10,
            Severity::Error,
            "unknown field".into(),
            "/matrix/concurency".into(),
        );
        assert_eq!(
            d.line_form(false),
            "s.yaml:2:3: error: unknown field (at /matrix/concurency)"
        );
        let caret = d.caret_form(false);
        assert!(
            caret.ends_with("2 |   concurency: [1]\n  |   ^^^^^^^^^^"),
            "{caret}"
        );
    }
}
