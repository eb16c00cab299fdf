//! The schema layer: JSON Schema (draft 2020-12) generated from the spec types, and the
//! validation of a located document against it. Every schema error becomes a [`Problem`]
//! with a JSON pointer and a message that says what to write instead; unknown keys get a
//! "did you mean" from the schema's own property names.

use super::Spec;
use super::diag::{Problem, suggest};
use super::doc::{Kind, Node, escape_token};
use super::units::{Size, Span, Tokens, UnitError};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// The JSON Schema of spec v1, as committed in `schemas/benchspec-v1.schema.json`.
pub fn spec_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<Spec>().to_value();
    drop_null_branches(&mut schema);
    if let Value::Object(map) = &mut schema {
        map.insert(
            "description".into(),
            Value::String(
                "A benchspec spec: the hardware, engine, model and matrix of one LLM serving benchmark."
                    .into(),
            ),
        );
    }
    schema
}

/// The schema as pretty JSON with a final newline, exactly as committed.
pub fn spec_schema_text() -> String {
    // `{:#}` is `to_string_pretty`, and cannot fail.
    format!("{:#}\n", spec_schema())
}

/// Optional fields are written by leaving them out, not as `null`: the schema says so, which
/// keeps editor completion and error messages simple.
fn drop_null_branches(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                branches.retain(|b| b.get("type") != Some(&Value::String("null".into())));
                if branches.len() == 1
                    && let Some(Value::Object(inner)) = branches.pop()
                {
                    map.remove("anyOf");
                    for (k, val) in inner {
                        map.entry(k).or_insert(val);
                    }
                }
            }
            map.values_mut().for_each(drop_null_branches);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_branches),
        _ => {}
    }
}

/// The schema generated from the Rust types did not compile (a bug, said as a problem).
#[derive(Debug, Clone, thiserror::Error)]
#[error("internal schema error: {0}")]
struct SchemaBug(String);

fn validator() -> Result<&'static Validator, SchemaBug> {
    static VALIDATOR: OnceLock<Result<Validator, SchemaBug>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            jsonschema::draft202012::new(&spec_schema()).map_err(|e| SchemaBug(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Check a document against the schema; all problems, in document order of their pointers.
pub fn check(root: &Node, json: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    let schema = spec_schema_cached();
    unknown_keys(root, schema, schema, "", &mut problems);
    match validator() {
        Ok(v) => {
            for error in v.iter_errors(json) {
                problems.extend(describe(&error));
            }
        }
        Err(e) => problems.push(Problem::error("", e.to_string())),
    }
    problems
}

fn spec_schema_cached() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(spec_schema)
}

/// Walk the document beside the schema and report every key the schema does not allow, with
/// a suggestion when a known key is close.
fn unknown_keys(node: &Node, schema: &Value, root: &Value, ptr: &str, out: &mut Vec<Problem>) {
    let schema = resolve(schema, root);
    match &node.kind {
        Kind::Map(entries) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, value) in entries {
                let child_ptr = format!("{ptr}/{}", escape_token(&key.name));
                match props.and_then(|p| p.get(&key.name)) {
                    Some(sub) => unknown_keys(value, sub, root, &child_ptr, out),
                    None if closed => out.push(unknown_key(&key.name, props, ptr)),
                    None => {}
                }
            }
        }
        Kind::Seq(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    unknown_keys(item, item_schema, root, &format!("{ptr}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

fn unknown_key(name: &str, props: Option<&Map<String, Value>>, ptr: &str) -> Problem {
    let known: Vec<&str> = props
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut message = format!("unknown field `{name}` in {}", place(ptr));
    match suggest(name, &known) {
        Some(s) => message.push_str(&format!("; did you mean `{s}`?")),
        None if !known.is_empty() => {
            message.push_str(&format!("; expected one of {}", backticked(&known)));
        }
        None => {}
    }
    Problem::error(&format!("{ptr}/{}", escape_token(name)), message).on_key()
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .unwrap_or(schema),
        None => schema,
    }
}

fn backticked(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One schema error as problems (an `anyOf` may hide several).
fn describe(error: &ValidationError<'_>) -> Vec<Problem> {
    let ptr = error.instance_path().as_str().to_string();
    let schema_path = error.schema_path().as_str();
    let instance = error.instance();
    if let Some(message) = unit_message(schema_path, instance) {
        return vec![Problem::error(&ptr, message)];
    }
    let message = match error.kind() {
        ValidationErrorKind::AdditionalProperties { .. } => return Vec::new(),
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let problem = Problem::error(
                &ptr,
                format!("missing required field `{name}` in {}", place(&ptr)),
            );
            return vec![if ptr.is_empty() {
                problem
            } else {
                problem.on_key()
            }];
        }
        ValidationErrorKind::Enum { options } => enum_message(instance, options),
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::AnyOf { .. } => {
            match consts_at(schema_path) {
                Some(options) => enum_message(instance, &options),
                None => error.to_string(),
            }
        }
        ValidationErrorKind::Type { kind } => {
            format!("expected {}, found {}", type_names(kind), found(instance))
        }
        ValidationErrorKind::Minimum { .. } | ValidationErrorKind::Maximum { .. }
            if ptr == "/version" =>
        {
            format!("unsupported spec version {instance}; this benchspec reads `version: 1`")
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("{instance} is below the minimum {limit}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("{instance} is above the maximum {limit}")
        }
        ValidationErrorKind::MinItems { .. } => "must not be empty".to_string(),
        ValidationErrorKind::MinLength { .. } => "must not be empty".to_string(),
        ValidationErrorKind::Pattern { pattern } => pattern_message(&ptr, instance, pattern),
        _ => error.to_string(),
    };
    vec![Problem::error(&ptr, message)]
}

fn place(ptr: &str) -> String {
    if ptr.is_empty() {
        "the spec".to_string()
    } else {
        format!("`{}`", ptr.trim_start_matches('/').replace('/', "."))
    }
}

/// Errors inside the unit types are best explained by their own parsers.
fn unit_message(schema_path: &str, instance: &Value) -> Option<String> {
    let def = schema_path.strip_prefix("/$defs/")?.split('/').next()?;
    let text = instance.as_str();
    let message = match (def, text) {
        ("Tokens", Some(t)) => Tokens::parse(t)
            .err()
            .unwrap_or_else(|| UnitError::NotTokens(t.to_string()))
            .to_string(),
        ("Tokens", None) => format!(
            "expected a positive token count such as `8192` or `8K`, found {}",
            found(instance)
        ),
        ("Duration", Some(t)) => Span::parse(t)
            .err()
            .unwrap_or_else(|| UnitError::NotDuration(t.to_string()))
            .to_string(),
        ("Duration", None) => format!(
            "expected a duration such as `30s`, found {}",
            found(instance)
        ),
        ("Size", Some(t)) => Size::parse(t)
            .err()
            .unwrap_or_else(|| UnitError::NotSize(t.to_string()))
            .to_string(),
        ("Size", None) => format!("expected a size such as `141GB`, found {}", found(instance)),
        ("Rate", _) => format!(
            "expected a rate above 0 requests per second (such as `4` or `0.5`) or `inf`, found {}",
            found(instance)
        ),
        ("Command", _) => format!(
            "expected the launch command as a string or a list of strings, found {}",
            found(instance)
        ),
        _ => return None,
    };
    Some(message)
}

/// The values of a `oneOf`/`anyOf` of constants (how schemars writes documented enums).
fn consts_at(schema_path: &str) -> Option<Value> {
    let branches = spec_schema_cached().pointer(schema_path)?.as_array()?;
    let consts: Option<Vec<Value>> = branches.iter().map(|b| b.get("const").cloned()).collect();
    consts.map(Value::Array)
}

fn enum_message(instance: &Value, options: &Value) -> String {
    let names: Vec<&str> = options
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let shown = instance
        .as_str()
        .map_or_else(|| instance.to_string(), |s| format!("`{s}`"));
    let mut message = format!("{shown} is not one of {}", backticked(&names));
    if let Some(s) = instance.as_str().and_then(|i| suggest(i, &names)) {
        message.push_str(&format!("; did you mean `{s}`?"));
    }
    message
}

fn pattern_message(ptr: &str, instance: &Value, pattern: &str) -> String {
    let shown = instance.as_str().unwrap_or_default();
    if ptr.ends_with("/api_key_env") {
        format!(
            "`{shown}` is not an environment variable name; give the NAME of the variable that holds the key, never the key"
        )
    } else if ptr.ends_with("/base_url") {
        format!("`{shown}` is not an http(s) URL such as `http://127.0.0.1:8000`")
    } else {
        format!("`{shown}` does not match `{pattern}`")
    }
}

fn type_names(kind: &TypeKind) -> String {
    let name = |t: &jsonschema::JsonType| match t.to_string().as_str() {
        "object" => "a mapping".to_string(),
        "array" => "a list".to_string(),
        "string" => "a string".to_string(),
        "integer" => "an integer".to_string(),
        "number" => "a number".to_string(),
        "boolean" => "`true` or `false`".to_string(),
        other => other.to_string(),
    };
    match kind {
        TypeKind::Single(t) => name(t),
        TypeKind::Multiple(ts) => ts.iter().map(|t| name(&t)).collect::<Vec<_>>().join(" or "),
    }
}

/// How a value is named in a message: its kind and, for scalars, the value itself.
pub fn found(v: &Value) -> String {
    match v {
        Value::Null => "nothing (null)".to_string(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("the string `{s}`"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}
