//! The built-in output formats, one [`Exporter`] each (hyperfine's exporters are the model):
//! the file it is written to and how a document becomes its text. A document — a run's
//! report context, a `compare` comparison, a `history trend` — lists its formats in its
//! [`Exported`] impl, the one place a format picks its exporter. Markdown and HTML are
//! minijinja templates (the trend's are written in Rust, `history/render.rs`), CSV a table,
//! JSON the document itself.

use super::compare::Comparison;
use super::context::Context;
use super::{ReportError, csv, templates};
use crate::spec::Format;
use serde::Serialize;

/// One output format of a document `D` (a run's report context unless named).
pub trait Exporter<D: ?Sized = Context>: Sync {
    /// The file it is written to: by `report` into the run directory, by `history trend
    /// --out` into its folder (`compare` prints its text).
    fn file_name(&self) -> &'static str;
    /// The document's text.
    fn render(&self, doc: &D) -> Result<String, ReportError>;
}

/// A document written in the built-in formats: each of its formats with its exporter.
pub trait Exported: 'static {
    /// The formats it is written in (`spec::Format` for a run's report; the command's own
    /// `--format` values for the others).
    type Format: Copy;
    /// The exporter of `format`.
    fn exporter(format: Self::Format) -> &'static dyn Exporter<Self>;
}

/// The exporter of `format` for the document `D`.
pub fn exporter<D: Exported>(format: D::Format) -> &'static dyn Exporter<D> {
    D::exporter(format)
}

/// A built-in template, `NAME.j2` writing `NAME`.
struct Template(&'static str);

impl Exporter for Template {
    fn file_name(&self) -> &'static str {
        self.0
    }

    fn render(&self, cx: &Context) -> Result<String, ReportError> {
        templates::render_builtin(&format!("{}.j2", self.0), cx)
    }
}

impl Exporter<Comparison> for Template {
    fn file_name(&self) -> &'static str {
        self.0
    }

    fn render(&self, c: &Comparison) -> Result<String, ReportError> {
        templates::render_value(&format!("{}.j2", self.0), c)
    }
}

/// `results.csv`.
struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "results.csv"
    }

    fn render(&self, cx: &Context) -> Result<String, ReportError> {
        csv::render(cx)
    }
}

/// The document as it is, pretty-printed JSON ending in a newline, written to the file named.
pub struct Json(pub &'static str);

impl<D: Serialize + ?Sized> Exporter<D> for Json {
    fn file_name(&self) -> &'static str {
        self.0
    }

    fn render(&self, doc: &D) -> Result<String, ReportError> {
        let mut text = serde_json::to_string_pretty(doc)
            .map_err(|e| ReportError::Template(format!("{}: {e}", self.0)))?;
        text.push('\n');
        Ok(text)
    }
}

impl Exported for Context {
    type Format = Format;

    fn exporter(format: Format) -> &'static dyn Exporter {
        match format {
            Format::Markdown => &Template("report.md"),
            Format::Html => &Template("report.html"),
            Format::Csv => &Csv,
            Format::Json => &Json("results.json"),
        }
    }
}

/// How a comparison is printed (`compare --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// Markdown.
    Markdown,
    /// JSON.
    Json,
}

impl Exported for Comparison {
    type Format = CompareFormat;

    fn exporter(format: CompareFormat) -> &'static dyn Exporter<Comparison> {
        match format {
            CompareFormat::Markdown => &Template("compare.md"),
            CompareFormat::Json => &Json("compare.json"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each format of a report and of a comparison has its exporter, writing the file
    /// docs/reports.md and docs/cli.md name.
    #[test]
    fn one_exporter_per_format_each_its_file() {
        let report = [Format::Markdown, Format::Html, Format::Csv, Format::Json]
            .map(|f| exporter::<Context>(f).file_name());
        assert_eq!(
            report,
            ["report.md", "report.html", "results.csv", "results.json"]
        );
        let compare = [CompareFormat::Markdown, CompareFormat::Json]
            .map(|f| exporter::<Comparison>(f).file_name());
        assert_eq!(compare, ["compare.md", "compare.json"]);
    }
}
