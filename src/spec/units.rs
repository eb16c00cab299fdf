//! Value types with units: token counts (`8K` = 8192), durations (`30s`) and sizes (`141GB`).
//! Each parses from the spec's text, prints back the way a person writes it, and describes
//! itself to the JSON Schema with the exact pattern the parser accepts.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// The pattern of a token count written as text.
pub const TOKENS_PATTERN: &str = r"^[1-9][0-9]*[Kk]?$";
/// The pattern of a duration.
pub const DURATION_PATTERN: &str = r"^[0-9]+(\.[0-9]+)?(ms|s|m|h)$";
/// The pattern of a size.
pub const SIZE_PATTERN: &str = r"^[0-9]+(\.[0-9]+)? ?(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$";

/// A token count, duration or size that cannot be read; the message says how to write one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a number of tokens.
    #[error("`{0}` is not a token count; write e.g. `8192` or `8K`")]
    NotTokens(String),
    /// A token count of zero or one that overflows.
    #[error("`{0}` is not a positive token count")]
    NotPositive(String),
    /// Not a duration.
    #[error("`{0}` is not a duration; write e.g. `500ms`, `30s`, `2m` or `1h`")]
    NotDuration(String),
    /// Not a size.
    #[error("`{0}` is not a size; write e.g. `141GB` or `80GiB`")]
    NotSize(String),
}

/// A number of tokens. Written as an integer or with a `K` suffix, where `K` = 1024.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tokens(pub u64);

impl Tokens {
    /// Parse `8192`, `8K` or `8k`.
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let (digits, mult) = match t.strip_suffix(['K', 'k']) {
            Some(d) => (d, 1024),
            None => (t, 1),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| UnitError::NotTokens(text.to_string()))?;
        n.checked_mul(mult)
            .filter(|&v| v > 0)
            .map(Tokens)
            .ok_or_else(|| UnitError::NotPositive(text.to_string()))
    }
}

impl fmt::Display for Tokens {
    /// `8K` when a multiple of 1024, else the plain number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1024 && self.0.is_multiple_of(1024) {
            write!(f, "{}K", self.0 / 1024)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl Serialize for Tokens {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Tokens {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Tokens;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a token count such as 8192 or `8K`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tokens, E> {
                if v == 0 {
                    return Err(E::custom("a token count must be positive"));
                }
                Ok(Tokens(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tokens, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom("a token count must be positive"))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tokens, E> {
                Tokens::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Tokens {
    fn schema_name() -> Cow<'static, str> {
        "Tokens".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A token count: an integer, or a `K`-suffixed value where K = 1024 (`8K` = 8192, `123K` = 125952).",
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": TOKENS_PATTERN}
            ]
        })
    }
}

/// A duration written as `500ms`, `30s`, `2m` or `1h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(pub Duration);

impl Span {
    /// Parse a duration with its unit.
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let bad = || UnitError::NotDuration(text.to_string());
        let split = t.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(bad)?;
        let (num, unit) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| bad())?;
        let secs = match unit {
            "ms" => value / 1000.0,
            "s" => value,
            "m" => value * 60.0,
            "h" => value * 3600.0,
            _ => return Err(bad()),
        };
        Duration::try_from_secs_f64(secs)
            .map(Span)
            .map_err(|_| bad())
    }

    /// Seconds as a float.
    pub fn secs(&self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl fmt::Display for Span {
    /// The largest unit that divides the duration exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms == 0 || !ms.is_multiple_of(1000) {
            write!(f, "{ms}ms")
        } else if ms.is_multiple_of(3_600_000) {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else {
            write!(f, "{}s", ms / 1000)
        }
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Span::parse(&text).map_err(de::Error::custom)
    }
}

impl JsonSchema for Span {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration: a number with a unit, `ms`, `s`, `m` or `h` (`500ms`, `30s`, `2m`, `1h`).",
            "type": "string",
            "pattern": DURATION_PATTERN
        })
    }
}

/// A memory size such as `141GB` (decimal) or `80GiB` (binary). Keeps the text as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Size {
    /// Bytes.
    pub bytes: u64,
    /// The text as the spec wrote it.
    pub text: String,
}

impl Size {
    /// Parse a size with its unit.
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let bad = || UnitError::NotSize(text.to_string());
        let split = t.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(bad)?;
        let (num, unit) = t.split_at(split);
        let value: f64 = num.trim().parse().map_err(|_| bad())?;
        let mult: f64 = match unit {
            "B" => 1.0,
            "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            "KiB" => 1024.0,
            "MiB" => 1024f64.powi(2),
            "GiB" => 1024f64.powi(3),
            "TiB" => 1024f64.powi(4),
            _ => return Err(bad()),
        };
        let bytes = value * mult;
        if !bytes.is_finite() || bytes > u64::MAX as f64 {
            return Err(bad());
        }
        Ok(Size {
            bytes: bytes.round() as u64,
            text: t.to_string(),
        })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Size::parse(&text).map_err(de::Error::custom)
    }
}

impl JsonSchema for Size {
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A memory size: decimal (`141GB`) or binary (`80GiB`) units.",
            "type": "string",
            "pattern": SIZE_PATTERN
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_table() {
        let cases: &[(&str, Option<u64>)] = &[
            ("8K", Some(8192)),
            ("8k", Some(8192)),
            ("123K", Some(125_952)),
            ("128K", Some(131_072)),
            ("4096", Some(4096)),
            ("0", None),
            ("0K", None),
            ("8M", None),
            ("K", None),
            ("-1", None),
            ("99999999999999999999K", None),
        ];
        for (text, want) in cases {
            assert_eq!(Tokens::parse(text).ok().map(|t| t.0), *want, "{text}");
        }
    }

    #[test]
    fn tokens_display() {
        assert_eq!(Tokens(125_952).to_string(), "123K");
        assert_eq!(Tokens(4096).to_string(), "4K");
        assert_eq!(Tokens(1000).to_string(), "1000");
        assert_eq!(Tokens(131_071).to_string(), "131071");
    }

    #[test]
    fn durations_table() {
        let cases: &[(&str, Option<u64>)] = &[
            ("500ms", Some(500)),
            ("30s", Some(30_000)),
            ("2m", Some(120_000)),
            ("1h", Some(3_600_000)),
            ("1.5s", Some(1500)),
            ("30", None),
            ("30sec", None),
            ("s", None),
            ("-1s", None),
        ];
        for (text, want) in cases {
            let got = Span::parse(text).ok().map(|d| d.0.as_millis() as u64);
            assert_eq!(got, *want, "{text}");
        }
        assert_eq!(Span(Duration::from_secs(1200)).to_string(), "20m");
        assert_eq!(Span(Duration::from_millis(1500)).to_string(), "1500ms");
    }

    #[test]
    fn sizes_table() {
        assert_eq!(Size::parse("141GB").map(|s| s.bytes), Ok(141_000_000_000));
        assert_eq!(
            Size::parse("80GiB").map(|s| s.bytes),
            Ok(80 * 1024 * 1024 * 1024)
        );
        assert_eq!(Size::parse("1.5 GB").map(|s| s.bytes), Ok(1_500_000_000));
        assert!(Size::parse("141").is_err());
        assert!(Size::parse("141gb").is_err());
    }

    #[test]
    fn patterns_agree_with_parsers() {
        // The schema's patterns and the parsers must accept the same texts.
        let tokens = ["8K", "8k", "1", "0", "08K", "8 K", "K"];
        let re = |p: &str, s: &str| {
            jsonschema::is_valid(
                &serde_json::json!({"type": "string", "pattern": p}),
                &serde_json::json!(s),
            )
        };
        for t in tokens {
            assert_eq!(
                re(TOKENS_PATTERN, t),
                Tokens::parse(t).is_ok() && !t.starts_with('0') && !t.contains(' '),
                "{t}"
            );
        }
        for d in ["500ms", "30s", "1.5s", "2m", "1h", "30", "1d", ".5s"] {
            assert_eq!(
                re(DURATION_PATTERN, d),
                Span::parse(d).is_ok() && !d.starts_with('.'),
                "{d}"
            );
        }
    }
}
