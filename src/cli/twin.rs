//! `benchspec fit` and `benchspec predict`: a twin of the user's engine from measured cells.

use super::output::Out;
use crate::Error;
use crate::twin::{self, predict};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// `benchspec fit RUN_DIR… --out TWIN.toml [--holdout F]`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// Run directories of one engine (their prefill, decode, load and session cells are fitted).
    #[arg(required = true, value_name = "RUN_DIR")]
    pub dirs: Vec<PathBuf>,
    /// The twin file to write (TOML, commented).
    #[arg(long, value_name = "TWIN.toml")]
    pub out: PathBuf,
    /// Hold out this fraction of the cells (evenly through the run), fit the rest and predict
    /// them; with fewer than 8 cells, leave each out in turn.
    #[arg(long, value_name = "F")]
    pub holdout: Option<f64>,
    /// Name the N cells to measure next (of --spec, else the first run's spec): the
    /// unmeasured cells farthest from every measured one, corners beyond the fitted range
    /// first.
    #[arg(long, value_name = "N")]
    pub suggest: Option<usize>,
    /// The spec whose cells --suggest picks from.
    #[arg(long, value_name = "SPEC", requires = "suggest")]
    pub spec: Option<String>,
    /// Fit only the runs of this engine: a kind (`vllm`), or kind and version as the twin
    /// records them (`vllm 0.27.2`). Runs of several engines are refused without it.
    #[arg(long, value_name = "KIND")]
    pub engine: Option<String>,
    /// Fit only the runs serving this model (`model.served_name`).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Fit only the cells of this engine variant (`engine.variants`, `engine.sweep`); runs
    /// with cells of several variants are refused without it.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
}

/// `benchspec predict SPEC --twin TWIN.toml`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The spec whose plan is predicted.
    #[arg(value_name = "SPEC")]
    pub spec: String,
    /// The twin file (`benchspec fit`).
    #[arg(long, value_name = "TWIN.toml")]
    pub twin: PathBuf,
    /// `table` or `json`.
    #[arg(long, value_enum, default_value_t = PredictFormat::Table)]
    pub format: PredictFormat,
    /// Also write the whole spec, run against the twin as its engine on a paused clock, as a
    /// run directory here: records, the spec's reports marked "predicted", ready for
    /// `compare` with a measured run.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Refuse (exit 2) a spec that names another engine kind, version, model or hardware
    /// than the twin was fitted on (else a warning).
    #[arg(long)]
    pub strict: bool,
}

/// How a prediction is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PredictFormat {
    /// A Markdown table.
    Table,
    /// JSON.
    Json,
}

/// Run `fit`.
pub fn fit(args: &FitArgs, out: &Out) -> Result<i32, Error> {
    let mut runs = Vec::new();
    for d in &args.dirs {
        runs.push(
            crate::rundir::RunDir::open(d)
                .and_then(|r| r.load())
                .map_err(twin::TwinError::from)?,
        );
    }
    // The spec --suggest picks from is read first: a missing one writes no twin.
    let suggest_from = match (&args.spec, args.suggest) {
        (Some(path), Some(_)) => Some((
            crate::spec::load(path, crate::spec::Stage::Validate)?.spec,
            path.clone(),
        )),
        _ => None,
    };
    let select = twin::describe::Select {
        engine: args.engine.as_deref(),
        model: args.model.as_deref(),
        variant: args.variant.as_deref(),
    };
    let id = twin::describe::select(&mut runs, select)?;
    let started = std::time::Instant::now();
    let mut t = twin::fit_runs(&runs, args.holdout, &id)?;
    let took = started.elapsed();
    twin::write_twin(&t, &args.out)?;
    if let Some(line) = twin::identify::summary(&t.not_identified) {
        out.info(&format!(
            "{line}; predict gives no value that depends on them (unknown)"
        ));
    }
    out.info(&format!(
        "fitted {} cell(s) of {} in {:.1} ms; wrote {}",
        t.fitted_on.len(),
        id.label(),
        took.as_secs_f64() * 1e3,
        args.out.display()
    ));
    out.info(&intervals_line(&t.intervals));
    print_misses(&t, out);
    // A holdout that judged nothing is not a pass: exit 1 (the twin is written all the same).
    let judged = t.holdout.as_ref().is_none_or(|h| print_holdout(h, out));
    if t.holdout.as_ref().is_some_and(|h| h.fraction > 0.0) {
        score_by_simulation(&mut t, &runs, &args.out, out);
        twin::write_twin(&t, &args.out)?;
    }
    if let Some(n) = args.suggest {
        suggest_next(n, suggest_from, args, &runs, out);
    }
    Ok(if judged {
        0
    } else {
        super::exit::Exit::Findings.code()
    })
}

/// The fitted cells the model misses by more than 25%, on one line (nothing when none).
fn print_misses(t: &twin::Twin, out: &Out) {
    let missed: Vec<String> = t
        .residuals
        .iter()
        .filter(|r| r.error_pct.abs() > 25.0)
        .map(|r| format!("{} {} {:+.1}%", r.cell, r.metric, r.error_pct))
        .collect();
    if !missed.is_empty() {
        out.info(&format!(
            "the model misses fitted cells by more than 25%: {} (a cell it cannot describe, or measured otherwise: see docs/twin.md)",
            missed.join(", ")
        ));
    }
}

/// `fit --holdout`'s figures: each held-out value's error (stderr), then the medians, the
/// values left out as unknown and the coverage (stdout).
fn print_holdout(h: &twin::Holdout, out: &Out) -> bool {
    for c in h.cells.iter().filter(|c| c.metric != "tbt_ms_p50") {
        out.info(&format!("  {} {}: {:+.1}%", c.cell, c.metric, c.error_pct));
    }
    let cells = h
        .cells
        .iter()
        .filter(|c| c.metric == "per_request_tok_s")
        .count();
    if cells == 0 && h.ttft_median_pct.is_none() {
        out.print(&format!(
            "held-out cells judged: none — {} held-out value(s), every one unknown or unmeasured (the fitted cells do not fix them): this holdout tested nothing; fit with a smaller --holdout, or measure more cells (docs/twin.md)\n",
            h.unknown
        ));
        return false;
    }
    out.print(&format!(
        "held-out error: median {:.1}%, max {:.1}% over {cells} cells{}\n",
        h.median_pct,
        h.max_pct,
        h.ttft_median_pct
            .map_or(String::new(), |t| format!(" (TTFT median {t:.1}%)"))
    ));
    if h.unknown > 0 {
        out.print(&format!(
            "{} held-out value(s) left out: the fitted cells do not fix them (predict says unknown)\n",
            h.unknown
        ));
    }
    if h.fraction > 0.0 {
        out.print(&format!(
            "inside their interval: tok/s {}{}\n",
            h.covered
                .map_or("not judged (no interval earned)".into(), |c| format!(
                    "{:.0}%",
                    c * 100.0
                )),
            match (h.ttft_covered, h.ttft_median_pct) {
                (Some(c), _) => format!(", TTFT {:.0}%", c * 100.0),
                (None, Some(_)) => ", TTFT not judged (no interval earned)".into(),
                _ => String::new(),
            }
        ));
    }
    true
}

/// `fit --holdout`: score what `predict` prints (the simulation) on the held-out cells, from
/// the first run's own spec; a spec that cannot be read or run is said, not fatal.
fn score_by_simulation(t: &mut twin::Twin, runs: &[crate::rundir::Run], path: &Path, out: &Out) {
    let Some(h) = t.holdout.as_ref() else { return };
    let mut held: Vec<String> = h.cells.iter().map(|c| c.cell.clone()).collect();
    held.dedup();
    let measured: Vec<crate::results::Record> =
        runs.iter().flat_map(|r| r.records.clone()).collect();
    let spec = runs[0].path.join("spec.yaml");
    let scored = crate::spec::load(&spec.to_string_lossy(), crate::spec::Stage::Validate)
        .map_err(|e| e.to_string())
        .and_then(|loaded| {
            let plan = super::plan_of(&loaded.spec);
            twin::scored::score(&loaded, &plan, (path, t), &held, &measured)
                .map_err(|e| e.to_string())
        });
    match scored {
        Ok(s) => {
            let pct = |v: Option<f64>| v.map_or("—".into(), |x| format!("{:.0}%", x * 100.0));
            out.print(&format!(
                "predict (the simulation) on the {} held-out cells: tok/s median {}, TTFT median {}; inside their interval: tok/s {}, TTFT {}\n",
                s.cells,
                s.median_pct.map_or("—".into(), |m| format!("{m:.1}%")),
                s.ttft_median_pct.map_or("—".into(), |m| format!("{m:.1}%")),
                pct(s.covered),
                pct(s.ttft_covered)
            ));
            if let Some(h) = t.holdout.as_mut() {
                h.predicted = Some(s);
            }
        }
        Err(e) => out.info(&format!(
            "the held-out cells were not run against the twin ({e}): the figures above are the closed form's"
        )),
    }
}

/// What the twin's intervals rest on, for people.
fn intervals_line(iv: &twin::interval::Intervals) -> String {
    let one = |name: &str, b: &twin::interval::Basis| b.describe(name);
    format!(
        "90% intervals inside the fitted range: {}; {}; {}; phases fitted: {}",
        one("tok/s", &iv.tok_s),
        one("TTFT", &iv.ttft),
        one("prefill TTFT", &iv.prefill_ttft),
        iv.phases.join(", ")
    )
}

/// `fit --suggest N`: the cells to measure next, of `from` (`--spec`, read before the twin was
/// written) or the first run's own spec, with the `run` command that measures them.
fn suggest_next(
    n: usize,
    from: Option<(crate::spec::Spec, String)>,
    args: &FitArgs,
    runs: &[crate::rundir::Run],
    out: &Out,
) {
    let (spec, path) = from.unwrap_or_else(|| {
        let kept = args.dirs[0].join("spec.yaml");
        (runs[0].spec.clone(), kept.to_string_lossy().into_owned())
    });
    let measured: Vec<String> = runs
        .iter()
        .flat_map(|r| r.records.iter().map(|x| x.cell.clone()))
        .collect();
    let plan = super::plan_of(&spec);
    let cells = twin::suggest::suggest(&plan, &measured, n);
    let closed = plan.cells.iter().any(|c| {
        c.runs()
            && matches!(
                c.phase(),
                crate::plan::Phase::Prefill | crate::plan::Phase::Decode
            )
    });
    if !closed {
        out.print(&format!(
            "measure next: nothing to suggest: {path} has no prefill or decode cell to \
             measure (--suggest picks among those); give --spec a spec that has some\n"
        ));
    } else if cells.is_empty() {
        out.print("measure next: nothing (every prefill and decode cell is measured)\n");
    } else {
        out.print(&format!(
            "measure next: {}\n  benchspec run {} --only '{{{}}}'\n",
            cells.join(", "),
            crate::spec::command::quote(&path),
            cells.join(",")
        ));
    }
}

/// Run `predict`: the whole spec runs against the twin on a paused clock — in `--out`, else
/// in a scratch directory removed after — and every cell's values are that run's, so that
/// the table and `--out` are one computation.
pub fn predict(args: &PredictArgs, out: &Out) -> Result<i32, Error> {
    let loaded = crate::spec::load(&args.spec, crate::spec::Stage::Validate)?;
    let plan = super::plan_of(&loaded.spec);
    let t = twin::read_twin(&args.twin)?;
    check_describes(&loaded.spec, &t, args, out)?;
    let settings = twin::settings::SpecSettings::of(&loaded.spec);
    let mut p = predict::predict(&plan, &t, &settings);
    p.not_modelled = twin::settings::not_modelled(&loaded.spec);
    if let Some(dir) = &args.out {
        if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(twin::TwinError::Usage(format!(
                "`{}` exists and is not empty: `predict --out` writes a new run directory; choose another",
                dir.display()
            ))
            .into());
        }
        let mut records = twin::simulate::simulate(&loaded, (&args.twin, &t), dir, None)?;
        twin::answer::add_simulated(&mut p, &records, &t);
        twin::answer::blank_records(&p, &mut records);
        crate::rundir::RunDir::open(dir)
            .and_then(|d| d.rewrite_records(&records))
            .map_err(twin::TwinError::from)?;
        let run = crate::report::load(dir).map_err(Error::Report)?;
        let files = crate::report::render(&run, &loaded.spec.report.formats, &[], dir)
            .map_err(Error::Report)?;
        out.info(&format!(
            "predicted run: {} ({} file(s) of reports)",
            dir.display(),
            files.len()
        ));
    } else {
        let scratch = scratch_dir();
        let simulated = twin::simulate::simulate(&loaded, (&args.twin, &t), &scratch, None);
        let _ = std::fs::remove_dir_all(&scratch);
        twin::answer::add_simulated(&mut p, &simulated?, &t);
    }
    if !p.cells.iter().any(predict::PredictedCell::known) && p.capacity.is_none() {
        return Err(twin::TwinError::Usage(format!(
            "the twin {} knows none of the spec's values: {}",
            args.twin.display(),
            p.not_identified.join("; ")
        ))
        .into());
    }
    out.print(&match args.format {
        PredictFormat::Table => twin::table::table(&p) + "\n",
        PredictFormat::Json => serde_json::to_string_pretty(&p).map_err(Error::Json)? + "\n",
    });
    Ok(0)
}

/// Warn (refuse with `--strict`) when the spec names another engine, model or hardware than
/// the twin describes.
fn check_describes(
    spec: &crate::spec::Spec,
    t: &twin::Twin,
    args: &PredictArgs,
    out: &Out,
) -> Result<(), Error> {
    let lines = twin::describe::mismatches(spec, t);
    if lines.is_empty() {
        return Ok(());
    }
    let text = lines.join("; ");
    if args.strict {
        return Err(twin::TwinError::Usage(format!(
            "{text}: the twin describes another engine (--strict); fit one of this engine, or drop --strict"
        ))
        .into());
    }
    out.info(&format!(
        "warning: {text}: the prediction is the twin's engine's, not the spec's"
    ));
    Ok(())
}

/// A directory of its own under the system's temporary directory.
fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("benchspec-predict-{}-{nanos}", std::process::id()))
}
