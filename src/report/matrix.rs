//! The decode matrix of the report context: context rows × concurrency columns, as the seed
//! page lays it out, and the line that says what it holds.

use super::format::ctx;
use super::view::{CellStatus, CellView};
use crate::plan::Phase;
use schemars::JsonSchema;
use serde::Serialize;

/// The decode matrix.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecodeMatrix {
    /// The column heads (concurrency levels with a cell that is not skipped).
    pub concurrency: Vec<u32>,
    /// One row per context with a cell that is not skipped.
    pub rows: Vec<DecodeRow>,
}

/// A context's row of the decode matrix.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecodeRow {
    /// Context tokens.
    pub context: u64,
    /// `8K`.
    pub context_label: String,
    /// One per column; `null` where the plan has no such cell.
    pub cells: Vec<Option<CellView>>,
}

/// The decode cells as a grid; a context or concurrency whose cells are all skipped has no
/// row or column (they are listed as skipped cells instead).
pub(super) fn matrix(cells: &[CellView]) -> DecodeMatrix {
    // Capacity probes are decode cells too, but not of the matrix.
    let all: Vec<&CellView> = cells
        .iter()
        .filter(|c| c.phase == Phase::Decode && !c.id.split('/').any(|s| s == "capacity"))
        .collect();
    let shown = |c: &&CellView| c.status != CellStatus::Skipped;
    let decode: Vec<&CellView> = all
        .iter()
        .filter(|c| all.iter().any(|o| o.context == c.context && shown(o)))
        .filter(|c| {
            all.iter()
                .any(|o| o.concurrency == c.concurrency && shown(o))
        })
        .copied()
        .collect();
    let mut concurrency: Vec<u32> = decode.iter().map(|c| c.concurrency).collect();
    concurrency.sort_unstable();
    concurrency.dedup();
    let mut contexts: Vec<u64> = decode.iter().map(|c| c.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    let rows = contexts
        .into_iter()
        .map(|context| DecodeRow {
            context,
            context_label: ctx(context),
            cells: concurrency
                .iter()
                .map(|&c| {
                    decode
                        .iter()
                        .find(|v| v.context == context && v.concurrency == c)
                        .map(|v| (*v).clone())
                })
                .collect(),
        })
        .collect();
    DecodeMatrix { concurrency, rows }
}

/// `5 contexts (8K–123K) × 8 concurrency levels (1–128) · prefill at 8K, 16K`.
pub(super) fn matrix_line(prefill: &[CellView], decode: &DecodeMatrix) -> String {
    let mut parts = Vec::new();
    if let (Some(first), Some(last)) = (decode.rows.first(), decode.rows.last()) {
        let n = decode.rows.len();
        let contexts = if n == 1 {
            format!("1 context ({})", first.context_label)
        } else {
            format!(
                "{n} contexts ({}–{})",
                first.context_label, last.context_label
            )
        };
        let c = &decode.concurrency;
        let levels = match (c.first(), c.last(), c.len()) {
            (Some(a), _, 1) => format!("1 concurrency level ({a})"),
            (Some(a), Some(b), n) => format!("{n} concurrency levels ({a}–{b})"),
            _ => String::new(),
        };
        parts.push(format!("{contexts} × {levels}"));
    }
    // A prefill the plan skips did not run: the line does not claim it.
    let prefill: Vec<&CellView> = prefill
        .iter()
        .filter(|p| p.status != CellStatus::Skipped)
        .collect();
    if !prefill.is_empty() {
        let at: Vec<&str> = prefill.iter().map(|p| p.context_label.as_str()).collect();
        parts.push(format!("prefill at {}", at.join(", ")));
    }
    parts.join(" · ")
}
