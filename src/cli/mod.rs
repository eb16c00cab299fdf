//! The command line (docs/cli.md): argument parsing with clap, and the thin commands that
//! call the pipeline's stages and print what they return. Only this module prints.

pub mod exit;
mod help;
mod history;
mod init;
mod interop;
mod output;
mod probes;
mod report;
mod run;
mod sim;
mod tune;
mod twin;

use crate::Error;
use crate::plan;
use crate::spec::{self, Stage};
use clap::{FromArgMatches, Parser, Subcommand, ValueEnum};
use exit::{Exit, Exits};
use output::Out;

/// Benchmark LLM serving engines from a checked-in spec.
#[derive(Debug, Parser)]
#[command(name = "benchspec", version, about, long_about = None)]
pub struct Cli {
    /// Print only problems and results, no progress or summaries.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// When to color the output (`NO_COLOR` is honoured under `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// When to use color.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check specs: every problem of every file, each as FILE:LINE:COL: message (at /pointer).
    Validate {
        /// The spec files (.yaml, .yml, .toml or .json).
        #[arg(required = true, value_name = "SPEC")]
        specs: Vec<String>,
        /// How problems are printed: `auto` adds the source line and a caret on a terminal.
        #[arg(long, value_enum, default_value_t = DiagFormat::Auto)]
        format: DiagFormat,
    },
    /// Print the JSON Schema (draft 2020-12) of spec v1 (or of the result record).
    Schema {
        /// Write the schema to FILE instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<String>,
        /// The schema of a `results.jsonl` record instead of the spec's.
        #[arg(long, conflicts_with = "context")]
        result: bool,
        /// The schema of the report template context (and of `results.json`).
        #[arg(long, conflicts_with = "repeats")]
        context: bool,
        /// The schema of a `requests.jsonl` line (`--save-requests`).
        #[arg(long, conflicts_with_all = ["result", "context", "repeats"])]
        requests: bool,
        /// The schema of a `repeats.jsonl` line (one repeat of a repeated cell).
        #[arg(long, conflicts_with = "result")]
        repeats: bool,
        /// The schema of `tune.json` (`benchspec tune`).
        #[arg(long, conflicts_with_all = ["result", "context", "repeats", "requests"])]
        tune: bool,
    },
    /// Expand a spec into cells: run order, skip reasons, estimated wall time.
    Plan {
        /// The spec file.
        #[arg(value_name = "SPEC")]
        spec: String,
        /// `table` for people, `json` for tools (the plan.json of a run).
        #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
        format: PlanFormat,
        /// Only shard K of N: a deterministic, complete partition of the runnable cells;
        /// `auto` reads K and N from a Slurm job array or a Kubernetes Indexed Job.
        #[arg(long, value_name = "K/N|auto")]
        shard: Option<String>,
        /// With `--shard`: every load cell in each shard at 1/N of its rate, first (as `run
        /// --split-load` runs it).
        #[arg(long, requires = "shard")]
        split_load: bool,
    },
    /// Execute the plan: measure every cell, write the run directory.
    Run(run::RunArgs),
    /// Render a run directory's reports again, from disk alone (also an unfinished run).
    Report(report::ReportArgs),
    /// Compare two runs cell by cell; exit 1 on a regression or a base cell missing from the
    /// new run.
    Compare(report::CompareArgs),
    /// Join the run directories of the shards of one plan into one, and render its reports.
    Merge {
        /// The shards' run directories, or folders holding them (CI artifacts, a shared
        /// volume): run directories up to four levels down are found.
        #[arg(required = true, value_name = "RUN_DIR")]
        dirs: Vec<std::path::PathBuf>,
        /// The merged run directory (new or empty).
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
        /// Merge even when cells of the plan have no record (a shard failed or was not
        /// given): they are listed, and the reports show them as not run.
        #[arg(long)]
        allow_missing: bool,
    },
    /// Read a peer's result files (guidellm, vLLM's bench, AIPerf) into a run directory.
    Import(interop::ImportArgs),
    /// Write a run in another format: llm-d's Benchmark Report v0.2.1.
    Export(interop::ExportArgs),
    /// Fit a twin of the engine (the simulator's cost model) to measured runs.
    Fit(twin::FitArgs),
    /// Predict a spec's cells with a twin, each with a 90% interval.
    Predict(twin::PredictArgs),
    /// Search the spec's engine variants for the best under its SLO, measuring only what the
    /// twin cannot rule out.
    ///
    /// Prints the ranking (measured and predicted), the winner's launch command, the frontier
    /// of the measured cells (tok/s per GPU against per user) and the engine time spent
    /// against the full grid's; DIR/tune.json holds the same.
    Tune(tune::TuneArgs),
    /// The history database: add runs, list them, trends with regression flags, a dashboard.
    History(history::HistoryArgs),
    /// Serve the embedded simulated engine (vLLM's API) on 127.0.0.1.
    Sim(sim::SimArgs),
    /// Write a first spec: the quickstart, or one for the server at --from URL.
    Init(init::InitArgs),
}

/// How diagnostics are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiagFormat {
    /// `full` on a terminal, `short` elsewhere.
    Auto,
    /// One line per problem.
    Short,
    /// One line per problem, then the source line with a caret.
    Full,
    /// A JSON array of problems on standard output.
    Json,
}

/// How a plan is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A table for people.
    Table,
    /// JSON.
    Json,
}

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    let parsed = help::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let out = Out::new(cli.color, cli.quiet);
    let result = match cli.command {
        Command::Validate { specs, format } => return validate(&specs, format, &out),
        Command::Schema {
            out: file,
            result,
            context,
            repeats,
            requests,
            tune,
        } => {
            let text = if tune {
                crate::tune::tune_schema_text()
            } else {
                schema_text(result, context, repeats, requests)
            };
            schema(file.as_deref(), text, &out)
        }
        Command::Plan {
            spec,
            format,
            shard,
            split_load,
        } => plan_cmd(&spec, format, (shard.as_deref(), split_load), &out),
        Command::Sim(args) => sim::run(&args, &out),
        Command::History(args) => history::run(args, &out),
        Command::Fit(args) => twin::fit(&args, &out),
        Command::Predict(args) => twin::predict(&args, &out),
        Command::Tune(args) => tune::run(&args, &out),
        Command::Import(args) => interop::import(&args, &out),
        Command::Export(args) => interop::export(&args, &out),
        Command::Init(args) => init::run(&args, &out),
        Command::Run(args) => run::run(&args, &out),
        Command::Report(args) => report::report(&args, &out),
        Command::Compare(args) => report::compare_cmd(&args, &out),
        Command::Merge {
            dirs,
            out: dir,
            allow_missing,
        } => report::merge(&dirs, &dir, allow_missing, &out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            out.error(&e, DiagFormat::Auto);
            e.exit().code()
        }
    }
}

/// The spec files among `args`: a directory stands for the spec files directly inside it
/// (`.yaml`, `.yml`, `.toml`, `.json`, sorted), so `validate specs/*` passes over a folder of traces
/// with a note instead of failing on it.
fn spec_files(args: &[String], out: &Out) -> Vec<String> {
    let mut files = Vec::new();
    for arg in args {
        let dir = std::path::Path::new(arg);
        let Ok(entries) = std::fs::read_dir(dir) else {
            files.push(arg.clone());
            continue;
        };
        let mut inside: Vec<String> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "toml" | "json"))
            })
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        inside.sort();
        if inside.is_empty() {
            out.info(&format!(
                "note: `{arg}` is a directory with no spec in it (.yaml, .yml, .toml, .json); skipped"
            ));
        }
        files.extend(inside);
    }
    files
}

fn validate(args: &[String], format: DiagFormat, out: &Out) -> i32 {
    let specs = &spec_files(args, out);
    if specs.is_empty() {
        out.eprint(
            "error: no spec to validate: name spec files (.yaml, .yml, .toml, .json) or folders holding them\n",
        );
        return Exit::BadInput.code();
    }
    let (mut invalid, mut errors, mut warnings) = (0, 0, 0);
    let mut json = Vec::new();
    for path in specs {
        let diagnostics = match spec::load(path, Stage::Validate) {
            Ok(loaded) => loaded.warnings,
            Err(e) if e.diagnostics().is_empty() => {
                invalid += 1;
                errors += 1;
                out.error(&Error::Spec(e), format);
                continue;
            }
            Err(e) => {
                invalid += 1;
                e.diagnostics().to_vec()
            }
        };
        let e = diagnostics
            .iter()
            .filter(|d| d.severity == spec::Severity::Error)
            .count();
        errors += e;
        warnings += diagnostics.len() - e;
        if format == DiagFormat::Json {
            json.extend(diagnostics);
        } else {
            out.diagnostics(&diagnostics, format);
            if e == 0 {
                out.info(&format!("{path}: ok"));
            }
        }
    }
    if format == DiagFormat::Json {
        out.diagnostics(&json, format);
    }
    if specs.len() > 1 || invalid > 0 {
        let valid = specs.len() - invalid;
        out.info(&format!("{} spec(s): {valid} valid, {invalid} invalid; {errors} error(s), {warnings} warning(s)", specs.len()));
    }
    if invalid > 0 {
        Exit::BadInput.code()
    } else {
        Exit::Ok.code()
    }
}

fn schema_text(result: bool, context: bool, repeats: bool, requests: bool) -> String {
    if result {
        crate::results::record::record_schema_text()
    } else if requests {
        crate::rundir::request_line_schema_text()
    } else if repeats {
        crate::rundir::repeat_line_schema_text()
    } else if context {
        crate::report::context::context_schema_text()
    } else {
        spec::schema::spec_schema_text()
    }
}

fn schema(file: Option<&str>, text: String, out: &Out) -> Result<i32, Error> {
    match file {
        Some(path) => std::fs::write(path, text).map_err(|source| Error::Write {
            path: path.to_string(),
            source,
        })?,
        None => out.print(&text),
    }
    Ok(0)
}

fn plan_cmd(
    path: &str,
    format: PlanFormat,
    (shard, split): (Option<&str>, bool),
    out: &Out,
) -> Result<i32, Error> {
    let shard = run::shard_of(shard, "plan", out)?;
    let loaded = spec::load(path, Stage::Validate)?;
    out.diagnostics(&loaded.warnings, DiagFormat::Auto);
    let mut plan = plan_of(&loaded.spec);
    if let Some(r) = &loaded.spec.phases.replay {
        let file = loaded.resolve(spec::files::FileRef::Trace, &r.trace);
        if let Ok(entries) = spec::trace::read(&file, &r.trace) {
            plan.with_trace(&entries);
        }
    }
    plan = match shard {
        Some(s) if split => plan.shard_split(s),
        Some(s) => plan.shard(s),
        None => plan,
    };
    match format {
        PlanFormat::Table => out.print(&plan::render_table(&plan, path)),
        PlanFormat::Json => {
            out.print(&(serde_json::to_string_pretty(&plan).map_err(Error::Json)? + "\n"))
        }
    }
    Ok(0)
}

/// The plan of `spec` as known before an engine is asked: a simulator's limits are its
/// profile's.
fn plan_of(spec: &spec::Spec) -> plan::Plan {
    plan::expand_with(
        spec,
        &crate::plan::sim::rates_for,
        &crate::plan::sim::limits_for,
    )
}
