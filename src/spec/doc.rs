//! The located document: a YAML or TOML file parsed into one tree whose every node and key
//! remembers where it came from. Both formats map onto this tree, so the schema layer, the
//! meaning checks and the typed [`Spec`](super::Spec) see exactly the same data, and any
//! JSON pointer can be turned back into `FILE:LINE:COL`.

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A position in a source file, 1-based, counted in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line, starting at 1 (0 means unknown).
    pub line: usize,
    /// Column in characters, starting at 1 (0 means unknown).
    pub col: usize,
}

/// One node of the located tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the value starts.
    pub pos: Pos,
    /// The value.
    pub kind: Kind,
}

/// The value of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `null` / `~` / an empty YAML value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string (TOML dates are kept as their text).
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order, each key with its own position.
    Map(Vec<(Key, Node)>),
}

/// A mapping key and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key's text.
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
}

/// Why a document could not be read at all.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    /// Where the parser stopped, when it said.
    pub pos: Pos,
    /// What the parser said, on one line.
    pub message: String,
}

impl Node {
    /// The node's value as JSON, for the schema validator and serde.
    pub fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => Value::from(*i),
            Kind::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The child of a mapping by key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Follow a JSON pointer as far as it resolves: the deepest node reached, and whether
    /// the whole pointer resolved.
    pub fn walk(&self, pointer: &str) -> (&Node, bool) {
        let mut node = self;
        for token in pointer_tokens(pointer) {
            let next = match &node.kind {
                Kind::Map(entries) => entries.iter().find(|(k, _)| k.name == token).map(|e| &e.1),
                Kind::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => return (node, false),
            }
        }
        (node, true)
    }

    /// The position a JSON pointer designates, or of the deepest node on its way (a field
    /// left out points at the mapping that should hold it).
    pub fn pos_of(&self, pointer: &str) -> Pos {
        self.walk(pointer).0.pos
    }

    /// The position of the key `key` inside the mapping at `pointer`, or of the mapping itself.
    pub fn key_pos(&self, pointer: &str, key: &str) -> Pos {
        let (node, _) = self.walk(pointer);
        match &node.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.name == key)
                .map_or(node.pos, |(k, _)| k.pos),
            _ => node.pos,
        }
    }
}

/// The unescaped reference tokens of a JSON pointer (RFC 6901).
pub fn pointer_tokens(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
}

/// Escape one reference token for a JSON pointer.
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

// ---- YAML ---------------------------------------------------------------------------------

/// Parse YAML into the located tree. Anchors, aliases and merge keys are resolved by
/// serde-saphyr, whose budgets also bound the work a hostile document can cause.
pub fn parse_yaml(text: &str) -> Result<Node, SyntaxError> {
    let spanned: serde_saphyr::Spanned<YamlKind> =
        serde_saphyr::from_str(text).map_err(|e| yaml_error(&e))?;
    Ok(yaml_node(spanned))
}

fn yaml_error(e: &serde_saphyr::Error) -> SyntaxError {
    let pos = e
        .location()
        .map(|l| Pos {
            line: to_usize(l.line()),
            col: to_usize(l.column()),
        })
        .unwrap_or_default();
    if let Some(message) = duplicate_key(e) {
        return SyntaxError { pos, message };
    }
    let rendered = e.without_snippet().to_string();
    let message = rendered
        .lines()
        .next()
        .unwrap_or("invalid YAML")
        .trim()
        .to_string();
    SyntaxError {
        pos,
        message: strip_location_suffix(&message),
    }
}

/// serde-saphyr's duplicate key error in our words (its own tells the programmer which
/// option of the library would accept the document).
fn duplicate_key(mut e: &serde_saphyr::Error) -> Option<String> {
    use serde_saphyr::Error as E;
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = e {
        e = error;
    }
    match e {
        E::DuplicateMappingKey { key: Some(k), .. } => Some(format!("duplicate key `{k}`")),
        E::DuplicateMappingKey { key: None, .. } => Some("duplicate key".into()),
        _ => None,
    }
}

/// serde-saphyr appends " at line L, column C" to some messages; the diagnostic prints the
/// position itself.
fn strip_location_suffix(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

fn yaml_pos(loc: &serde_saphyr::Location) -> Pos {
    Pos {
        line: to_usize(loc.line()),
        col: to_usize(loc.column()),
    }
}

fn yaml_node(s: serde_saphyr::Spanned<YamlKind>) -> Node {
    let pos = yaml_pos(&s.referenced);
    let kind = match s.value {
        YamlKind::Null => Kind::Null,
        YamlKind::Bool(b) => Kind::Bool(b),
        YamlKind::Int(i) => Kind::Int(i),
        YamlKind::Float(f) => Kind::Float(f),
        YamlKind::Str(s) => Kind::Str(s),
        YamlKind::Seq(items) => Kind::Seq(items.into_iter().map(yaml_node).collect()),
        YamlKind::Map(entries) => Kind::Map(
            entries
                .into_iter()
                .map(|(k, v)| {
                    (
                        Key {
                            name: k.value,
                            pos: yaml_pos(&k.referenced),
                        },
                        yaml_node(v),
                    )
                })
                .collect(),
        ),
    };
    Node { pos, kind }
}

/// The shape serde-saphyr deserializes into; children are wrapped in `Spanned` so each one
/// carries its own location.
enum YamlKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<serde_saphyr::Spanned<YamlKind>>),
    Map(
        Vec<(
            serde_saphyr::Spanned<String>,
            serde_saphyr::Spanned<YamlKind>,
        )>,
    ),
}

impl<'de> Deserialize<'de> for YamlKind {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = YamlKind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_unit<E>(self) -> Result<YamlKind, E> {
        Ok(YamlKind::Null)
    }
    fn visit_none<E>(self) -> Result<YamlKind, E> {
        Ok(YamlKind::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<YamlKind, D::Error> {
        YamlKind::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<YamlKind, E> {
        Ok(YamlKind::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<YamlKind, E> {
        Ok(YamlKind::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<YamlKind, E> {
        // Beyond i64 the value is kept as a float: the schema rejects it either way.
        Ok(i64::try_from(v).map_or(YamlKind::Float(v as f64), YamlKind::Int))
    }
    fn visit_i128<E>(self, v: i128) -> Result<YamlKind, E> {
        Ok(i64::try_from(v).map_or(YamlKind::Float(v as f64), YamlKind::Int))
    }
    fn visit_u128<E>(self, v: u128) -> Result<YamlKind, E> {
        Ok(i64::try_from(v).map_or(YamlKind::Float(v as f64), YamlKind::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<YamlKind, E> {
        Ok(YamlKind::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<YamlKind, E> {
        Ok(YamlKind::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<YamlKind, E> {
        Ok(YamlKind::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<YamlKind, E> {
        Err(E::custom("binary values are not supported in a spec"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YamlKind, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(YamlKind::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YamlKind, A::Error> {
        let mut entries: Vec<(
            serde_saphyr::Spanned<String>,
            serde_saphyr::Spanned<YamlKind>,
        )> = Vec::new();
        while let Some(key) = map.next_key::<serde_saphyr::Spanned<String>>()? {
            if entries.iter().any(|(k, _)| k.value == key.value) {
                return Err(de::Error::custom(format!("duplicate key `{}`", key.value)));
            }
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(YamlKind::Map(entries))
    }
}

// ---- TOML ---------------------------------------------------------------------------------

/// Parse TOML into the located tree.
pub fn parse_toml(text: &str) -> Result<Node, SyntaxError> {
    let lines = LineIndex::new(text);
    let root = toml::de::DeTable::parse(text).map_err(|e| {
        let pos = e
            .span()
            .map_or_else(Pos::default, |s| lines.pos(text, s.start));
        let message = e
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .trim()
            .to_string();
        SyntaxError { pos, message }
    })?;
    let pos = lines.pos(text, root.span().start);
    Ok(Node {
        pos,
        kind: toml_table(root.into_inner(), text, &lines),
    })
}

fn toml_table(table: toml::de::DeTable<'_>, text: &str, lines: &LineIndex) -> Kind {
    Kind::Map(
        table
            .into_iter()
            .map(|(k, v)| {
                let key = Key {
                    pos: lines.pos(text, k.span().start),
                    name: k.into_inner().into_owned(),
                };
                (key, toml_node(v, text, lines))
            })
            .collect(),
    )
}

fn toml_node(v: toml::Spanned<toml::de::DeValue<'_>>, text: &str, lines: &LineIndex) -> Node {
    use toml::de::DeValue;
    let pos = lines.pos(text, v.span().start);
    let kind = match v.into_inner() {
        DeValue::String(s) => Kind::Str(s.into_owned()),
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Kind::Int(n),
            Err(_) => Kind::Float(i.as_str().parse().unwrap_or(f64::MAX)),
        },
        DeValue::Float(f) => Kind::Float(f.as_str().parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => Kind::Bool(b),
        DeValue::Datetime(d) => Kind::Str(d.to_string()),
        DeValue::Array(items) => Kind::Seq(
            items
                .into_iter()
                .map(|i| toml_node(i, text, lines))
                .collect(),
        ),
        DeValue::Table(t) => toml_table(t, text, lines),
    };
    Node { pos, kind }
}

/// Byte offset → line and character column.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Index the starts of the lines of `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { starts }
    }

    /// The position of byte `offset` in `text`.
    pub fn pos(&self, text: &str, offset: usize) -> Pos {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let end = offset.min(text.len());
        let col = text.get(start..end).map_or(1, |s| s.chars().count() + 1);
        Pos { line, col }
    }
}
