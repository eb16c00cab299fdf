//! What `history list` reads back of the runs the history keeps ([`HistoryRun`], one per run,
//! oldest first); what it keeps is [`super::facts::RunFacts`].

use super::store::Store;
use super::{HistoryError, sql};
use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;
use std::collections::BTreeMap;

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
pub struct HistoryRun {
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
    /// Cells recorded (skipped ones included).
    pub cells: i64,
    /// Of which valid.
    pub valid: i64,
    /// Of which skipped (a disabled phase, another shard's cell, a rate past saturation):
    /// not measured, and no failure.
    pub skipped: i64,
    /// For a run made by `benchspec predict --out`: the twin file that predicted it. Nothing
    /// in such a run was measured; trends leave it out.
    pub predicted_by: Option<String>,
}

impl HistoryRun {
    /// The cells in words: `3/3 valid, 2 skipped` (skipped cells are not counted as not
    /// valid), and for a predicted run, by which twin.
    pub fn cells_text(&self) -> String {
        let measured = self.cells - self.skipped;
        let mut text = format!("{}/{measured} valid", self.valid);
        if self.skipped > 0 {
            text.push_str(&format!(", {} skipped", self.skipped));
        }
        match &self.predicted_by {
            Some(twin) => format!("PREDICTED by {twin}, not measured: {text}"),
            None => text,
        }
    }
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

fn summary(row: &AnyRow) -> HistoryRun {
    HistoryRun {
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
        skipped: row.try_get("skipped").unwrap_or_default(),
        predicted_by: predicted_by(&text(row, "manifest")),
    }
}

/// The twin that predicted a run, from its manifest's text.
fn predicted_by(manifest: &str) -> Option<String> {
    let m: serde_json::Value = serde_json::from_str(manifest).ok()?;
    let p = m.get("predicted_by").filter(|p| !p.is_null())?;
    Some(p["twin"].as_str().unwrap_or("a twin").to_string())
}

/// The runs of the history (of spec `spec` when given), oldest first; a `spec` no run has is
/// refused, naming the specs there are.
pub async fn list(store: &Store, spec: Option<&str>) -> Result<Vec<HistoryRun>, HistoryError> {
    let rows = store.rows(sql::RUNS, &[]).await?;
    let all: Vec<HistoryRun> = rows.iter().map(summary).collect();
    let Some(spec) = spec else { return Ok(all) };
    let runs: Vec<HistoryRun> = all.iter().filter(|r| r.spec == spec).cloned().collect();
    if runs.is_empty() {
        return Err(HistoryError::NoMatch(format!(
            "no run of spec `{spec}` in the history at {}; {}",
            store.target().shown(),
            specs_there(&all)
        )));
    }
    Ok(runs)
}

/// `its specs: `a` (3 runs), `b` (1 run)`, or that the history holds no run.
pub(super) fn specs_there(runs: &[HistoryRun]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in runs {
        *counts.entry(&r.spec).or_default() += 1;
    }
    if counts.is_empty() {
        return "it holds no run yet (`history add RUN_DIR` adds one)".into();
    }
    let named: Vec<String> = counts
        .iter()
        .map(|(s, n)| format!("`{s}` ({n} run{})", if *n == 1 { "" } else { "s" }))
        .collect();
    format!("its specs: {}", named.join(", "))
}

/// `history list` as a table.
pub fn table(runs: &[HistoryRun]) -> String {
    let mut out = String::from("| Run | Spec | Started | Engine | Model | Cells | Path |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for r in runs {
        let engine = match &r.engine.version {
            Some(v) => format!("{} {v}", r.engine.kind),
            None => r.engine.kind.clone(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            r.run,
            r.spec,
            r.started_at,
            engine,
            r.model,
            r.cells_text(),
            r.path
        ));
    }
    if runs.is_empty() {
        out.push_str("| (no runs) | | | | | | |\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cells: i64, valid: i64, skipped: i64, twin: Option<&str>) -> HistoryRun {
        HistoryRun {
            run: "r".into(),
            spec: "s".into(),
            started_at: String::new(),
            ended_at: None,
            tool: "benchspec".into(),
            engine: EngineSummary {
                kind: "sim".into(),
                version: None,
            },
            model: "m".into(),
            hardware: String::new(),
            labels: BTreeMap::new(),
            git_commit: None,
            path: String::new(),
            report: None,
            cells,
            valid,
            skipped,
            predicted_by: twin.map(Into::into),
        }
    }

    #[test]
    fn skipped_cells_are_counted_apart_and_predicted_runs_marked() {
        let cases = [
            // Decode measured, prefill disabled: all measured cells valid.
            (run(5, 3, 2, None), "3/3 valid, 2 skipped"),
            (run(3, 3, 0, None), "3/3 valid"),
            (run(5, 2, 2, None), "2/3 valid, 2 skipped"),
            (
                run(3, 3, 0, Some("t.toml")),
                "PREDICTED by t.toml, not measured: 3/3 valid",
            ),
        ];
        for (r, want) in cases {
            assert_eq!(r.cells_text(), want);
        }
        let table = table(&[run(5, 3, 2, None)]);
        assert!(table.contains("| 3/3 valid, 2 skipped |"), "{table}");
    }

    #[test]
    fn a_predicted_run_is_read_from_its_manifest() {
        let cases = [
            (r#"{"tool":"benchspec"}"#, None),
            (r#"{"predicted_by":null}"#, None),
            (r#"{"predicted_by":{"twin":"t.toml"}}"#, Some("t.toml")),
            ("not json", None),
        ];
        for (m, want) in cases {
            assert_eq!(predicted_by(m).as_deref(), want, "{m}");
        }
    }
}
