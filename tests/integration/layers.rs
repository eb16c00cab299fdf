//! The layering docs/architecture.md states, read from the source tree: telemetry imports
//! nothing of `run` (its notes go back through a callback), `plan` knows nothing of the run
//! directory, no module under `src/run/` imports an item defined in `run/mod.rs` itself
//! (an arrow back up to the entry point: the shared types live in files of their own), and no
//! two public types share a name (Names).

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its text stripped of `//` comments.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let code: Vec<&str> = text
                    .lines()
                    .map(|l| l.split("//").next().unwrap_or(""))
                    .collect();
                out.push((p, code.join("\n")));
            }
        }
    }
    out
}

/// The files under `src/<module>` that name the top-level module `target` (`crate::run::`,
/// or `super::run::` from the module's own root), by their path in `src/`.
fn naming(module: &str, target: &str) -> Vec<String> {
    let paths = [
        format!("crate::{target}::"),
        format!("crate::{target};"),
        format!("super::{target}::"),
    ];
    files(&src().join(module))
        .into_iter()
        .filter(|(_, code)| paths.iter().any(|p| code.contains(p.as_str())))
        .map(|(p, _)| p.strip_prefix(src()).unwrap_or(&p).display().to_string())
        .collect()
}

#[test]
fn telemetry_imports_nothing_of_run() {
    assert_eq!(naming("telemetry", "run"), Vec::<String>::new());
}

#[test]
fn plan_knows_nothing_of_the_run_directory() {
    assert_eq!(naming("plan", "rundir"), Vec::<String>::new());
}

/// The names `run/mod.rs` defines itself (not those it re-exports).
fn defined_in_run_mod() -> Vec<String> {
    let text = std::fs::read_to_string(src().join("run/mod.rs")).unwrap_or_default();
    let kinds = ["struct ", "enum ", "fn ", "type ", "const ", "trait "];
    text.lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let l = l
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            let l = l.trim_start_matches("async ");
            let rest = kinds.iter().find_map(|k| l.strip_prefix(k))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            Some(name)
        })
        .collect()
}

/// The names `code` reaches through `prefix` (`super::X`, `super::{X, y}`).
fn reached(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        // `super::super::x` seen from one level down is not `super::x`.
        if code[..at].ends_with("super::") {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let group = match rest.strip_prefix('{') {
            Some(inner) => inner.split('}').next().unwrap_or(""),
            None => rest
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or(""),
        };
        for part in group.split(',') {
            let first = part.trim().split("::").next().unwrap_or("").trim();
            out.push(first.to_string());
        }
    }
    out
}

#[test]
fn no_module_of_run_imports_from_its_entry_point() {
    let defined = defined_in_run_mod();
    assert!(
        defined.iter().any(|n| n == "run"),
        "run/mod.rs defines `run`: {defined:?}"
    );
    let root = src().join("run");
    let mut arrows = Vec::new();
    for (p, code) in files(&root) {
        let rel = p.strip_prefix(&root).unwrap_or(&p);
        if rel == Path::new("mod.rs") {
            continue;
        }
        // How many `super::` lead from this file's module up to `run`.
        let mut depth = rel.components().count();
        if rel.ends_with("mod.rs") {
            depth -= 1;
        }
        let up = "super::".repeat(depth);
        for prefix in ["crate::run::", up.as_str()] {
            for name in reached(&code, prefix) {
                if defined.contains(&name) {
                    arrows.push(format!("{} -> run::{name}", rel.display()));
                }
            }
        }
    }
    assert_eq!(arrows, Vec::<String>::new(), "arrows back up to run/mod.rs");
}

/// The public types (`pub struct`, `pub enum`, `pub type`) under `src/` by name, each with
/// the files that define one.
fn public_types() -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by_name = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (p, code) in files(&src()) {
        let rel = p.strip_prefix(src()).unwrap_or(&p).display().to_string();
        for line in code.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let ["pub", "struct" | "enum" | "type", name, ..] = words[..] else {
                continue;
            };
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            by_name.entry(name).or_default().push(rel.clone());
        }
    }
    by_name
}

/// docs/architecture.md, Names: a type's name says which stage it is (the spec's `Engine` is
/// `EngineSpec`, the simulator's `Scheduler`, the launched process `LaunchedEngine`), so no
/// two public types share one.
#[test]
fn no_two_public_types_share_a_name() {
    let types = public_types();
    assert!(
        types.contains_key("EngineSpec") && types.contains_key("Plan"),
        "the scan found the crate's types: {} names",
        types.len()
    );
    let shared: Vec<String> = types
        .into_iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| format!("{name}: {}", files.join(", ")))
        .collect();
    assert_eq!(shared, Vec::<String>::new(), "public types sharing a name");
}
