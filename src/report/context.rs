//! The report's template context (`schemas/report-context-v1.schema.json`): what a run
//! directory says, arranged the way the seed page reads — labelled facts, the prefill row,
//! the decode matrix, every cell — with each cell's full record. The built-in templates use
//! nothing else, so a user template can show anything they show. `results.json` is this
//! context as JSON.

pub use super::facts::Item;
use super::facts::{engine, engine_line, hardware, settings};
pub use super::run_info::{Counts, RunInfo};

pub use super::capacity::CapacityView;
use super::capacity::capacity;
use super::cells::cells;
pub use super::frontier::FrontierView;
pub use super::matrix::DecodeMatrix;
use super::matrix::{matrix, matrix_line};
use super::observe::ObservedView;
pub use super::slo_terms::SloTerm;
use super::slo_terms::{load_cells, slo_terms};
pub use super::variants::{SideBySide, VariantView};
pub use super::view::{CellStatus, CellView};
use crate::plan::Phase;
use crate::rundir::Run;
use crate::spec::PromptCache;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The version tag of the context.
pub const CONTEXT_SCHEMA: &str = "benchspec.report-context.v1";

/// Everything a report template sees.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "benchspec report context v1")]
pub struct Context {
    /// Always `benchspec.report-context.v1`.
    pub schema: String,
    /// `report.title` of the spec.
    pub title: String,
    /// The spec's `name`.
    pub subtitle: String,
    /// The spec's `description`.
    pub description: Option<String>,
    /// The line under the subtitle: `vllm · 0.27.2 · BF16`.
    pub engine_line: String,
    /// What the matrix holds: `5 contexts (8K–123K) × 8 concurrency levels (1–128) · prefill at 8K, 16K`.
    pub matrix_line: String,
    /// The run itself.
    pub run: RunInfo,
    /// Hardware facts, in the seed page's order.
    pub hardware: Vec<Item>,
    /// Engine facts.
    pub engine: Vec<Item>,
    /// How the run measured.
    pub settings: Vec<Item>,
    /// The launch command with secrets as `<redacted>`; `null` when benchspec attached.
    pub launch_command: Option<String>,
    /// `warm` or `cold`.
    pub prompt_cache: String,
    /// The note on what TTFT includes.
    pub ttft_note: String,
    /// Prefill cells in context order (none in a run of engine variants: see `variants`).
    pub prefill: Vec<CellView>,
    /// The decode matrix: context rows × concurrency columns (empty in a run of engine
    /// variants: see `variants`).
    pub decode: DecodeMatrix,
    /// The engine variants, each with its prefill cells and decode matrix; empty without.
    pub variants: Vec<VariantView>,
    /// The variants' total tok/s side by side, one table per context, the best marked.
    pub side_by_side: Vec<SideBySide>,
    /// The spec's latency objectives.
    pub slo: Vec<SloTerm>,
    /// Open-loop load cells, by context and rate.
    pub load: Vec<CellView>,
    /// What each capacity search found, one line per context.
    pub capacity: Vec<CapacityView>,
    /// Per context, the Pareto frontier of tok/s per GPU against per-user tok/s over every
    /// valid decode and load cell of every variant, and of $/Mtok where the spec has a cost.
    pub frontier: Vec<FrontierView>,
    /// Session cells (multi-turn conversations), by context and load; each record's
    /// `by_turn` holds its turns.
    pub sessions: Vec<CellView>,
    /// Replay cells (a trace sent at its own times); each record's `trace` holds the offered
    /// and achieved requests second by second.
    pub replay: Vec<CellView>,
    /// What the engine's `/metrics` and the GPUs showed.
    pub observed: ObservedView,
    /// Every cell: prefill cells, then decode cells, each in run order (records of cells the
    /// plan does not list come last in their phase).
    pub cells: Vec<CellView>,
    /// Cells that are invalid or failed, with why.
    pub problems: Vec<CellView>,
    /// The spec copy of the run directory, as JSON.
    pub spec: Value,
}

impl Context {
    /// Arrange `run` for templates.
    pub fn build(run: &Run) -> Context {
        let spec = &run.spec;
        let m = &run.manifest;
        let mut cells = cells(run);
        let hw = &spec.hardware;
        let frontier = super::frontier::frontiers(&cells, hw.gpu_count, hw.cost_per_hour);
        super::frontier::mark(&mut cells, &frontier);
        let reported = m.engine.reported_version.clone();
        let run_info = run_info(run, Counts::of(&cells));
        let (prefill, decode, variants, mut matrix_line) = arranged(&cells, m);
        let load = load_cells(&cells);
        let capacity = capacity(&run.records, &cells, &spec.slo);
        for part in super::capacity::open_line(&load, &capacity) {
            if !matrix_line.is_empty() {
                matrix_line.push_str(" · ");
            }
            matrix_line.push_str(&part);
        }
        let problems = cells
            .iter()
            .filter(|c| matches!(c.status, CellStatus::Invalid | CellStatus::Failed))
            .cloned()
            .collect();
        Context {
            schema: CONTEXT_SCHEMA.into(),
            title: spec.report.title.clone(),
            subtitle: spec.name.clone(),
            description: spec.description.clone(),
            engine_line: engine_line(spec),
            matrix_line,
            hardware: hardware(spec),
            engine: engine(spec, reported),
            settings: [
                settings(spec, &run_info),
                super::facts::trace(&of_phase(&cells, Phase::Replay)),
            ]
            .concat(),
            launch_command: m.launch_command.clone(),
            prompt_cache: cache_name(spec.workload.prompt_cache).into(),
            ttft_note: ttft_note(spec.workload.prompt_cache).into(),
            prefill,
            decode,
            side_by_side: super::variants::side_by_side(&variants),
            variants,
            slo: slo_terms(&spec.slo),
            load,
            capacity,
            frontier,
            sessions: of_phase(&cells, Phase::Sessions),
            replay: of_phase(&cells, Phase::Replay),
            observed: super::observe::observed(&cells),
            cells,
            problems,
            run: run_info,
            spec: serde_json::to_value(spec).unwrap_or(Value::Null),
        }
    }
}

/// Where, when and by what `run` was measured, with its cell `counts`.
fn run_info(run: &Run, counts: Counts) -> RunInfo {
    let m = &run.manifest;
    let some = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    RunInfo {
        dir: run.path.display().to_string(),
        started_at: some(&m.started_at),
        ended_at: m.ended_at.clone(),
        finished: counts.missing == 0,
        host: some(&m.host),
        spec_sha256: some(&m.spec_sha256),
        tool_version: some(&m.tool_version),
        engine_reported_version: m.engine.reported_version.clone(),
        counts,
        predicted: m.predicted_by.as_ref().map(predicted),
        imported: crate::interop::measured_by(m),
    }
}

/// The prefill cells and decode matrix of a run without variants, the variants of one with
/// them, and the line that says what the matrix holds.
fn arranged(
    cells: &[CellView],
    m: &crate::rundir::Manifest,
) -> (Vec<CellView>, DecodeMatrix, Vec<VariantView>, String) {
    let base: Vec<CellView> = cells
        .iter()
        .filter(|c| c.variant.is_none())
        .cloned()
        .collect();
    let prefill: Vec<CellView> = base
        .iter()
        .filter(|c| c.phase == Phase::Prefill)
        .cloned()
        .collect();
    let decode = matrix(&base);
    let variants = super::variants::variants(cells, m);
    let line = match variants.first() {
        Some(v) => format!(
            "{} engine variants · {}",
            variants.len(),
            matrix_line(&v.prefill, &v.decode)
        ),
        None => matrix_line(&prefill, &decode),
    };
    (prefill, decode, variants, line)
}

/// `warm` or `cold`.
fn cache_name(c: PromptCache) -> &'static str {
    match c {
        PromptCache::Warm => "warm",
        PromptCache::Cold => "cold",
    }
}

/// What TTFT includes under the prompt cache `c`.
fn ttft_note(c: PromptCache) -> &'static str {
    match c {
        PromptCache::Warm => {
            "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill."
        }
        PromptCache::Cold => {
            "TTFT is measured with prompts the server has never seen, so it includes prefill."
        }
    }
}

/// The JSON Schema of the context, as committed in `schemas/report-context-v1.schema.json`.
pub fn context_schema_text() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<Context>().to_value();
    if let Value::Object(map) = &mut schema {
        map.insert(
            "description".into(),
            "What a report template sees (docs/reports.md); also the content of results.json."
                .into(),
        );
    }
    // `{:#}` is `to_string_pretty`, and cannot fail.
    format!("{schema:#}\n")
}

/// The cells of `phase`, in run order.
fn of_phase(cells: &[CellView], phase: Phase) -> Vec<CellView> {
    cells.iter().filter(|c| c.phase == phase).cloned().collect()
}

/// The sentence a predicted run's reports carry: which twin ran as the engine.
fn predicted(p: &crate::rundir::PredictedBy) -> String {
    let interval = p.interval_pct.map_or(
        "no interval: no fitted cell could be left out to earn one".to_string(),
        |h| format!("90% intervals ±{h:.1}% inside its fitted range"),
    );
    format!(
        "the twin `{}` (fitted on {} measured cell(s) of {}; {interval}) ran as the engine, on a paused clock: nothing here was measured",
        p.twin, p.fitted_on, p.engine
    )
}
