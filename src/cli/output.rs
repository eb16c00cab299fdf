//! Where the CLI's words go: results to standard output, problems and summaries to standard
//! error, colored only on a terminal (or when asked), quiet when asked.

use super::{ColorChoice, DiagFormat};
use crate::Error;
use crate::spec::Diagnostic;
use std::io::{IsTerminal, Write};

/// The CLI's printer.
pub struct Out {
    color: bool,
    quiet: bool,
    stderr_tty: bool,
}

impl Out {
    /// A printer honouring `--color`, `NO_COLOR` and `--quiet`.
    pub fn new(choice: ColorChoice, quiet: bool) -> Self {
        let stderr_tty = std::io::stderr().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stderr_tty && !no_color,
        };
        Out {
            color,
            quiet,
            stderr_tty,
        }
    }

    /// Whether standard error is a terminal (progress bars go there).
    pub fn is_terminal(&self) -> bool {
        self.stderr_tty
    }

    /// Whether `--quiet` was given.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// A result, on standard output.
    pub fn print(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    /// A remark for people, on standard error; silent with `--quiet`.
    pub fn info(&self, text: &str) {
        if !self.quiet {
            self.eprint(&format!("{text}\n"));
        }
    }

    /// `text` on standard error as it is; a closed pipe (`| head`) is not an error.
    pub fn eprint(&self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
    }

    /// Problems, in the asked format.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic], format: DiagFormat) {
        match format {
            DiagFormat::Json => {
                let json = serde_json::to_string_pretty(diagnostics).unwrap_or_default();
                self.print(&(json + "\n"));
            }
            _ => {
                let full =
                    format == DiagFormat::Full || (format == DiagFormat::Auto && self.stderr_tty);
                for d in diagnostics {
                    if full {
                        self.eprint(&format!("{}\n\n", d.caret_form(self.color)));
                    } else {
                        self.eprint(&format!("{}\n", d.line_form(self.color)));
                    }
                }
            }
        }
    }

    /// An error that ended the command.
    pub fn error(&self, error: &Error, format: DiagFormat) {
        match error {
            Error::Spec(e) if !e.diagnostics().is_empty() => {
                self.diagnostics(e.diagnostics(), format);
                self.info(&format!("{e}"));
            }
            other => {
                let label = if self.color {
                    "\x1b[1;31merror\x1b[0m"
                } else {
                    "error"
                };
                self.eprint(&format!("{label}: {other}\n"));
            }
        }
    }
}
