//! `benchspec merge`: join the run directories of the shards of one plan into one run
//! directory — the spec copy, one `plan.json` in run order, every record once, the requests
//! and engine logs one after another, and a manifest naming each shard — refusing shards of
//! different specs and cells measured twice.

use super::Record;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Why run directories cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A file could not be read.
    #[error("cannot read `{path}`: {message}")]
    Read {
        /// The path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Not a run directory.
    #[error("`{0}` is not a run directory (it has no manifest.json)")]
    NotRun(String),
    /// The directories were run from different specs.
    #[error(
        "`{a}` and `{b}` were run from different specs (sha256 {sha_a} and {sha_b}); merge only the shards of one spec"
    )]
    Mixed {
        /// One directory.
        a: String,
        /// Its spec's sha256.
        sha_a: String,
        /// The other.
        b: String,
        /// Its spec's sha256.
        sha_b: String,
    },
    /// A cell was measured in two directories.
    #[error("`{cell}` is recorded in both `{a}` and `{b}`; merge each shard once")]
    Overlap {
        /// The cell.
        cell: String,
        /// One directory.
        a: String,
        /// The other.
        b: String,
    },
    /// The output exists and holds files.
    #[error("`{0}` exists and is not empty; choose another `--out`")]
    NotEmpty(String),
    /// The output could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl MergeError {
    /// Exit code: 2, nothing was merged (contract §1); 1 when the output cannot be written.
    pub fn exit_code(&self) -> i32 {
        match self {
            MergeError::Write { .. } => 1,
            _ => 2,
        }
    }
}

/// One shard's run directory, as read.
struct Part {
    dir: PathBuf,
    manifest: Value,
    plan: Value,
    spec_name: String,
    spec: Vec<u8>,
    records: Vec<(Record, String)>,
    requests: String,
    engine_log: String,
}

/// What a merge did.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Directories merged.
    pub parts: usize,
    /// Records written.
    pub records: usize,
    /// Shards of the plan that were not given (`k` of `n`), when the parts are shards.
    pub missing_shards: Vec<u32>,
}

fn read(path: &Path) -> Result<Option<String>, MergeError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(MergeError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

fn json(path: &Path) -> Result<Value, MergeError> {
    let text = read(path)?.ok_or_else(|| MergeError::Read {
        path: path.display().to_string(),
        message: "missing".into(),
    })?;
    serde_json::from_str(&text).map_err(|e| MergeError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn load(dir: &Path) -> Result<Part, MergeError> {
    if !dir.join("manifest.json").is_file() {
        return Err(MergeError::NotRun(dir.display().to_string()));
    }
    let manifest = json(&dir.join("manifest.json"))?;
    let plan = json(&dir.join("plan.json"))?;
    let spec_name = ["spec.yaml", "spec.yml", "spec.toml"]
        .into_iter()
        .find(|n| dir.join(n).is_file())
        .unwrap_or("spec.yaml")
        .to_string();
    let spec = std::fs::read(dir.join(&spec_name)).map_err(|e| MergeError::Read {
        path: dir.join(&spec_name).display().to_string(),
        message: e.to_string(),
    })?;
    // Whole records only: a line cut short by a killed shard is left out.
    let records = read(&dir.join("results.jsonl"))?
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Some((serde_json::from_str::<Record>(l).ok()?, l.to_string())))
        .collect();
    Ok(Part {
        dir: dir.to_path_buf(),
        manifest,
        plan,
        spec_name,
        spec,
        records,
        requests: read(&dir.join("requests.jsonl"))?.unwrap_or_default(),
        engine_log: read(&dir.join("engine.log"))?.unwrap_or_default(),
    })
}

fn shard_of(p: &Part) -> (u64, u64) {
    let s = &p.plan["shard"];
    (s["k"].as_u64().unwrap_or(0), s["n"].as_u64().unwrap_or(0))
}

fn check(parts: &[Part]) -> Result<(), MergeError> {
    let sha = |p: &Part| {
        p.manifest["spec_sha256"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let first = &parts[0];
    for p in &parts[1..] {
        if sha(p) != sha(first) {
            return Err(MergeError::Mixed {
                a: first.dir.display().to_string(),
                sha_a: sha(first),
                b: p.dir.display().to_string(),
                sha_b: sha(p),
            });
        }
    }
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for p in parts {
        for (r, _) in p
            .records
            .iter()
            .filter(|(r, _)| r.status != super::Status::Skipped)
        {
            if let Some(other) = seen.insert(&r.cell, &p.dir) {
                return Err(MergeError::Overlap {
                    cell: r.cell.clone(),
                    a: other.display().to_string(),
                    b: p.dir.display().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Merge the run directories `dirs` into `out` (which must be new or empty).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let mut parts = dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    if parts.is_empty() {
        return Err(MergeError::NotRun(String::new()));
    }
    parts.sort_by_key(shard_of);
    check(&parts)?;
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(MergeError::NotEmpty(out.display().to_string()));
    }
    let write = |name: &str, text: &[u8]| {
        let path = out.join(name);
        std::fs::create_dir_all(out)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|source| MergeError::Write {
                path: path.display().to_string(),
                source,
            })
    };
    write(&parts[0].spec_name, &parts[0].spec)?;
    // Shards are contiguous runs of the plan: their cells one after another are its order.
    let mut cells: Vec<Value> = Vec::new();
    let mut results = String::new();
    let mut seen = std::collections::HashSet::new();
    for p in &parts {
        for c in p.plan["cells"].as_array().into_iter().flatten() {
            if seen.insert(c["id"].as_str().unwrap_or_default().to_string()) {
                cells.push(c.clone());
            }
        }
    }
    let mut kept = std::collections::HashSet::new();
    for p in &parts {
        for (r, line) in &p.records {
            if kept.insert(r.cell.clone()) {
                results.push_str(line);
                results.push('\n');
            }
        }
    }
    let mut plan = parts[0].plan.clone();
    plan["shard"] = Value::Null;
    plan["estimate_s"] = parts
        .iter()
        .map(|p| p.plan["estimate_s"].as_f64().unwrap_or(0.0))
        .sum::<f64>()
        .into();
    plan["cells"] = Value::Array(cells);
    write(
        "plan.json",
        (serde_json::to_string_pretty(&plan).unwrap_or_default() + "\n").as_bytes(),
    )?;
    write("results.jsonl", results.as_bytes())?;
    let requests: String = parts.iter().map(|p| p.requests.as_str()).collect();
    if !requests.is_empty() {
        write("requests.jsonl", requests.as_bytes())?;
    }
    let logs: String = parts
        .iter()
        .filter(|p| !p.engine_log.is_empty())
        .map(|p| {
            format!(
                "== benchspec merge: engine.log of {} ==\n{}",
                p.dir.display(),
                p.engine_log
            )
        })
        .collect();
    if !logs.is_empty() {
        write("engine.log", logs.as_bytes())?;
    }
    write(
        "manifest.json",
        (serde_json::to_string_pretty(&manifest(&parts)).unwrap_or_default() + "\n").as_bytes(),
    )?;
    let n = shard_of(&parts[0]).1;
    let given: Vec<u64> = parts.iter().map(|p| shard_of(p).0).collect();
    Ok(Merged {
        parts: parts.len(),
        records: kept.len(),
        missing_shards: (1..=n)
            .filter(|k| !given.contains(k))
            .map(|k| k as u32)
            .collect(),
    })
}

/// The first part's manifest, spanning every part's times and naming each part.
fn manifest(parts: &[Part]) -> Value {
    let text = |p: &Part, k: &str| p.manifest[k].as_str().map(str::to_string);
    let mut m = parts[0].manifest.clone();
    let starts: Vec<String> = parts.iter().filter_map(|p| text(p, "started_at")).collect();
    let ends: Vec<Option<String>> = parts.iter().map(|p| text(p, "ended_at")).collect();
    m["started_at"] = starts.iter().min().cloned().into();
    m["ended_at"] = if ends.iter().all(Option::is_some) {
        ends.iter().flatten().max().cloned().into()
    } else {
        Value::Null
    };
    let mut hosts: Vec<String> = parts.iter().filter_map(|p| text(p, "host")).collect();
    hosts.dedup();
    m["host"] = hosts.join(", ").into();
    m["merged_from"] = parts
        .iter()
        .map(|p| {
            let (k, n) = shard_of(p);
            json!({"dir": p.dir.display().to_string(), "shard": if n > 0 { Value::from(format!("{k}/{n}")) } else { Value::Null },
                   "host": text(p, "host"), "started_at": text(p, "started_at"), "ended_at": text(p, "ended_at"),
                   "engine_reported_version": p.manifest["engine"]["reported_version"].clone()})
        })
        .collect::<Vec<_>>()
        .into();
    m
}
