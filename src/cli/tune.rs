//! `benchspec tune SPEC --out DIR`: the CLI glue of [`crate::tune`] — flags, the spec's
//! checks (an SLO; a cost for `usd-per-mtok`), measuring with `run`'s machinery, the ranking
//! printed.

use super::output::Out;
use crate::Error;
use crate::tune::objective::TuneObjective;
use crate::tune::search::{Ask, Budget, tune};
use crate::tune::{TuneError, summary};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `benchspec tune SPEC --out DIR [--objective …] [--budget-configs N] [--budget-seconds S]`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The spec: its `engine.variants` or `engine.sweep` are the configurations searched,
    /// its `slo` the objective's limit.
    #[arg(value_name = "SPEC")]
    pub spec: String,
    /// The run directory (new or empty; an earlier tune's to go on with it: its measured
    /// configurations are not measured again).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// What to maximise under the SLO: `goodput` (req/s), `tok-s-per-gpu` (total output tok/s
    /// per `hardware.gpu_count`), or `usd-per-mtok` to minimise (`hardware.cost_per_hour`).
    #[arg(long, value_enum, default_value_t = ObjectiveArg::TokSPerGpu)]
    pub objective: ObjectiveArg,
    /// Measure at most N configurations.
    #[arg(long, value_name = "N")]
    pub budget_configs: Option<usize>,
    /// Start no configuration once this many engine seconds were spent measuring.
    #[arg(long, value_name = "SECONDS")]
    pub budget_seconds: Option<f64>,
}

/// `--objective`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObjectiveArg {
    /// Requests per second meeting the SLO.
    Goodput,
    /// Total output tok/s per GPU of a cell meeting the SLO.
    TokSPerGpu,
    /// $ per million output tokens of a cell meeting the SLO (lowest wins).
    UsdPerMtok,
}

impl ObjectiveArg {
    fn objective(self) -> TuneObjective {
        match self {
            ObjectiveArg::Goodput => TuneObjective::Goodput,
            ObjectiveArg::TokSPerGpu => TuneObjective::TokSPerGpu,
            ObjectiveArg::UsdPerMtok => TuneObjective::UsdPerMtok,
        }
    }
}

/// Run `tune`: exit 0 with a winner, 1 when no measured configuration met the SLO.
pub fn run(args: &TuneArgs, out: &Out) -> Result<i32, Error> {
    let loaded = crate::spec::load(&args.spec, crate::spec::Stage::Run)?;
    out.diagnostics(&loaded.warnings, super::DiagFormat::Auto);
    check(args, &loaded)?;
    let objective = args.objective.objective();
    // One interrupt for the whole search: a signal stops the configuration being measured
    // (its finished cells kept) and the search, which goes on when run again.
    let interrupt = crate::run::Interrupt::new();
    super::run::listen_for_signals(&interrupt);
    let measure = |config: &crate::plan::RunConfig, opts: &crate::run::RunOptions| {
        let t0 = std::time::Instant::now();
        crate::run::run(config, opts, &interrupt, &|_| {})?;
        Ok(t0.elapsed().as_secs_f64())
    };
    let ask = Ask {
        loaded: &loaded,
        out: &args.out,
        objective,
        budget: Budget {
            configs: args.budget_configs,
            engine_s: args.budget_seconds,
        },
    };
    let st = match tune(&ask, &measure, &|line| out.info(line)) {
        Err(TuneError::Run { config, source }) if source.is_interrupt() => {
            return Err(interrupted(args, &config));
        }
        other => other?,
    };
    let file = summary::file(objective, &st);
    out.print(&summary::text(&file));
    out.info(&format!(
        "wrote {}",
        args.out.join(crate::tune::TUNE_FILE).display()
    ));
    Ok(if file.winner.is_some() { 0 } else { 1 })
}

fn usage(text: String) -> Error {
    TuneError::Usage(text).into()
}

/// A search stopped by a signal: what was measured is kept, and how to go on.
fn interrupted(args: &TuneArgs, config: &str) -> Error {
    TuneError::Interrupted(format!(
        "interrupted while measuring {config}; its finished cells and the configurations measured before are kept in {}; go on with `benchspec tune {} --out {}`",
        args.out.display(),
        args.spec,
        args.out.display()
    ))
    .into()
}

/// What tune refuses before measuring: a spec without an SLO or a cost it needs, a budget
/// that is not positive, an `--out` it cannot write to.
fn check(args: &TuneArgs, loaded: &crate::spec::Loaded) -> Result<(), Error> {
    let objective = args.objective.objective();
    let spec = &loaded.spec;
    if spec.slo.is_empty() {
        return Err(usage(format!(
            "{}: tune ranks configurations under the spec's `slo`, and it has none: add one (docs/spec.md, slo)",
            args.spec
        )));
    }
    if objective == TuneObjective::UsdPerMtok
        && spec.hardware.cost_per_hour.is_none_or(|c| c <= 0.0)
    {
        return Err(usage(format!(
            "{}: --objective usd-per-mtok needs `hardware.cost_per_hour` above 0 (at 0 every configuration costs $0 and ties)",
            args.spec
        )));
    }
    if args.budget_seconds.is_some_and(|s| s.is_nan() || s <= 0.0) || args.budget_configs == Some(0)
    {
        return Err(usage(
            "--budget-configs and --budget-seconds take a positive number".into(),
        ));
    }
    // Its own tune.json, or a run directory of this spec (a search interrupted during its
    // first configuration has no tune.json yet; `run` refuses a directory of another spec).
    let resumed = args.out.join(crate::tune::TUNE_FILE).is_file()
        || args.out.join(crate::rundir::MANIFEST).is_file();
    if args.out.exists() && !args.out.is_dir() {
        return Err(usage(format!(
            "--out `{}` is a file: tune writes a run directory; choose another path",
            args.out.display()
        )));
    }
    if !resumed && std::fs::read_dir(&args.out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(usage(format!(
            "`{}` is not empty and holds neither tune.json nor a run of this spec: tune writes a new run directory (or goes on with its own); choose another",
            args.out.display()
        )));
    }
    Ok(())
}
