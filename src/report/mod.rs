//! The report stage (contract §7): read a run directory — `manifest.json`, the spec copy,
//! `plan.json`, `results.jsonl` — into a documented template context, and render it through
//! minijinja templates (the built-ins compiled into the binary, or the user's own) into
//! Markdown, HTML, CSV and JSON. `compare` sets two runs side by side. Nothing here measures;
//! every function is pure apart from reading the run directory and writing the outputs.

pub mod compare;
pub mod context;
mod csv;
mod facts;
pub mod format;
mod svg;
pub mod templates;

pub use context::Context;

use crate::results::Record;
use crate::spec::{Format, Spec, Stage};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The directory is not a run directory.
    #[error(
        "`{0}` is not a run directory (it has no manifest.json); give the `--out` of a `benchspec run`"
    )]
    NotRun(String),
    /// A file of the run directory is damaged.
    #[error("`{path}` cannot be read as a run file: {message}")]
    Damaged {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A template could not be loaded or rendered.
    #[error("{0}")]
    Template(String),
    /// An output could not be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A `--threshold` that is not a percentage.
    #[error("`--threshold {0}` is not a percentage; write e.g. `5%` or `2.5`")]
    Threshold(String),
}

impl ReportError {
    /// Exit code: 2, the input must change (contract §1); 1 when an output cannot be written.
    pub fn exit_code(&self) -> i32 {
        match self {
            ReportError::Write { .. } => 1,
            _ => 2,
        }
    }
}

/// A cell as `plan.json` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct Planned {
    /// `prefill/8K` or `decode/8K/c4`.
    pub id: String,
    /// `prefill` or `decode`.
    pub phase: String,
    /// The context length in tokens.
    pub context: u64,
    /// Simultaneous requests.
    pub concurrency: u32,
    /// The prompt was clamped to max_model_len − 1.
    #[serde(default)]
    pub clamped: bool,
    /// Why the cell is not run.
    #[serde(default)]
    pub skip: Option<String>,
}

/// Everything a run directory holds that a report shows.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// `manifest.json` as written.
    pub manifest: Value,
    /// The spec copy, checked again.
    pub spec: Spec,
    /// The plan's cells in run order.
    pub planned: Vec<Planned>,
    /// The records of `results.jsonl`; for a cell recorded twice, the last.
    pub records: Vec<Record>,
}

impl RunDir {
    /// Read the run directory at `path`.
    pub fn load(path: &Path) -> Result<RunDir, ReportError> {
        let manifest_path = path.join("manifest.json");
        if !manifest_path.is_file() {
            return Err(ReportError::NotRun(path.display().to_string()));
        }
        let manifest: Value = read_json(&manifest_path)?;
        let spec = read_spec(path)?;
        let plan: Value = read_json(&path.join("plan.json"))?;
        let planned: Vec<Planned> = plan
            .get("cells")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| damaged(&path.join("plan.json"), e.to_string()))?
            .unwrap_or_default();
        let results = path.join("results.jsonl");
        let mut records = if results.exists() {
            crate::results::read(&results).map_err(|source| ReportError::Read {
                path: results.display().to_string(),
                source,
            })?
        } else {
            Vec::new()
        };
        // The last record of a cell wins (a cell measured again after a crash).
        let mut seen = std::collections::HashSet::new();
        records.reverse();
        records.retain(|r| seen.insert(r.cell.clone()));
        records.reverse();
        Ok(RunDir {
            path: path.to_path_buf(),
            manifest,
            spec,
            planned,
            records,
        })
    }

    /// The record of cell `id`.
    pub fn record(&self, id: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.cell == id)
    }
}

fn damaged(path: &Path, message: String) -> ReportError {
    ReportError::Damaged {
        path: path.display().to_string(),
        message,
    }
}

fn read_text(path: &Path) -> Result<String, ReportError> {
    std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn read_json(path: &Path) -> Result<Value, ReportError> {
    serde_json::from_str(&read_text(path)?).map_err(|e| damaged(path, e.to_string()))
}

/// The spec copy (`spec.yaml`, `spec.yml` or `spec.toml`), checked as `validate` would.
fn read_spec(dir: &Path) -> Result<Spec, ReportError> {
    let Some(path) = ["spec.yaml", "spec.yml", "spec.toml"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
    else {
        return Err(damaged(
            &dir.join("spec.yaml"),
            "the spec copy is missing".into(),
        ));
    };
    let text = read_text(&path)?;
    let name = path.display().to_string();
    crate::spec::parse(&name, &text, Stage::Validate, &|_| None)
        .map(|l| l.spec)
        .map_err(|e| {
            let first = e
                .diagnostics()
                .first()
                .map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.column, d.message))
                .unwrap_or_else(|| e.to_string());
            damaged(&path, first)
        })
}

/// The file a built-in format is written to.
pub fn output_name(format: Format) -> &'static str {
    match format {
        Format::Markdown => "report.md",
        Format::Html => "report.html",
        Format::Csv => "results.csv",
        Format::Json => "results.json",
    }
}

/// Render `formats` and the user `templates` of `run` into `out`; returns the files written.
/// A user template named like a built-in one (`report.md.j2`) replaces it.
pub fn render(
    run: &RunDir,
    formats: &[Format],
    user_templates: &[PathBuf],
    out: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    let cx = Context::build(run);
    let mut written = Vec::new();
    let overridden = |name: &str| {
        user_templates
            .iter()
            .any(|t| t.file_name().and_then(|n| n.to_str()) == Some(&format!("{name}.j2")))
    };
    for &f in formats {
        let name = output_name(f);
        if overridden(name) {
            continue;
        }
        let text = match f {
            Format::Markdown | Format::Html => {
                templates::render_builtin(&format!("{name}.j2"), &cx)?
            }
            Format::Csv => csv::render(&cx)?,
            Format::Json => serde_json::to_string_pretty(&cx).unwrap_or_default() + "\n",
        };
        written.push(write(out, name, &text)?);
    }
    for t in user_templates {
        let (name, text) = templates::render_file(t, &cx)?;
        written.push(write(out, &name, &text)?);
    }
    Ok(written)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    let err = |source| ReportError::Write {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    // Whole or not at all: a report being rewritten is never seen half-written.
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, &path).map_err(err)?;
    Ok(path)
}
