//! `benchspec import` and `benchspec export`: results to and from the peers' formats.

use super::output::Out;
use crate::Error;
use crate::interop::{self, Tool};
use crate::spec::{EngineKind, Format};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `benchspec import TOOL FILE… --out RUN_DIR`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The tool that wrote the files.
    #[arg(value_enum, value_name = "TOOL")]
    pub tool: Tool,
    /// Its result files: guidellm's `--output` JSON, `vllm bench serve --save-result` JSON,
    /// AIPerf's `profile_export_aiperf.json`. Each benchmark becomes a cell `import/<tool>/<n>`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The run directory to write: a new or empty folder (`import` never adds to a run).
    #[arg(long, value_name = "RUN_DIR")]
    pub out: PathBuf,
    /// The engine the peer measured (the peers' files do not say), as a spec names it
    /// (`engine.kind`), written into the run's spec and manifest.
    #[arg(long, value_name = "KIND", value_enum, default_value_t = EngineKind::Vllm)]
    pub engine: EngineKind,
    /// The spec name the run is kept under (`history` series are keyed by it); default
    /// `<tool> <model>`.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// `benchspec export RUN_DIR --format benchmark-report`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run directory.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The format: llm-d's Benchmark Report v0.2.1, one YAML file per measured cell.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Where to write (default: `RUN_DIR/benchmark-report`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// llm-d Benchmark Report v0.2.1.
    BenchmarkReport,
}

/// Run `import`.
pub fn import(args: &ImportArgs, out: &Out) -> Result<i32, Error> {
    let mut runs = Vec::new();
    for (i, f) in args.files.iter().enumerate() {
        // The same file twice would be two benchmarks that ran once.
        let real = std::fs::canonicalize(f).ok();
        let same = |g: &std::path::PathBuf| {
            g == f || (real.is_some() && std::fs::canonicalize(g).ok() == real)
        };
        if args.files[..i].iter().any(same) {
            return Err(interop::InteropError::Format {
                path: f.clone(),
                message: "given twice: each file is imported once (its benchmarks are cells)"
                    .into(),
            }
            .into());
        }
        let run = interop::read(args.tool, f)?;
        runs.push((f.display().to_string(), run));
    }
    let dir = interop::write_run(
        args.tool,
        args.engine.as_str(),
        &runs,
        &args.out,
        args.name.as_deref(),
    )?;
    let run = crate::report::load(&dir)?;
    crate::report::render(&run, &[Format::Markdown, Format::Html], &[], &dir)?;
    out.info(&format!(
        "imported {} benchmark(s) of {} from {} file(s) into {}",
        run.records.len(),
        args.tool.as_str(),
        args.files.len(),
        dir.display()
    ));
    Ok(0)
}

/// Run `export`.
pub fn export(args: &ExportArgs, out: &Out) -> Result<i32, Error> {
    let run = crate::report::load(&args.dir)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| args.dir.join("benchmark-report"));
    let ExportFormat::BenchmarkReport = args.format;
    let files = interop::benchmark_report::export(&run, &dir)?;
    out.info(&format!(
        "wrote {} Benchmark Report v{} file(s) into {}",
        files.len(),
        interop::benchmark_report::VERSION,
        dir.display()
    ));
    Ok(0)
}
