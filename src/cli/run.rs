//! `benchspec run`: check the spec for running, execute the plan, and print progress as the
//! core reports it: one line per cell (the same on a terminal and off it for now).

use super::exit::{Exit, Exits};
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
    /// With `--shard`: every shard runs every load cell at 1/N of its rate, first, with
    /// arrivals of its own (N client machines offering one load; `--start-at` starts them
    /// together); the other cells are split as usual.
    /// Requests are saved, so that `benchspec merge` computes each load cell's percentiles
    /// from all of them.
    #[arg(long, requires = "shard")]
    pub split_load: bool,
    /// Wait until TIME, once the engine answers, before the first cell (a first load cell:
    /// before its first request), so that shards started apart measure together
    /// (`--split-load`): an RFC 3339 instant
    /// (`2026-12-07T10:00:00Z`, with `Z` or an offset) or `+DURATION` from now (`+30s`).
    /// A time more than 5 s past is refused; Ctrl-C ends the wait.
    #[arg(long, value_name = "TIME", value_parser = run::parse_start_at)]
    pub start_at: Option<run::StartAt>,
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
    /// Add the run to the history database when it ends: `--history` alone uses
    /// `BENCHSPEC_HISTORY`, else `./benchspec-history.sqlite`; `--history=DB` names an SQLite
    /// file or a `postgres://` URL (`=` before a value). The database is opened (created when
    /// missing) and its schema checked before the first cell: one that cannot be is refused
    /// up front (exit 4), nothing run.
    #[arg(long, value_name = "DB", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub history: Option<String>,
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

/// The spec of `benchspec run`, checked for running: `--only` matches a cell, the report
/// templates compile. A resumed run reads the files its spec names from the copies the run
/// directory kept, so that it goes on after the run directory moved or the sources are gone.
fn checked(args: &RunArgs, out: &Out) -> Result<spec::Loaded, Error> {
    let files = match (&args.out, args.resume) {
        (Some(dir), true) => spec::files::Files::Kept(dir.clone()),
        _ => spec::files::Files::BesideSpec,
    };
    let loaded = spec::load_in(&args.spec, Stage::Run, files)?;
    out.diagnostics(&loaded.warnings, super::DiagFormat::Auto);
    if let Some(glob) = &args.only {
        run::check_only(&super::plan_of(&loaded.spec), glob)?;
    }
    for t in &templates_of(&loaded) {
        crate::report::templates::check_file(t)?;
    }
    Ok(loaded)
}

/// Run `benchspec run`.
pub fn run(args: &RunArgs, out: &Out) -> Result<i32, Error> {
    let shard = shard_of(args.shard.as_deref(), "run", out)?;
    let loaded = checked(args, out)?;
    let history = args
        .history
        .as_deref()
        .map(|db| Some(db).filter(|d| !d.is_empty()));
    if let Some(db) = history {
        super::history::check_now(db)?;
    }
    let opts = options(args, shard);
    let bar = (out.is_terminal() && !out.quiet()).then(progress_bar);
    // The run directory once this run has written to it: a run refused before (a changed
    // spec under `--resume`, a non-empty `--out`) leaves the folder untouched, reports too.
    let started = std::sync::OnceLock::new();
    let probes = super::probes::Probes::new(&loaded.spec.slo);
    let on = |ev: Event| {
        if let Event::Started { out, .. } = &ev {
            let _ = started.set(out.clone());
        }
        let text = probes.line(&ev);
        match &bar {
            Some(bar) => draw(bar, &ev, text),
            None if matches!(ev, Event::Tick { .. }) => {}
            None => out.info(&text.unwrap_or_else(|| line(&ev))),
        }
    };
    let interrupt = run::Interrupt::new();
    listen_for_signals(&interrupt);
    let config = crate::plan::RunConfig::new(&loaded).attach_to(args.base_url.clone())?;
    let result = run::run(&config, &opts, &interrupt, &on);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // What was measured before the run stopped is reported too.
            let dir = e
                .run_dir()
                .map(PathBuf::from)
                .or_else(|| started.get().cloned());
            if let Some(dir) = dir.filter(|d| crate::rundir::RunDir::open(d).is_ok()) {
                render_reports(&dir, &loaded, out);
            }
            return Err(e.into());
        }
    };
    render_reports(&summary.out, &loaded, out);
    done(&summary, &probes, out);
    if let Some(db) = history {
        // The run is on disk whatever the history says: a failed add is reported, and
        // `history add` can add the run later.
        if let Err(e) = super::history::add_now(std::slice::from_ref(&summary.out), db, out) {
            out.error(&e, super::DiagFormat::Auto);
            return Ok(summary.exit().max(e.exit()).code());
        }
    }
    Ok(summary.exit().code())
}

/// The core's options for `benchspec run` from its flags (`--split-load` saves requests).
fn options(args: &RunArgs, shard: Option<Shard>) -> RunOptions {
    RunOptions {
        out: args.out.clone(),
        only: args.only.clone(),
        shard,
        split_load: args.split_load,
        save_requests: args.save_requests || args.split_load,
        resume: args.resume,
        client_threads: args.client_threads,
        start_at: args.start_at.clone(),
    }
}

/// The closing lines of a finished run: its counts, each capacity found, and what limits
/// the cells judged (`limit`).
fn done(summary: &run::RunSummary, probes: &super::probes::Probes, out: &Out) {
    out.info(&format!(
        "done: {} valid, {} invalid, {} failed, {} skipped; results in {}",
        summary.valid,
        summary.invalid,
        summary.failed,
        summary.skipped,
        summary.out.join(crate::rundir::RESULTS).display()
    ));
    if summary.valid + summary.invalid + summary.failed == 0 {
        out.info(
            "nothing was measured: every cell was skipped (each record's `reasons` says why; `benchspec plan SPEC` shows it before a run)",
        );
    }
    // What limits the cells judged, before the capacities (the last lines a user reads);
    // the evidence is in the record and the reports.
    let records = crate::rundir::read_records(&summary.out.join(crate::rundir::RESULTS));
    let mut unjudged = 0;
    for r in records.unwrap_or_default() {
        match &r.limit {
            Some(l) if l.kind.is_some() => {
                out.info(&format!(
                    "limit {}: {} — {}",
                    r.cell,
                    l.kind_str(),
                    l.suggestion
                ));
            }
            Some(_) => unjudged += 1,
            None => {}
        }
    }
    if unjudged > 0 {
        out.info(&format!(
            "limit: {unjudged} cell(s) not judged (what is missing: `limit` in results.jsonl, \"What limits the cells\" in report.md)"
        ));
    }
    for found in probes.found() {
        out.info(&found);
    }
}

/// The spec's report templates, where its files are.
fn templates_of(loaded: &spec::Loaded) -> Vec<PathBuf> {
    spec::files::templates(&loaded.files, &loaded.path, &loaded.spec.report.templates)
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

/// Ctrl-C, SIGTERM (Slurm's time limit and `scancel`, Kubernetes deleting the pod, a CI
/// job cancelled, `timeout`) and SIGHUP (the terminal closed) ask the run to stop: the cell
/// in flight is cancelled, finished cells stay on disk, the engine's process group is
/// stopped, the reports of what was measured are rendered and the `--resume` command is
/// printed (exit 1). A second signal leaves at once (exit 130), after killing a launched
/// engine's process group, which no signal sent to benchspec reaches. Records on disk are
/// whole lines (each appended in one write), so leaving then corrupts nothing.
pub(super) fn listen_for_signals(interrupt: &run::Interrupt) {
    let interrupt = interrupt.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(rt) = rt else {
        return;
    };
    // Registered here, before the run starts, so that a signal that comes early is not lost.
    let signals = rt.block_on(async { stop_signals() });
    let Ok(mut signals) = signals else {
        return;
    };
    std::thread::spawn(move || {
        rt.block_on(async move {
            signals.next().await;
            interrupt.request();
            signals.next().await;
            for pgid in interrupt.engine_groups() {
                let pid = nix::unistd::Pid::from_raw(pgid);
                let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            }
            std::process::exit(Exit::Killed.code());
        });
    });
}

/// SIGINT, SIGTERM and SIGHUP as one stream.
struct StopSignals(Vec<tokio::signal::unix::Signal>);

fn stop_signals() -> std::io::Result<StopSignals> {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ];
    kinds
        .into_iter()
        .map(signal)
        .collect::<std::io::Result<Vec<_>>>()
        .map(StopSignals)
}

impl StopSignals {
    /// The next of the signals to arrive.
    async fn next(&mut self) {
        let waits = self.0.iter_mut().map(|s| Box::pin(s.recv()));
        let _ = futures_util::future::select_all(waits).await;
    }
}

/// Render the spec's report formats and templates into the run directory. A report that
/// cannot be rendered is said, and the measured results stay as they are.
fn render_reports(dir: &std::path::Path, loaded: &spec::Loaded, out: &Out) {
    let templates = templates_of(loaded);
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

/// The progress bar's view of an event: finished cells are printed above the bar (`text`
/// instead of the usual line, for a capacity search's probes, which do not move the bar).
fn draw(bar: &indicatif::ProgressBar, ev: &Event, text: Option<String>) {
    let probe = text.is_some()
        && !matches!(ev, Event::Done { record, .. } if record.phase == crate::plan::Phase::Capacity);
    let text = text.unwrap_or_else(|| line(ev));
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
            let window = if tick.step == crate::run::Step::Window {
                format!(" {:.0}s", tick.window_s)
            } else {
                String::new()
            };
            bar.set_message(format!("{id} {}{window}{rate}", tick.step));
        }
        Event::Done { .. } => {
            bar.println(text);
            if !probe {
                bar.inc(1);
            }
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
        Event::Tick { id, tick } => format!("{id} {}", tick.step),
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
            if let Some(why) = &r.open.saturated {
                s.push_str(&format!("  saturated: {why}"));
            }
            s
        }
    }
}
