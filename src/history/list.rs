//! What the history keeps of a run ([`RunFacts`], from its directory) and what `history list`
//! reads back ([`RunSummary`], one per run, oldest first).

use super::store::{Store, absolute};
use super::{HistoryError, sql};
use crate::rundir::Run;
use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;
use std::collections::BTreeMap;

/// A run's row, as added.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub(super) run_id: String,
    pub(super) spec: String,
    pub(super) spec_sha256: String,
    pub(super) started_at: String,
    pub(super) ended_at: Option<String>,
    pub(super) tool: String,
    pub(super) tool_version: String,
    pub(super) engine_kind: String,
    pub(super) engine_version: Option<String>,
    pub(super) variants: String,
    pub(super) model: String,
    pub(super) hardware: String,
    pub(super) host: String,
    pub(super) labels: String,
    pub(super) git_commit: Option<String>,
    pub(super) path: String,
    pub(super) report: Option<String>,
    pub(super) manifest: String,
}

impl RunFacts {
    /// The facts of a run read from its directory.
    pub fn of(run: &Run) -> RunFacts {
        let m = &run.manifest;
        let hw = &run.spec.hardware;
        let hardware = [
            hw.gpu.clone(),
            hw.gpu_count.filter(|n| *n > 1).map(|n| format!("×{n}")),
            hw.os.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let variants: Vec<&str> = m.variants.iter().map(|v| v.name.as_str()).collect();
        let report = run.path.join("report.html");
        let (tool, tool_version) = match &m.imported_from {
            Some(i) => (i.tool.clone(), i.version.clone().unwrap_or_default()),
            None => (m.tool.clone(), m.tool_version.clone()),
        };
        RunFacts {
            run_id: m.identity(),
            spec: run.spec.name.clone(),
            spec_sha256: m.spec_sha256.clone(),
            started_at: m.started_at.clone(),
            ended_at: m.ended_at.clone(),
            tool,
            tool_version,
            engine_kind: m.engine.kind.clone(),
            engine_version: m.engine.reported_version.clone(),
            variants: serde_json::to_string(&variants).unwrap_or_default(),
            model: run.spec.model.served_name.clone(),
            hardware,
            host: m.host.clone(),
            labels: serde_json::to_string(&run.spec.labels).unwrap_or_default(),
            git_commit: m.git_commit.clone(),
            path: absolute(&run.path),
            report: report.is_file().then(|| absolute(&report)),
            manifest: serde_json::to_string(m).unwrap_or_default(),
        }
    }
}

/// The engine of a listed run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EngineSummary {
    /// `vllm`, `sim`, …
    pub kind: String,
    /// What the server reported as its version.
    pub version: Option<String>,
}

/// One run of the history (`history list --format json` prints these).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunSummary {
    /// The run's identity.
    pub run: String,
    /// The spec's name.
    pub spec: String,
    /// When the run started (UTC, RFC 3339).
    pub started_at: String,
    /// When it ended.
    pub ended_at: Option<String>,
    /// `benchspec`, or the peer it was imported from.
    pub tool: String,
    /// The engine.
    pub engine: EngineSummary,
    /// The served model.
    pub model: String,
    /// GPU, count and OS, as the spec describes them.
    pub hardware: String,
    /// The spec's labels.
    pub labels: BTreeMap<String, String>,
    /// The commit of the spec's repository, when it lived in one.
    pub git_commit: Option<String>,
    /// The run directory, as it was when added.
    pub path: String,
    /// Its HTML report, when it had one.
    pub report: Option<String>,
    /// Cells recorded.
    pub cells: i64,
    /// Of which valid.
    pub valid: i64,
}

fn text(row: &AnyRow, col: &str) -> String {
    row.try_get::<Option<String>, _>(col)
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn opt(row: &AnyRow, col: &str) -> Option<String> {
    row.try_get::<Option<String>, _>(col).ok().flatten()
}

fn summary(row: &AnyRow) -> RunSummary {
    RunSummary {
        run: text(row, "run_id"),
        spec: text(row, "spec"),
        started_at: text(row, "started_at"),
        ended_at: opt(row, "ended_at"),
        tool: text(row, "tool"),
        engine: EngineSummary {
            kind: text(row, "engine_kind"),
            version: opt(row, "engine_version"),
        },
        model: text(row, "model"),
        hardware: text(row, "hardware"),
        labels: serde_json::from_str(&text(row, "labels")).unwrap_or_default(),
        git_commit: opt(row, "git_commit"),
        path: text(row, "path"),
        report: opt(row, "report"),
        cells: row.try_get("cells").unwrap_or_default(),
        valid: row.try_get("valid").unwrap_or_default(),
    }
}

/// The runs of the history (of spec `spec` when given), oldest first.
pub async fn list(store: &Store, spec: Option<&str>) -> Result<Vec<RunSummary>, HistoryError> {
    let rows = store.rows(sql::RUNS, &[]).await?;
    Ok(rows
        .iter()
        .map(summary)
        .filter(|r| spec.is_none_or(|s| r.spec == s))
        .collect())
}

/// `history list` as a table.
pub fn table(runs: &[RunSummary]) -> String {
    let mut out = String::from("| Run | Spec | Started | Engine | Model | Cells | Path |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for r in runs {
        let engine = match &r.engine.version {
            Some(v) => format!("{} {v}", r.engine.kind),
            None => r.engine.kind.clone(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {}/{} valid | {} |\n",
            r.run, r.spec, r.started_at, engine, r.model, r.valid, r.cells, r.path
        ));
    }
    if runs.is_empty() {
        out.push_str("| (no runs) | | | | | | |\n");
    }
    out
}
