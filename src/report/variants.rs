//! The engine variants of a run in the report context (docs/reports.md): each variant's own
//! prefill row and decode matrix with how it was launched, and a side-by-side table per
//! context — variants as rows, concurrency levels as columns, the best total tok/s of each
//! column marked.

use super::format::ctx;
use super::matrix::{DecodeMatrix, matrix};
use super::view::CellView;
use crate::plan::Phase;
use crate::rundir::Manifest;
use schemars::JsonSchema;
use serde::Serialize;

/// One engine variant as the report shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VariantView {
    /// The variant's name.
    pub name: String,
    /// Its launch command, secrets `<redacted>`; `null` when benchspec attached or it is
    /// not recorded.
    pub launch_command: Option<String>,
    /// The version its engine reported.
    pub engine_reported_version: Option<String>,
    /// Why it did not start, when it did not.
    pub failed: Option<String>,
    /// Its prefill cells in context order.
    pub prefill: Vec<CellView>,
    /// Its decode matrix.
    pub decode: DecodeMatrix,
}

/// The variants side by side at one context.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SideBySide {
    /// Context tokens.
    pub context: u64,
    /// `8K`.
    pub context_label: String,
    /// The column heads: concurrency levels.
    pub concurrency: Vec<u32>,
    /// One row per variant.
    pub rows: Vec<SideRow>,
}

/// A variant's row of a side-by-side table.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SideRow {
    /// The variant's name.
    pub variant: String,
    /// One per column; `null` where the variant has no such cell.
    pub cells: Vec<Option<CellView>>,
    /// Per column: this variant's total tok/s is the column's highest among measured cells.
    pub best: Vec<bool>,
}

/// The variants of a run, in the order the plan (or the records) name them.
pub(super) fn variants(cells: &[CellView], manifest: &Manifest) -> Vec<VariantView> {
    names(cells)
        .into_iter()
        .map(|name| {
            let mine: Vec<CellView> = cells
                .iter()
                .filter(|c| c.variant.as_deref() == Some(name.as_str()))
                .cloned()
                .collect();
            let facts = manifest.variants.iter().find(|f| f.name == name);
            VariantView {
                launch_command: facts.and_then(|f| f.launch_command.clone()),
                engine_reported_version: facts.and_then(|f| f.engine.reported_version.clone()),
                failed: facts.and_then(|f| f.failed.clone()),
                prefill: mine
                    .iter()
                    .filter(|c| c.phase == Phase::Prefill)
                    .cloned()
                    .collect(),
                decode: matrix(&mine),
                name,
            }
        })
        .collect()
}

/// The variants' names in first-seen order.
fn names(cells: &[CellView]) -> Vec<String> {
    first_seen(cells.iter().map(|c| c.variant.as_ref()))
}

/// Each name once, in the order first seen.
fn first_seen<'a>(all: impl Iterator<Item = Option<&'a String>>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for v in all.flatten() {
        if !names.contains(v) {
            names.push(v.clone());
        }
    }
    names
}

/// A side-by-side table per context that any variant measured.
pub(super) fn side_by_side(variants: &[VariantView]) -> Vec<SideBySide> {
    let mut contexts: Vec<(u64, String)> = variants
        .iter()
        .flat_map(|v| {
            v.decode
                .rows
                .iter()
                .map(|r| (r.context, r.context_label.clone()))
        })
        .collect();
    contexts.sort_unstable();
    contexts.dedup();
    contexts
        .into_iter()
        .map(|(context, _)| table(variants, context))
        .collect()
}

fn table(variants: &[VariantView], context: u64) -> SideBySide {
    let mut concurrency: Vec<u32> = variants
        .iter()
        .flat_map(|v| v.decode.concurrency.iter().copied())
        .collect();
    concurrency.sort_unstable();
    concurrency.dedup();
    let cell = |v: &VariantView, conc: u32| -> Option<CellView> {
        v.decode
            .rows
            .iter()
            .find(|r| r.context == context)?
            .cells
            .iter()
            .flatten()
            .find(|c| c.concurrency == conc)
            .cloned()
    };
    let rate = |c: &Option<CellView>| -> Option<f64> {
        let c = c.as_ref().filter(|c| c.status.measured())?;
        c.record.as_ref()?.total_tok_s
    };
    let mut rows: Vec<SideRow> = variants
        .iter()
        .map(|v| SideRow {
            variant: v.name.clone(),
            cells: concurrency.iter().map(|&c| cell(v, c)).collect(),
            best: vec![false; concurrency.len()],
        })
        .collect();
    for col in 0..concurrency.len() {
        let top = rows
            .iter()
            .filter_map(|r| rate(&r.cells[col]))
            .fold(f64::NEG_INFINITY, f64::max);
        let measured = rows
            .iter()
            .filter(|r| rate(&r.cells[col]).is_some())
            .count();
        for r in &mut rows {
            r.best[col] = measured > 1 && rate(&r.cells[col]) == Some(top);
        }
    }
    SideBySide {
        context,
        context_label: ctx(context),
        concurrency,
        rows,
    }
}

/// The run as if only the variant `name` had been measured: its cells and records with the
/// `<name>/` prefix taken off, its engine facts in the manifest, so that two variants of one
/// run compare cell by cell (`compare RUN --variants a b`). `None` when the run has no such
/// variant.
pub fn only_variant(run: &crate::rundir::Run, name: &str) -> Option<crate::rundir::Run> {
    let prefix = format!("{name}/");
    let strip = |id: &str| id.strip_prefix(&prefix).map(str::to_string);
    let mut out = run.clone();
    out.records = run
        .records
        .iter()
        .filter(|r| r.variant.as_deref() == Some(name))
        .filter_map(|r| {
            let mut r = r.clone();
            r.cell = strip(&r.cell)?;
            r.variant = None;
            Some(r)
        })
        .collect();
    out.plan.cells = run
        .plan
        .cells
        .iter()
        .filter(|c| c.variant.as_deref() == Some(name))
        .filter_map(|c| {
            let mut c = c.clone();
            c.id = strip(&c.id)?;
            c.variant = None;
            Some(c)
        })
        .collect();
    if out.records.is_empty() && out.plan.cells.is_empty() {
        return None;
    }
    if let Some(f) = run.manifest.variants.iter().find(|f| f.name == name) {
        out.manifest.engine = f.engine.clone();
        out.manifest.launch_command.clone_from(&f.launch_command);
    }
    out.path = format!("{} (variant {name})", run.path.display()).into();
    Some(out)
}

/// The variants a run names, for a message when one asked for is not there.
pub fn names_of(run: &crate::rundir::Run) -> Vec<String> {
    first_seen(run.records.iter().map(|r| r.variant.as_ref()))
}
