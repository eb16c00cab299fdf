//! `benchspec run`: check the spec for running, execute the plan, and print progress as the
//! core reports it: one line per cell (the same on a terminal and off it for now).

use super::output::Out;
use crate::Error;
use crate::plan::Shard;
use crate::results::Status;
use crate::run::{self, Event, RunOptions};
use crate::spec::{self, Stage};
use clap::Args;
use std::path::PathBuf;

/// Options of `benchspec run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The spec file.
    #[arg(value_name = "SPEC")]
    pub spec: String,
    /// The run directory (default: `runs/<spec>-<date>-<time>`); must not hold files, unless
    /// `--resume`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Use this server instead of `engine.base_url`.
    #[arg(long, value_name = "URL", value_parser = spec::command::base_url_arg)]
    pub base_url: Option<String>,
    /// Only the cells whose id matches (`decode/8K/*`, `decode/{8K,16K}/c[14]`); a glob that
    /// matches no cell of the plan stops the run before it starts, naming the cells.
    #[arg(long, value_name = "GLOB", value_parser = run::parse_only)]
    pub only: Option<String>,
    /// Only shard K of N of the runnable cells; `auto` reads K and N from a Slurm job array
    /// (`SLURM_ARRAY_TASK_ID`, `_MIN`, `_COUNT`) or a Kubernetes Indexed Job
    /// (`JOB_COMPLETION_INDEX` with `BENCHSPEC_SHARD_COUNT`) and says which it used.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Also write per-request detail to `requests.jsonl`.
    #[arg(long)]
    pub save_requests: bool,
    /// Go on with the run in `--out`: run only the cells without a record (the spec must be
    /// the one the run began with; a last line cut short by a killed run is repaired).
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Threads of the measuring client (default: one per core). Each decode record says how
    /// busy they were; a client busier than `validity.max_client_busy` makes the cell invalid.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub client_threads: Option<u32>,
}

/// The shard `--shard TEXT` names (`K/N`, or `auto` from the scheduler's environment, said
/// on stderr as `benchspec COMMAND: shard 2/4 from …`).
pub fn shard_of(text: Option<&str>, command: &str, out: &Out) -> Result<Option<Shard>, Error> {
    let Some(text) = text else { return Ok(None) };
    let (shard, from) = Shard::resolve(text, &|k| std::env::var(k).ok())?;
    if let Some(from) = from {
        out.info(&format!("benchspec {command}: {from}"));
    }
    Ok(Some(shard))
}

/// Run `benchspec run`.
pub fn run(args: &RunArgs, out: &Out) -> Result<i32, Error> {
    let shard = shard_of(args.shard.as_deref(), "run", out)?;
    let loaded = spec::load(&args.spec, Stage::Run)?;
    out.diagnostics(&loaded.warnings, super::DiagFormat::Auto);
    if let Some(glob) = &args.only {
        run::check_only(&super::plan_of(&loaded.spec), glob)?;
    }
    // The report templates are checked before anything is measured.
    let templates = super::report::spec_templates(
        std::path::Path::new(&loaded.path),
        &loaded.spec.report.templates,
    );
    for t in &templates {
        crate::report::templates::check_file(t)?;
    }
    let opts = RunOptions {
        out: args.out.clone(),
        base_url: args.base_url.clone(),
        only: args.only.clone(),
        shard,
        save_requests: args.save_requests,
        resume: args.resume,
        client_threads: args.client_threads,
    };
    let bar = (out.is_terminal() && !out.quiet()).then(progress_bar);
    let on = |ev: Event| match &bar {
        Some(bar) => draw(bar, &ev),
        None => {
            if !matches!(ev, Event::Tick { .. }) {
                out.info(&line(&ev));
            }
        }
    };
    let interrupt = run::Interrupt::new();
    listen_for_ctrl_c(&interrupt);
    let result = run::run(&loaded, &opts, &interrupt, &on);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // What was measured before the run stopped is reported too.
            let dir = e.run_dir().map(PathBuf::from).or_else(|| args.out.clone());
            if let Some(dir) = dir.filter(|d| crate::rundir::RunDir::open(d).is_ok()) {
                render_reports(&dir, &loaded, out);
            }
            return Err(e.into());
        }
    };
    render_reports(&summary.out, &loaded, out);
    out.info(&format!(
        "done: {} valid, {} invalid, {} failed, {} skipped; results in {}",
        summary.valid,
        summary.invalid,
        summary.failed,
        summary.skipped,
        summary.out.join(crate::rundir::RESULTS).display()
    ));
    Ok(summary.exit_code())
}

/// The progress bar of a run on a terminal.
fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} [{bar:24}] {pos}/{len} cells  {msg}  elapsed {elapsed}, ETA {eta}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

/// Ctrl-C asks the run to stop: the cell in flight is cancelled, finished cells stay on disk,
/// the engine is stopped. A second Ctrl-C leaves at once, after killing a launched engine's
/// process group, which the terminal's signal does not reach. Records on disk are whole lines
/// (each appended in one write), so leaving then corrupts nothing.
fn listen_for_ctrl_c(interrupt: &run::Interrupt) {
    let interrupt = interrupt.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(rt) = rt else {
        return;
    };
    std::thread::spawn(move || {
        rt.block_on(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.request();
                if tokio::signal::ctrl_c().await.is_ok() {
                    if let Some(pgid) = interrupt.engine_group() {
                        let pid = nix::unistd::Pid::from_raw(pgid);
                        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
                    }
                    std::process::exit(130);
                }
            }
        });
    });
}

/// Render the spec's report formats and templates into the run directory. A report that
/// cannot be rendered is said, and the measured results stay as they are.
fn render_reports(dir: &std::path::Path, loaded: &spec::Loaded, out: &Out) {
    let templates = super::report::spec_templates(
        std::path::Path::new(&loaded.path),
        &loaded.spec.report.templates,
    );
    let rendered = crate::report::load(dir)
        .and_then(|run| crate::report::render(&run, &loaded.spec.report.formats, &templates, dir));
    match rendered {
        Ok(files) if !files.is_empty() => {
            let names: Vec<String> = files
                .iter()
                .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            out.info(&format!(
                "reports: {} in {}",
                names.join(", "),
                dir.display()
            ));
        }
        Ok(_) => {}
        Err(e) => {
            out.error(&Error::Report(e), super::DiagFormat::Auto);
            out.info(&format!(
                "the results are kept in {}; once fixed, render the reports with `benchspec report {}`",
                dir.display(),
                dir.display()
            ));
        }
    }
}

/// The progress bar's view of an event: finished cells are printed above the bar.
fn draw(bar: &indicatif::ProgressBar, ev: &Event) {
    match ev {
        Event::Started { cells, .. } => {
            bar.set_length(*cells as u64);
            bar.println(line(ev));
        }
        Event::Cell { id, .. } => bar.set_message(id.clone()),
        Event::Tick { id, tick } => {
            let rate = tick
                .tok_s
                .map(|t| format!(" {t:.1} tok/s"))
                .unwrap_or_default();
            let window = if tick.stage == crate::run::Stage::Window {
                format!(" {:.0}s", tick.window_s)
            } else {
                String::new()
            };
            bar.set_message(format!("{id} {}{window}{rate}", tick.stage));
        }
        Event::Done { .. } => {
            bar.println(line(ev));
            bar.inc(1);
        }
        Event::Note(_) => bar.println(line(ev)),
    }
}

fn line(ev: &Event) -> String {
    match ev {
        Event::Started {
            out,
            base_url,
            cells,
        } => format!(
            "run: {cells} cells against {base_url}; writing {}",
            out.display()
        ),
        Event::Note(n) => format!("note: {n}"),
        Event::Tick { id, tick } => format!("{id} {}", tick.stage),
        Event::Cell { index, total, id } => format!("[{index:>3}/{total}] {id} ..."),
        Event::Done {
            index,
            total,
            record: r,
        } => {
            let status = match r.status {
                Status::Valid => "valid",
                Status::Invalid => "INVALID",
                Status::Failed => "FAILED",
                Status::Skipped => "skipped",
            };
            let mut s = format!("[{index:>3}/{total}] {} {status}", r.cell);
            if let Some(p) = r.prefill_tok_s {
                s.push_str(&format!("  prefill {p:.0} tok/s"));
            }
            if let Some(t) = r.total_tok_s {
                s.push_str(&format!(
                    "  {t:.1} tok/s  {:.1}/req",
                    r.per_request_tok_s.unwrap_or_default()
                ));
            }
            if let Some(t) = r.ttft_ms {
                s.push_str(&format!("  TTFT p50 {:.0} ms", t.p50));
            }
            if let Some(t) = r.tbt_ms {
                s.push_str(&format!("  TBT p50 {:.1} ms", t.p50));
            }
            if r.errors > 0 {
                s.push_str(&format!("  {} errors", r.errors));
            }
            if !r.reasons.is_empty() {
                s.push_str(&format!("  ({})", r.reasons.join("; ")));
            }
            s
        }
    }
}
