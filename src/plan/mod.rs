//! The plan stage (docs/cli.md, plan): a pure expansion of a checked [`Spec`] into cells in run
//! order — every cell the matrix names, runnable or skipped with its reason — with prefill
//! clamping and an estimate of the wall time. The spec is what a person wrote; the plan is
//! what will run (the `LowArgs`/`HiArgs` split of ripgrep).

pub mod arrivals;
pub mod config;
pub mod sim;
pub use config::{
    ConfigError, DatasetFile, EngineConfig, LaunchConfig, RunConfig, TokenizerFile, Watch, redact,
};
mod cell;
mod estimate;
mod load_cells;
pub mod replay;
pub mod sessions;
mod shard;
pub mod split;
mod table;
pub mod vocab;
mod workload;

pub use cell::{Cell, CellFileError, Decode, Measure, Mode, Phase, Prefill, decode_id, prefill_id};
pub use estimate::Rates;
pub use load_cells::{Bound, OpenLoad, Search, capacity_id, load_id};
pub use shard::Shard;
pub use table::render_table;
pub use workload::{Workload, kv_overflow};

use crate::spec::telemetry::KvOverflow;
use crate::spec::{DecodeMode, PrefillMode, SearchAxis, Spec, Tokens};
use serde::{Deserialize, Serialize};

/// The version tag of `plan.json`.
pub const PLAN_SCHEMA: &str = "benchspec.plan.v1";

/// Why a glob (`--only`) cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GlobError {
    /// Its `{…}` expand to too many patterns.
    #[error("its `{{…}}` make more than {0} patterns")]
    TooMany(usize),
    /// A `}` with no `{` before it.
    #[error("a `}}` closes no `{{`")]
    StrayBrace,
    /// A `{` with no `}` after it.
    #[error("a `{{` is not closed with `}}`")]
    UnclosedBrace,
    /// A `[` with no `]` after it.
    #[error("a `[` is not closed with `]`")]
    UnclosedClass,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--shard` is not `K/N` with 1 ≤ K ≤ N.
    #[error("`--shard {0}` is not K/N with 1 <= K <= N (for example `--shard 2/4`) or `auto`")]
    BadShard(String),
    /// `--shard auto` found no scheduler's variables, or unusable ones.
    #[error("`--shard auto`: {0}")]
    NoScheduler(String),
    /// `--only` is not a glob that can be read.
    #[error(
        "`--only {0}`: {1}; a glob has `*`, `?`, `[…]` and `{{a,b}}` (for example `decode/8K/*`)"
    )]
    BadGlob(String, GlobError),
    /// `--only` matches no cell that would run.
    #[error("`--only {glob}` matches no cell of the plan; its cells are {cells}")]
    NoMatch {
        /// The glob.
        glob: String,
        /// The runnable cells' ids, listed.
        cells: String,
    },
    /// `--base-url` names a server, but the engine is the simulator run in this process.
    #[error(
        "`--base-url {url}`: {engine} is `engine.kind: sim`, the embedded simulator this process \
         runs itself, so nothing would be sent to {url}. To measure the server at {url}, set \
         `engine.kind` to what it is (vllm, sglang, llama-cpp, trtllm, openai; a `benchspec sim` \
         server speaks vLLM's API: `vllm`), or drop `--base-url` to measure the simulator"
    )]
    AttachToSim {
        /// The URL given.
        url: String,
        /// "the spec's engine", or a variant by name.
        engine: String,
    },
}

/// The expanded plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: String,
    /// The spec's name.
    pub name: String,
    /// The max_model_len the plan assumed; `None` when it is read from the server at run time.
    pub max_model_len: Option<u64>,
    /// `max_tokens` of decode requests.
    pub max_output_tokens: u64,
    /// The shard this plan is, when sharded.
    #[serde(default)]
    pub shard: Option<Shard>,
    /// `--split-load`: the load cells are in every shard, each with its part of the load.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split: bool,
    /// Cells in run order, skipped ones in their place.
    pub cells: Vec<Cell>,
    /// Rates behind the estimates.
    pub rates: Rates,
    /// Estimated wall time of the runnable cells, in seconds.
    pub estimate_s: f64,
    /// What every measured cell needs of the workload (absent from plans of older runs).
    #[serde(default)]
    pub workload: Workload,
    /// The engine variants, in order, each with what it changes (none without variants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantChanges>,
}

/// An engine variant as the plan shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantChanges {
    /// Its name (the prefix of its cells' ids).
    pub name: String,
    /// What it changes of the spec (`--max-num-seqs 128`, `sim.time_scale 1.5`); empty for
    /// the spec as written.
    pub changes: Vec<String>,
}

/// How fast an engine described by a spec is assumed to be, for the estimates: the caller
/// knows (the simulator's profiles do), the plan does not.
pub type RatesOf<'a> = &'a dyn Fn(&Spec) -> Rates;

/// Expand `spec` into its plan, each engine (variant) estimated at `rates` of its spec.
pub fn expand(spec: &Spec, rates: RatesOf) -> Plan {
    expand_for(spec, rates, Limits::default())
}

/// What the server reports about its limits; the spec's own values come first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// The served model's max_model_len.
    pub max_model_len: Option<u64>,
    /// The KV cache's capacity in tokens.
    pub kv_tokens: Option<u64>,
}

/// Expand `spec` for a server that reports `server`'s limits, which count where the spec
/// states none. A spec with engine variants gets every cell once per variant, variant by
/// variant, ids prefixed `<variant>/`.
pub fn expand_for(spec: &Spec, rates: RatesOf, server: Limits) -> Plan {
    expand_with(spec, rates, &|_| server)
}

/// What an engine described by a spec is known to hold before it is asked (the simulator's
/// profiles say), for `plan`.
pub type LimitsOf<'a> = &'a dyn Fn(&Spec) -> Limits;

/// Expand `spec`, each engine (variant) with the limits `limits` gives for its spec.
pub fn expand_with(spec: &Spec, rates: RatesOf, limits: LimitsOf) -> Plan {
    let variants = spec.variants();
    let Some(first) = variants.first() else {
        return expand_one(spec, &rates(spec), limits(spec));
    };
    let mut plan = expand_one(&first.spec, &rates(&first.spec), limits(&first.spec));
    plan.cells.clear();
    for v in &variants {
        let cells = expand_one(&v.spec, &rates(&v.spec), limits(&v.spec));
        plan.cells.extend(variant_cells(cells, &v.name));
    }
    plan.variants = variants
        .iter()
        .map(|v| VariantChanges {
            name: v.name.clone(),
            changes: v.changes.clone(),
        })
        .collect();
    plan.estimate_s = plan.cells.iter().map(|c| c.estimate_s).sum();
    plan
}

/// The cells of `plan` as the variant `name`'s: ids prefixed, the variant named.
pub fn variant_cells(plan: Plan, name: &str) -> impl Iterator<Item = Cell> {
    plan.cells.into_iter().map(move |mut c| {
        c.id = format!("{name}/{}", c.id);
        c.variant = Some(name.to_string());
        c
    })
}

fn expand_one(spec: &Spec, rates: &Rates, server: Limits) -> Plan {
    let max_len = spec
        .model
        .max_model_len
        .map(|t| t.0)
        .or(server.max_model_len);
    let kv_tokens = spec.model.kv_tokens.map(|t| t.0).or(server.kv_tokens);
    let out = spec.workload.max_output_tokens.0;
    let mut cells = Vec::new();
    for ctx in &spec.matrix.contexts {
        let decode: Vec<Cell> = spec
            .matrix
            .concurrency
            .iter()
            .map(|&c| decode_cell(spec, ctx.0, c, max_len, out))
            .collect();
        let has_decode = decode.iter().any(Cell::runs);
        cells.push(prefill_cell(spec, ctx.0, max_len, has_decode));
        cells.extend(decode);
        let too_long = max_len
            .filter(|&max| ctx.0 + out > max)
            .map(|max| format!("{} + {out} output tokens > max_model_len {max}", ctx.0));
        cells.extend(load_cells::load_cells(spec, ctx.0, too_long.clone()));
        cells.extend(load_cells::capacity_cell(spec, ctx.0, too_long));
        cells.extend(sessions::session_cells(spec, ctx.0, max_len));
    }
    cells.extend(replay::replay_cell(spec));
    let workload = Workload {
        max_model_len: max_len,
        kv_tokens,
        ..Workload::of(spec)
    };
    if spec.workload.kv_overflow == KvOverflow::Skip {
        for c in cells.iter_mut().filter(|c| c.runs()) {
            c.skip = kv_overflow(c, &workload);
        }
    }
    estimate::apply(&mut cells, rates, &workload);
    let estimate_s = cells.iter().map(|c| c.estimate_s).sum();
    Plan {
        schema: PLAN_SCHEMA.to_string(),
        name: spec.name.clone(),
        max_model_len: max_len,
        max_output_tokens: out,
        shard: None,
        split: false,
        cells,
        rates: rates.clone(),
        estimate_s,
        workload,
        variants: Vec::new(),
    }
}

fn prefill_cell(spec: &Spec, ctx: u64, max_len: Option<u64>, has_decode: bool) -> Cell {
    let p = &spec.phases.prefill;
    let (prompt_tokens, clamped) = match max_len {
        Some(max) if ctx >= max => (max.saturating_sub(1), true),
        _ => (ctx, false),
    };
    let listed = p.contexts.as_ref().is_none_or(|l| l.contains(&Tokens(ctx)));
    let skip = if !p.enabled {
        Some("`phases.prefill.enabled` is false".to_string())
    } else if !listed {
        Some(format!(
            "{} is not in `phases.prefill.contexts`",
            Tokens(ctx)
        ))
    } else {
        None
    };
    let how = if p.mode == PrefillMode::DecodeWarmup && has_decode {
        Prefill::DecodeWarmup
    } else {
        Prefill::Standalone {
            repeats: p.repeats.unwrap_or(spec.repeats).max(1),
        }
    };
    Cell {
        id: prefill_id(ctx),
        variant: None,
        context: ctx,
        concurrency: 1,
        prompt_tokens,
        clamped,
        measure: Measure::Prefill(how),
        skip,
        estimate_s: 0.0,
        repeats: 1,
    }
}

fn decode_cell(spec: &Spec, ctx: u64, conc: u32, max_len: Option<u64>, out: u64) -> Cell {
    let d = &spec.phases.decode;
    let too_long = max_len.filter(|&max| ctx + out > max);
    let skip = if let Some(max) = too_long {
        Some(format!("{ctx} + {out} output tokens > max_model_len {max}"))
    } else if !d.enabled {
        Some("`phases.decode.enabled` is false".to_string())
    } else if !d.contexts.as_ref().is_none_or(|l| l.contains(&Tokens(ctx))) {
        Some(format!(
            "{} is not in `phases.decode.contexts`",
            Tokens(ctx)
        ))
    } else if !d.concurrency.as_ref().is_none_or(|l| l.contains(&conc)) {
        Some(format!(
            "concurrency {conc} is not in `phases.decode.concurrency`"
        ))
    } else {
        None
    };
    let load = match d.mode {
        DecodeMode::FixedDuration => Decode::FixedDuration(d.duration.0),
        DecodeMode::RequestCount => Decode::RequestCount(d.requests),
    };
    Cell {
        id: decode_id(ctx, conc),
        variant: None,
        context: ctx,
        concurrency: conc,
        prompt_tokens: ctx,
        clamped: false,
        measure: Measure::Decode(load),
        skip,
        estimate_s: 0.0,
        repeats: d.repeats.unwrap_or(spec.repeats).max(1),
    }
}

impl Plan {
    /// The runnable cells.
    pub fn runnable(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| c.runs())
    }

    /// The skipped cells.
    pub fn skipped(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| !c.runs())
    }

    /// The most streams any runnable cell keeps in flight at once.
    pub fn max_concurrency(&self) -> u32 {
        self.runnable()
            .map(|c| match c.measure {
                Measure::Load(l) => l.max_concurrency.unwrap_or(64),
                Measure::Capacity(s) if s.axis == SearchAxis::Concurrency => s.max as u32,
                Measure::Capacity(_) => 64,
                _ => c.concurrency,
            })
            .max()
            .unwrap_or(1)
    }
}
