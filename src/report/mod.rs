//! The report stage (docs/reports.md): a run directory, read through `rundir` (manifest, spec
//! copy, plan, records), arranged into a documented template context and rendered through
//! minijinja templates (the built-ins compiled into the binary, or the user's own) into
//! Markdown, HTML, CSV and JSON. `compare` sets two runs side by side. Nothing here measures;
//! every function is pure apart from reading the run directory and writing the outputs.

mod capacity;
mod cells;
pub(crate) mod compare;
mod compare_traffic;
pub(crate) mod context;
mod csv;
mod csv_traffic;
mod export;
mod view;
pub use export::{CompareFormat, Exported, Exporter, Json, exporter};
mod facts;
pub(crate) mod format;
pub(crate) mod frontier;
mod frontier_compare;
mod matrix;
mod observe;
mod run_info;
mod slo_terms;
pub(crate) mod svg;
mod svg_capacity;
mod svg_frontier;
mod svg_turns;
mod svg_xy;
pub(crate) mod templates;
mod variants;
pub(crate) mod verdict;

pub use capacity::summary as capacity_summary;
pub use context::{Context, context_schema_text};
pub use slo_terms::verdict as slo_verdict;
pub use variants::{names_of as variant_names, only_variant};

use crate::rundir::{Run, RunDir, RunDirError};
use crate::spec::Format;
use std::path::{Path, PathBuf};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run directory could not be read.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// A template file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
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
    /// `compare --variants` names a variant the run does not have.
    #[error("`--variants`: {dir} has no variant `{name}`; it has {have}")]
    NoVariant {
        /// The run directory.
        dir: String,
        /// The variant asked for.
        name: String,
        /// The variants it has, listed.
        have: String,
    },
    /// `compare` needs two runs, or one run and `--variants A B`.
    #[error("{0}")]
    CompareUsage(String),
}

/// Read the run directory at `path` for a report.
pub fn load(path: &Path) -> Result<Run, ReportError> {
    Ok(RunDir::open(path)?.load()?)
}

/// The file a built-in format is written to.
pub fn output_name(format: Format) -> &'static str {
    exporter::<Context>(format).file_name()
}

/// Render `formats` and the user `templates` of `run` into `out`; returns the files written.
/// A user template named like a built-in one (`report.md.j2`) replaces it.
pub fn render(
    run: &Run,
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
        let e = exporter::<Context>(f);
        let name = e.file_name();
        if overridden(name) {
            continue;
        }
        written.push(write(out, name, &e.render(&cx)?)?);
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
