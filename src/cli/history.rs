//! `benchspec history add|list|trend|site`: the history database from the command line.

use super::exit::Exit;
use super::output::Out;
use super::report::Judging;
use crate::Error;
use crate::history::render::TrendFormat;
use crate::history::{self, HistoryError, Store, Target, TrendQuery};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

/// `benchspec history …`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The history command.
    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// The database option every history command takes.
#[derive(Debug, Args, Clone)]
pub struct DbArg {
    /// An SQLite file or a `postgres://` URL; else `BENCHSPEC_HISTORY`, else
    /// `./benchspec-history.sqlite`. `add` creates a missing file; `list`, `trend` and `site`
    /// refuse it (exit 2).
    #[arg(long, value_name = "DB")]
    pub db: Option<String>,
}

/// The history commands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Add run directories (idempotent: a run is added once, by its run id, from any path).
    /// A run `benchspec predict` made is refused (exit 2) unless --allow-predicted.
    Add {
        /// The run directories.
        #[arg(required = true, value_name = "RUN_DIR")]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
        /// Keep runs `benchspec predict --out` made (nothing in them measured): marked as
        /// predicted wherever they are shown, and left out of every trend.
        #[arg(long)]
        allow_predicted: bool,
    },
    /// List the runs, oldest first.
    List {
        #[command(flatten)]
        db: DbArg,
        /// Only runs of the spec with this `name`.
        #[arg(long, value_name = "NAME")]
        spec: Option<String>,
        /// `table` or `json` (one object per run).
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Series of each cell's metrics over the measured runs, each point judged against the
    /// points before it; exits 1 when the newest point of a series is a regression, 2 when
    /// the filters match no series (naming what the history holds).
    Trend {
        #[command(flatten)]
        db: DbArg,
        /// Only the spec with this `name`.
        #[arg(long, value_name = "NAME")]
        spec: Option<String>,
        /// Only cells matching this glob (`decode/*/c16`).
        #[arg(long, value_name = "GLOB")]
        cell: Option<String>,
        /// Only these metrics (`total_tok_s`, `ttft_ms_p50`, …); all headline metrics without.
        #[arg(long, value_name = "M")]
        metric: Vec<String>,
        /// Show the last N points of each series (N ≥ 1; the newest point is judged whatever N).
        #[arg(long, value_name = "N", value_parser = at_least_one)]
        last: Option<usize>,
        /// Order points by this label (`engine_version`, or a spec label) instead of time.
        #[arg(long, value_name = "LABEL")]
        by: Option<String>,
        /// `markdown`, `html`, `csv` or `json`.
        #[arg(long, value_enum, default_value_t = TrendFormat::Markdown)]
        format: TrendFormat,
        /// Write `trend.<ext>` into DIR instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        judge: Judging,
    },
    /// Write a static dashboard (index, a trend page per spec, each run's report) into DIR.
    Site {
        #[command(flatten)]
        db: DbArg,
        /// The folder to write (created when missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[command(flatten)]
        judge: Judging,
    },
}

/// How runs are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A Markdown table.
    Table,
    /// JSON.
    Json,
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::History(HistoryError::Usage(format!("cannot start: {e}"))))
}

/// Run a history command; returns the exit code.
pub fn run(args: HistoryArgs, out: &Out) -> Result<i32, Error> {
    runtime()?.block_on(async move {
        match args.command {
            HistoryCommand::Add {
                dirs,
                db,
                allow_predicted,
            } => add(&dirs, db.db.as_deref(), allow_predicted, out).await,
            HistoryCommand::List { db, spec, format } => {
                list(db.db.as_deref(), spec.as_deref(), format, out).await
            }
            HistoryCommand::Trend {
                db,
                spec,
                cell,
                metric,
                last,
                by,
                format,
                out: dir,
                judge,
            } => {
                let q = TrendQuery {
                    spec,
                    cells: cell,
                    metrics: metric,
                    last,
                    by,
                    rules: judge.rules()?,
                };
                trend(db.db.as_deref(), &q, format, dir.as_deref(), out).await
            }
            HistoryCommand::Site {
                db,
                out: dir,
                judge,
            } => {
                let q = TrendQuery {
                    rules: judge.rules()?,
                    ..TrendQuery::default()
                };
                site(db.db.as_deref(), &dir, &q, out).await
            }
        }
    })
}

/// `history list`.
async fn list(
    db: Option<&str>,
    spec: Option<&str>,
    format: ListFormat,
    out: &Out,
) -> Result<i32, Error> {
    let store = Store::open_existing(Target::resolve(db)).await?;
    let runs = history::list::list(&store, spec).await?;
    out.print(&match format {
        ListFormat::Table => history::list::table(&runs),
        ListFormat::Json => serde_json::to_string_pretty(&runs).map_err(Error::Json)? + "\n",
    });
    Ok(0)
}

/// `history site`.
async fn site(db: Option<&str>, dir: &Path, q: &TrendQuery, out: &Out) -> Result<i32, Error> {
    let store = Store::open_existing(Target::resolve(db)).await?;
    let w = history::site::build(&store, dir, q).await?;
    let moved = if w.linked < w.runs {
        " (the other runs' directories have moved)"
    } else {
        ""
    };
    out.info(&format!(
        "wrote {}: {} spec(s), {} run(s), {} report(s) linked{moved}",
        w.index.display(),
        w.specs,
        w.runs,
        w.linked
    ));
    Ok(0)
}

/// Open (creating it when missing) and migrate the history at `db`, on a runtime of its own:
/// `run --history` checks its database before the first cell.
pub fn check_now(db: Option<&str>) -> Result<(), Error> {
    runtime()?.block_on(async {
        Store::open(Target::resolve(db)).await?.close().await;
        Ok(())
    })
}

/// Add `dirs` to the history at `db` now, on a runtime of its own (`run --history`).
pub fn add_now(dirs: &[PathBuf], db: Option<&str>, out: &Out) -> Result<i32, Error> {
    runtime()?.block_on(add(dirs, db, false, out))
}

/// Add `dirs` to the history at `db` (also `run --history`): each is read first, and a
/// predicted run refused unless `allow_predicted`, before the database is opened.
pub async fn add(
    dirs: &[PathBuf],
    db: Option<&str>,
    allow_predicted: bool,
    out: &Out,
) -> Result<i32, Error> {
    let mut runs = Vec::new();
    for dir in dirs {
        let run = crate::rundir::RunDir::open(dir)
            .and_then(|d| d.load())
            .map_err(HistoryError::from)?;
        if let Some(p) = &run.manifest.predicted_by
            && !allow_predicted
        {
            return Err(HistoryError::Predicted {
                dir: dir.clone(),
                twin: p.twin.clone(),
            }
            .into());
        }
        runs.push((dir, run));
    }
    let store = Store::open(Target::resolve(db)).await?;
    for (dir, run) in &runs {
        let a = store.add(run).await?;
        let predicted = if run.manifest.predicted_by.is_some() {
            " as predicted (left out of trends)"
        } else {
            ""
        };
        out.info(&if a.new_run {
            format!(
                "added {} ({}, {} cells) to {}{predicted}",
                a.run_id,
                dir.display(),
                a.cells_added,
                store.target().shown()
            )
        } else if a.cells_added > 0 {
            format!(
                "{} was already in {}: added its {} new cell(s)",
                a.run_id,
                store.target().shown(),
                a.cells_added
            )
        } else {
            format!(
                "{} is already in {} (from any path): nothing added",
                a.run_id,
                store.target().shown()
            )
        });
    }
    store.close().await;
    Ok(0)
}

async fn trend(
    db: Option<&str>,
    q: &TrendQuery,
    format: TrendFormat,
    dir: Option<&Path>,
    out: &Out,
) -> Result<i32, Error> {
    q.check()?;
    let store = Store::open_existing(Target::resolve(db)).await?;
    let t = history::trend::trend(&store, q).await?;
    let (series, predicted) = (&t.series, &t.predicted);
    if series.is_empty() {
        return Err(history::nomatch::nothing_matches(&store, q).await.into());
    }
    if !predicted.is_empty() {
        out.info(&format!(
            "note: {} predicted run(s) left out (not measured): {}",
            predicted.len(),
            predicted.join(", ")
        ));
    }
    let e = crate::report::exporter::<history::Trend>(format);
    let text = e.render(&t)?;
    match dir {
        Some(d) => {
            let path = d.join(e.file_name());
            std::fs::create_dir_all(d)
                .and_then(|()| std::fs::write(&path, &text))
                .map_err(|source| HistoryError::Write {
                    path: path.clone(),
                    source,
                })?;
            out.info(&format!("wrote {}", path.display()));
        }
        None => out.print(&text),
    }
    let regressions = history::render::regressions(series);
    for r in &regressions {
        out.info(&format!("regression: {}", r.replace('`', "")));
    }
    Ok(Exit::findings(!regressions.is_empty()).code())
}

/// `--last N`: a whole number of points, at least one (the newest, which is judged).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of points of at least 1 (the newest point is always shown and judged)"
        )),
    }
}
