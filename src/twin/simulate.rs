//! The cells the closed form does not describe — load, capacity, sessions, replay — and
//! `predict --out DIR`'s whole run: the spec run against the twin as its engine (`engine:
//! {kind: sim, sim: {twin: …}}`), in this process, on a paused clock — every interval the
//! model's, a minute of traffic in well under a second of the machine's time.

use super::{Twin, TwinError};
use crate::plan::RunConfig;
use crate::results::Record;
use crate::run::{self, Interrupt, RunOptions};
use crate::rundir::Predicted;
use crate::spec::{EngineKind, Loaded, SimEngine};
use std::path::Path;

/// `loaded` with its engine replaced by the simulator running `twin` (an absolute path): no
/// launch, no key, no local tokenizer (the simulator sizes prompts itself); variants keep their
/// names (and cells) but not their engine kinds, commands or simulator patches.
pub fn against_twin(loaded: &Loaded, twin: &Path) -> Loaded {
    let mut l = loaded.clone();
    let e = &mut l.spec.engine;
    e.kind = EngineKind::Sim;
    e.launch = None;
    e.api_key_env = None;
    e.sim = Some(SimEngine {
        twin: Some(twin.display().to_string()),
        ..SimEngine::default()
    });
    for v in &mut e.variants {
        (v.kind, v.command, v.sim) = (None, None, None);
    }
    l.spec.workload.tokenizer = "server".into();
    l
}

/// Run the cells of `loaded` that `only` matches (all without it) against `twin` into `out`,
/// on a paused clock in this process; the manifest says what predicted them. The records.
pub fn simulate(
    loaded: &Loaded,
    twin: (&Path, &Twin),
    out: &Path,
    only: Option<String>,
) -> Result<Vec<Record>, TwinError> {
    let abs = std::path::absolute(twin.0).unwrap_or_else(|_| twin.0.to_path_buf());
    let config = RunConfig::new(&against_twin(loaded, &abs));
    let opts = RunOptions {
        out: Some(out.to_path_buf()),
        only,
        ..RunOptions::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| TwinError::Simulate(e.to_string()))?;
    let interrupt = Interrupt::new();
    rt.block_on(run::run_in_process(&config, &opts, &interrupt, &|_| {}))
        .map_err(|e| TwinError::Simulate(e.to_string()))?;
    let dir = crate::rundir::RunDir::open(out)?;
    let mut manifest = dir.manifest()?;
    manifest.predicted_by = Some(Predicted {
        twin: twin.0.display().to_string(),
        engine: twin.1.engine.clone(),
        fitted_on: twin.1.fitted_on.len(),
        interval_pct: twin.1.interval_pct,
    });
    dir.write_manifest(&manifest)?;
    Ok(dir.records()?)
}
