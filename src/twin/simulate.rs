//! The cells the closed form does not describe — load, capacity, sessions, replay — and
//! `predict --out DIR`'s whole run: the spec run against the twin as its engine (`engine:
//! {kind: sim, sim: {twin: …}}`), in this process, on a paused clock — every interval the
//! model's, a minute of traffic in well under a second of the machine's time.

use super::{Twin, TwinError};
use crate::plan::RunConfig;
use crate::results::Record;
use crate::run::{self, Interrupt, RunOptions};
use crate::rundir::PredictedBy;
use crate::spec::{EngineKind, Loaded, SimEngine};
use std::path::Path;

/// `loaded` with its engine replaced by the simulator running `twin` (an absolute path): no
/// launch, no key, no local tokenizer (the simulator sizes prompts itself); variants keep their
/// names (and cells) but not their engine kinds, commands or simulator patches — only the
/// settings the twin models that the simulator takes (max_num_seqs, kv_tokens), the spec's and
/// each variant's.
pub fn against_twin(loaded: &Loaded, twin: &Path) -> Loaded {
    let settings = super::settings::SpecSettings::of(&loaded.spec);
    let mut l = loaded.clone();
    let e = &mut l.spec.engine;
    e.kind = EngineKind::Sim;
    e.launch = None;
    e.api_key_env = None;
    e.sim = Some(SimEngine {
        twin: Some(twin.display().to_string()),
        max_num_seqs: settings
            .base
            .max_num_seqs
            .map(|n| n.min(u64::from(u32::MAX)) as u32),
        kv_tokens: settings.base.kv_tokens.map(crate::spec::Tokens),
        ..SimEngine::default()
    });
    // A sweep's variants as named ones: their flags have no command to go to.
    let sweep = crate::spec::variant::sweep(&std::mem::take(&mut e.sweep));
    e.variants.extend(sweep);
    for v in &mut e.variants {
        let s = settings.get(Some(&v.name));
        let mut patch = crate::spec::variant::SimPatch::new();
        if let Some(n) = s.max_num_seqs {
            patch.insert("max_num_seqs".into(), n.into());
        }
        if let Some(k) = s.kv_tokens {
            patch.insert("kv_tokens".into(), k.into());
        }
        (v.kind, v.command) = (None, None);
        v.sim = (!patch.is_empty()).then_some(patch);
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
    manifest.predicted_by = Some(PredictedBy {
        twin: twin.0.display().to_string(),
        engine: twin.1.engine.clone(),
        fitted_on: twin.1.fitted_on.len(),
        interval_pct: twin.1.interval_pct,
    });
    dir.write_manifest(&manifest)?;
    Ok(dir.records()?)
}
