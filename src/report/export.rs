//! The built-in report formats, one [`Exporter`] each: the file it is written to and how the
//! template context becomes its text (hyperfine's exporters are the model). Markdown and
//! HTML are minijinja templates, CSV a table of the cells, JSON the context itself.

use super::context::Context;
use super::{ReportError, csv, templates};
use crate::spec::Format;

/// One report format.
pub trait Exporter: Sync {
    /// The file it is written to in the run directory.
    fn file_name(&self) -> &'static str;
    /// The report's text.
    fn render(&self, cx: &Context) -> Result<String, ReportError>;
}

/// A built-in template.
struct Template(&'static str);

impl Exporter for Template {
    fn file_name(&self) -> &'static str {
        self.0
    }

    fn render(&self, cx: &Context) -> Result<String, ReportError> {
        templates::render_builtin(&format!("{}.j2", self.0), cx)
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

/// `results.json`: the template context as it is.
struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "results.json"
    }

    fn render(&self, cx: &Context) -> Result<String, ReportError> {
        let mut text = serde_json::to_string_pretty(cx)
            .map_err(|e| ReportError::Template(format!("results.json: {e}")))?;
        text.push('\n');
        Ok(text)
    }
}

/// The exporter of `format`.
pub fn exporter(format: Format) -> &'static dyn Exporter {
    match format {
        Format::Markdown => &Template("report.md"),
        Format::Html => &Template("report.html"),
        Format::Csv => &Csv,
        Format::Json => &Json,
    }
}
