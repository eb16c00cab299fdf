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
    let objective = args.objective.objective();
    let spec = &loaded.spec;
    if spec.slo.is_empty() {
        return Err(usage(format!(
            "{}: tune ranks configurations under the spec's `slo`, and it has none: add one (docs/spec.md, slo)",
            args.spec
        )));
    }
    if objective == TuneObjective::UsdPerMtok && spec.hardware.cost_per_hour.is_none() {
        return Err(usage(format!(
            "{}: --objective usd-per-mtok needs `hardware.cost_per_hour`",
            args.spec
        )));
    }
    if args.budget_seconds.is_some_and(|s| s.is_nan() || s <= 0.0) || args.budget_configs == Some(0)
    {
        return Err(usage(
            "--budget-configs and --budget-seconds take a positive number".into(),
        ));
    }
    let resumed = args.out.join(crate::tune::TUNE_FILE).is_file();
    if !resumed && std::fs::read_dir(&args.out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(usage(format!(
            "`{}` is not empty and holds no tune.json: tune writes a new run directory (or goes on with its own); choose another",
            args.out.display()
        )));
    }
    let measure = |config: &crate::plan::RunConfig, opts: &crate::run::RunOptions| {
        let t0 = std::time::Instant::now();
        crate::run::run(config, opts, &crate::run::Interrupt::new(), &|_| {})?;
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
    let st = tune(&ask, &measure, &|line| out.info(line))?;
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
