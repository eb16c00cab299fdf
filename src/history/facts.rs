//! What the history keeps of a run: its row ([`RunFacts`]), read from its directory. Both the
//! store (which writes it) and `list` (which reads rows back) stand on this file.

use crate::rundir::Run;
use std::path::Path;

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
        let hardware = run.spec.hardware.summary();
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

/// The directory's absolute path, as text.
pub(super) fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
