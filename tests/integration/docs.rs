//! The reference pages name everything a user can type: every command and every long flag of
//! the command line (the parser `--help` is rendered from) in docs/cli.md, and every key of the
//! spec's JSON Schema in docs/spec.md. A flag or key added without its line in the docs fails
//! here, naming it.

use benchspec::cli::Cli;
use clap::CommandFactory;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` holds `word` as a whole word: not followed by a letter, digit, `-` or `_`.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let next = text[at + word.len()..].chars().next();
        !matches!(next, Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// Every visible (sub)command path (`history trend`) with its visible long flags.
fn commands(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, Vec<String>)>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        let path = format!("{prefix}{}", sub.get_name()).trim().to_string();
        let flags = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_global_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| l != "--help" && l != "--version")
            .collect();
        out.push((path.clone(), flags));
        commands(sub, &format!("{path} "), out);
    }
}

#[test]
fn every_command_and_long_flag_is_in_cli_md() {
    let doc = read("docs/cli.md");
    let root = Cli::command();
    let mut missing = Vec::new();
    let globals = root
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .filter(|l| l != "--help" && l != "--version");
    for flag in globals {
        if !has_word(&doc, &flag) {
            missing.push(format!("global option {flag}"));
        }
    }
    let mut all = Vec::new();
    commands(&root, "", &mut all);
    assert!(all.len() >= 14, "the parser lists {} commands", all.len());
    for (path, flags) in &all {
        // A command is documented under its own heading (`## run`) or as `benchspec history add`.
        let named = doc.lines().any(|l| l.starts_with('#') && has_word(l, path))
            || has_word(&doc, &format!("benchspec {path}"))
            || has_word(&doc, &format!("`{path}"));
        if !named {
            missing.push(format!("command `{path}`"));
        }
        for flag in flags {
            if !has_word(&doc, flag) {
                missing.push(format!("`{path} {flag}`"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md lacks: {missing:#?}");
}

/// Every key path of the schema (`engine.sim.faults.failure_rate`), following `$ref`s into
/// `$defs`, through `anyOf`/`oneOf`/`allOf` and list items; free maps (labels) have no keys.
fn keys(schema: &Value, node: &Value, path: &str, depth: usize, out: &mut BTreeSet<String>) {
    if depth > 12 {
        return;
    }
    if let Some(name) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        let def = &schema["$defs"][name];
        assert!(!def.is_null(), "a $ref to a missing definition {name}");
        keys(schema, def, path, depth + 1, out);
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        for branch in node
            .get(combinator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            keys(schema, branch, path, depth + 1, out);
        }
    }
    if let Some(items) = node.get("items") {
        keys(schema, items, path, depth + 1, out);
    }
    for (key, sub) in node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let full = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        out.insert(full.clone());
        keys(schema, sub, &full, depth + 1, out);
    }
}

#[test]
fn every_spec_key_is_in_spec_md() {
    let doc = read("docs/spec.md");
    let schema: Value = serde_json::from_str(&read("schemas/benchspec-v1.schema.json")).unwrap();
    let mut all = BTreeSet::new();
    keys(&schema, &schema, "", 0, &mut all);
    // The schema is walked, not skimmed: keys from deep inside it are among those found.
    for deep in [
        "engine.sim.faults.failure_rate",
        "phases.load.rates",
        "slo.ttft.p90",
    ] {
        assert!(
            all.contains(deep),
            "{deep} not found in the schema: {all:?}"
        );
    }
    // A key is documented when its name is written as a key in backticks, alone or as the end
    // of a dotted path (`profile` in the engine.sim table, `engine.replicas` in engine's).
    let missing: Vec<_> = all
        .iter()
        .filter(|path| {
            let leaf = path.rsplit('.').next().unwrap_or(path);
            !doc.contains(&format!("`{leaf}`")) && !doc.contains(&format!(".{leaf}`"))
        })
        .collect();
    assert!(missing.is_empty(), "docs/spec.md lacks: {missing:#?}");
}
