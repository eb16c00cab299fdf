//! JSON specs: a `.json` file parsed into the same located tree as YAML and TOML, so the
//! schema layer, the meaning checks and the diagnostics work on it unchanged. serde_json
//! checks the syntax first (its errors carry a line and a column); a small scanner then walks
//! the text, which is known to be valid, to record where each key and value starts. Scalars
//! are decoded by serde_json from their own slice of the text, so escapes and numbers mean
//! exactly what they mean to serde_json.

use super::doc::{Key, Kind, LineIndex, Node, Pos, SyntaxError};

/// Parse JSON into the located tree. A key given twice in one object is an error (serde_json
/// would keep the last silently).
pub fn parse_json(text: &str) -> Result<Node, SyntaxError> {
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(syntax_error(text, &e));
    }
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
        lines: LineIndex::new(text),
    };
    scanner.skip_ws();
    scanner.value()
}

/// serde_json's error with its position (its column counts bytes; ours counts characters)
/// and without its " at line L column C" suffix, which the diagnostic prints itself.
fn syntax_error(text: &str, e: &serde_json::Error) -> SyntaxError {
    let rendered = e.to_string();
    let message = match rendered.rfind(" at line ") {
        Some(i) => rendered[..i].to_string(),
        None => rendered,
    };
    let line = e.line().max(1);
    let line_text = text.lines().nth(line - 1).unwrap_or("");
    let byte_col = e.column().saturating_sub(1).min(line_text.len());
    let col = line_text
        .get(..byte_col)
        .map_or(byte_col, |s| s.chars().count())
        + 1;
    SyntaxError {
        pos: Pos { line, col },
        message,
    }
}

/// A cursor over text that serde_json has accepted.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    lines: LineIndex,
}

impl Scanner<'_> {
    fn pos(&self, offset: usize) -> Pos {
        self.lines.pos(self.text, offset)
    }

    fn skip_ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn broken(&self) -> SyntaxError {
        SyntaxError {
            pos: self.pos(self.at),
            message: "invalid JSON".into(),
        }
    }

    /// Step over `byte` (and the whitespace after it) when it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            self.skip_ws();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Node, SyntaxError> {
        let pos = self.pos(self.at);
        let kind = match self.bytes.get(self.at) {
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(b'"') => Kind::Str(self.string()?),
            Some(_) => self.scalar()?,
            None => return Err(self.broken()),
        };
        self.skip_ws();
        Ok(Node { pos, kind })
    }

    fn object(&mut self) -> Result<Kind, SyntaxError> {
        self.eat(b'{');
        let mut entries: Vec<(Key, Node)> = Vec::new();
        if self.eat(b'}') {
            return Ok(Kind::Map(entries));
        }
        loop {
            let pos = self.pos(self.at);
            let name = self.string()?;
            if entries.iter().any(|(k, _)| k.name == name) {
                return Err(SyntaxError {
                    pos,
                    message: format!("duplicate key `{name}`"),
                });
            }
            self.skip_ws();
            if !self.eat(b':') {
                return Err(self.broken());
            }
            let value = self.value()?;
            entries.push((Key { name, pos }, value));
            if self.eat(b'}') {
                return Ok(Kind::Map(entries));
            }
            if !self.eat(b',') {
                return Err(self.broken());
            }
        }
    }

    fn array(&mut self) -> Result<Kind, SyntaxError> {
        self.eat(b'[');
        let mut items = Vec::new();
        if self.eat(b']') {
            return Ok(Kind::Seq(items));
        }
        loop {
            items.push(self.value()?);
            if self.eat(b']') {
                return Ok(Kind::Seq(items));
            }
            if !self.eat(b',') {
                return Err(self.broken());
            }
        }
    }

    /// A string token, decoded by serde_json.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.at;
        if self.bytes.get(start) != Some(&b'"') {
            return Err(self.broken());
        }
        let mut i = start + 1;
        while let Some(&b) = self.bytes.get(i) {
            match b {
                b'\\' => i += 2,
                b'"' => break,
                _ => i += 1,
            }
        }
        let end = (i + 1).min(self.bytes.len());
        let slice = self.text.get(start..end).ok_or_else(|| self.broken())?;
        self.at = end;
        serde_json::from_str(slice).map_err(|_| self.broken())
    }

    /// `true`, `false`, `null` or a number, decoded by serde_json.
    fn scalar(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
        {
            self.at += 1;
        }
        let slice = self.text.get(start..self.at).ok_or_else(|| self.broken())?;
        let value: serde_json::Value = serde_json::from_str(slice).map_err(|_| self.broken())?;
        Ok(match value {
            serde_json::Value::Null => Kind::Null,
            serde_json::Value::Bool(b) => Kind::Bool(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Kind::Int(i),
                None => Kind::Float(n.as_f64().unwrap_or(f64::MAX)),
            },
            _ => return Err(self.broken()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_located_in_characters() {
        let text = "{\n  \"name\": \"é x\",\n  \"matrix\": {\"contexts\": [8192, 1.5e3, -2]},\n  \"ok\": [true, null]\n}\n";
        let root = parse_json(text).unwrap();
        assert_eq!(root.to_json()["name"], "é x");
        assert_eq!(root.pos_of("/name"), Pos { line: 2, col: 11 });
        assert_eq!(root.key_pos("", "matrix"), Pos { line: 3, col: 3 });
        assert_eq!(root.pos_of("/matrix/contexts/1"), Pos { line: 3, col: 33 });
        let (node, _) = root.walk("/matrix/contexts/2");
        assert_eq!(node.kind, Kind::Int(-2));
        assert_eq!(root.pos_of("/ok/1"), Pos { line: 4, col: 16 });
    }

    #[test]
    fn escapes_decode_as_serde_json_does() {
        let root = parse_json(r#"{"a\"b": "tab\there \u00e9 \ud83d\ude00"}"#).unwrap();
        assert_eq!(root.to_json()["a\"b"], "tab\there é 😀");
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse_json("{\n  \"name\": \"é\",\n  \"version\": 1,\n}\n").unwrap_err();
        assert_eq!(e.pos, Pos { line: 4, col: 1 }, "{e:?}");
        assert_eq!(e.message, "key must be a string", "{e:?}");
        let e = parse_json("{\"é\": x}").unwrap_err();
        assert_eq!(e.pos.col, 7, "{e:?}");
    }

    #[test]
    fn a_duplicate_key_is_refused_at_the_second() {
        let e = parse_json("{\"name\": \"a\",\n \"name\": \"b\"}").unwrap_err();
        assert_eq!(e.pos, Pos { line: 2, col: 2 });
        assert_eq!(e.message, "duplicate key `name`");
    }
}
