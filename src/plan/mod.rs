//! The plan stage (contract §3): a pure expansion of a checked [`Spec`] into cells in run
//! order — every cell the matrix names, runnable or skipped with its reason — with prefill
//! clamping and an estimate of the wall time. The spec is what a person wrote; the plan is
//! what will run (the `LowArgs`/`HiArgs` split of ripgrep).

mod estimate;
mod shard;
mod table;

pub use estimate::Rates;
pub use shard::Shard;
pub use table::render_table;

use crate::spec::{DecodeMode, PrefillMode, Spec, Tokens};
use serde::Serialize;

/// The version tag of `plan.json`.
pub const PLAN_SCHEMA: &str = "benchspec.plan.v1";

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--shard` is not `K/N` with 1 ≤ K ≤ N.
    #[error("`--shard {0}` is not K/N with 1 <= K <= N (for example `--shard 2/4`)")]
    BadShard(String),
}

/// The expanded plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: &'static str,
    /// The spec's name.
    pub name: String,
    /// The max_model_len the plan assumed; `None` when it is read from the server at run time.
    pub max_model_len: Option<u64>,
    /// `max_tokens` of decode requests.
    pub max_output_tokens: u64,
    /// The shard this plan is, when sharded.
    pub shard: Option<Shard>,
    /// Cells in run order, skipped ones in their place.
    pub cells: Vec<Cell>,
    /// Rates behind the estimates.
    pub rates: Rates,
    /// Estimated wall time of the runnable cells, in seconds.
    pub estimate_s: f64,
}

/// Which phase a cell belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Prompt processing at concurrency 1.
    Prefill,
    /// Sustained generation.
    Decode,
}

/// How a cell is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Prefill from the first warm-up request of the context's first decode cell.
    DecodeWarmup,
    /// Prefill from `repeats` cold requests with max_tokens 1.
    Standalone,
    /// Decode over a window of fixed length.
    FixedDuration,
    /// Decode until a number of requests have finished.
    RequestCount,
}

/// One cell of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// `prefill/8K` or `decode/8K/c4`.
    pub id: String,
    /// Prefill or decode.
    pub phase: Phase,
    /// The context length the matrix names, in tokens.
    pub context: u64,
    /// Simultaneous requests (1 for prefill).
    pub concurrency: u32,
    /// The exact prompt length sent.
    pub prompt_tokens: u64,
    /// The prompt was shortened to max_model_len − 1.
    pub clamped: bool,
    /// How the cell is measured.
    pub mode: Mode,
    /// The measured window (fixed-duration decode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Measured requests (request-count decode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
    /// Cold requests (standalone prefill).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// Why the cell is not run; `None` for a runnable cell.
    pub skip: Option<String>,
    /// Estimated wall time in seconds (0 for a skipped cell).
    pub estimate_s: f64,
}

impl Cell {
    /// Whether the cell will be run.
    pub fn runs(&self) -> bool {
        self.skip.is_none()
    }
}

/// The id of a prefill cell.
pub fn prefill_id(context: u64) -> String {
    format!("prefill/{}", Tokens(context))
}

/// The id of a decode cell.
pub fn decode_id(context: u64, concurrency: u32) -> String {
    format!("decode/{}/c{concurrency}", Tokens(context))
}

/// Expand `spec` into its plan.
pub fn expand(spec: &Spec, rates: &Rates) -> Plan {
    let max_len = spec.model.max_model_len.map(|t| t.0);
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
    }
    estimate::apply(&mut cells, rates, spec);
    let estimate_s = cells.iter().map(|c| c.estimate_s).sum();
    Plan {
        schema: PLAN_SCHEMA,
        name: spec.name.clone(),
        max_model_len: max_len,
        max_output_tokens: out,
        shard: None,
        cells,
        rates: rates.clone(),
        estimate_s,
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
    let warmup = p.mode == PrefillMode::DecodeWarmup && has_decode;
    Cell {
        id: prefill_id(ctx),
        phase: Phase::Prefill,
        context: ctx,
        concurrency: 1,
        prompt_tokens,
        clamped,
        mode: if warmup {
            Mode::DecodeWarmup
        } else {
            Mode::Standalone
        },
        duration_s: None,
        requests: None,
        repeats: (!warmup).then_some(p.repeats),
        skip,
        estimate_s: 0.0,
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
    let fixed = d.mode == DecodeMode::FixedDuration;
    Cell {
        id: decode_id(ctx, conc),
        phase: Phase::Decode,
        context: ctx,
        concurrency: conc,
        prompt_tokens: ctx,
        clamped: false,
        mode: if fixed {
            Mode::FixedDuration
        } else {
            Mode::RequestCount
        },
        duration_s: fixed.then(|| d.duration.secs()),
        requests: (!fixed).then_some(d.requests),
        repeats: None,
        skip,
        estimate_s: 0.0,
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
}
