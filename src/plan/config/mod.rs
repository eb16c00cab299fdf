//! The run's settings, resolved once from the checked spec (ripgrep's `LowArgs` → `HiArgs`):
//! the spec file's path and text, the files it names as paths (tokenizer, dataset,
//! templates), what `--resume` does with repeats, and each engine — the spec's, or one per
//! variant — as an [`EngineConfig`]. `run` reads only these and the [`Plan`] they expand
//! into; nothing below the plan reads the spec.
//!
//! The value types a plan carries (SLOs, validity rules, arrival processes, durations) are
//! the spec's own and are re-exported here as the plan's vocabulary.

mod engine;
mod launch;

pub use engine::{ConfigError, EngineConfig, Watch};
pub use launch::{LaunchConfig, redact};

use super::{Plan, Rates};
use crate::spec::dataset::{self, DatasetError, Entry};
use crate::spec::files::{self, FileRef};
use crate::spec::{ApiSpec, Loaded, ResumeRepeats, Spec};
use std::path::{Path, PathBuf};

/// The run's settings, resolved from a loaded spec.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The spec's path as given.
    pub spec_path: String,
    /// The spec file's text, byte for byte (copied into the run directory, hashed into the
    /// manifest).
    pub spec_source: String,
    /// What `--resume` does with the repeats an earlier attempt wrote whole.
    pub resume_repeats: ResumeRepeats,
    /// The local tokenizer (`workload.tokenizer`), unless it is `server`.
    pub tokenizer: Option<TokenizerFile>,
    /// The load phase's dataset, when the spec names one.
    pub dataset: Option<DatasetFile>,
    /// The replay phase's trace, when the spec names one.
    pub trace: Option<TraceFile>,
    /// The simulated engine's twin (`engine.sim.twin`), resolved; the spec's `twin` then
    /// holds this path.
    pub twin: Option<PathBuf>,
    /// The report templates the run directory keeps copies of.
    pub templates: Vec<PathBuf>,
    /// `--base-url`: attach to this server instead of the spec's (or instead of launching).
    attach: Option<String>,
    spec: Spec,
}

/// The local tokenizer: a `tokenizer.json`, or a folder holding one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerFile {
    /// Where it is (beside the spec, or the run directory's copy).
    pub path: PathBuf,
    /// The requests go to the chat API, so the tokenizer must carry a chat template.
    pub chat: bool,
}

/// The load phase's dataset (`phases.load.dataset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetFile {
    /// The name as the spec writes it (for messages).
    pub name: String,
    /// Where it is.
    pub path: PathBuf,
    api: ApiSpec,
}

/// The replay phase's trace (`phases.replay.trace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFile {
    /// The name as the spec writes it (for messages and records).
    pub name: String,
    /// Where it is.
    pub path: PathBuf,
}

impl DatasetFile {
    /// Read the dataset whole from `from` (its path, or a kept copy).
    pub fn read(&self, from: &Path) -> Result<Vec<Entry>, DatasetError> {
        dataset::read(from, &self.name, self.api)
    }
}

impl RunConfig {
    /// The settings of a run of `loaded`.
    pub fn new(loaded: &Loaded) -> RunConfig {
        let spec = &loaded.spec;
        let w = &spec.workload;
        let tokenizer = (w.tokenizer != "server").then(|| TokenizerFile {
            path: loaded.resolve(FileRef::Tokenizer, &w.tokenizer),
            chat: w.api == ApiSpec::Chat,
        });
        let dataset = spec
            .phases
            .load
            .as_ref()
            .and_then(|l| l.dataset.as_deref())
            .map(|name| DatasetFile {
                name: name.to_string(),
                path: loaded.resolve(FileRef::Dataset, name),
                api: w.api,
            });
        let trace = spec.phases.replay.as_ref().map(|r| TraceFile {
            name: r.trace.clone(),
            path: loaded.resolve(FileRef::Trace, &r.trace),
        });
        let mut spec = spec.clone();
        let twin = spec.engine.sim.as_mut().and_then(|sim| {
            let path = loaded.resolve(FileRef::Twin, sim.twin.as_deref()?);
            sim.twin = Some(path.display().to_string());
            Some(path)
        });
        RunConfig {
            twin,
            trace,
            spec_path: loaded.path.clone(),
            spec_source: loaded.source.clone(),
            resume_repeats: spec.resume_repeats,
            tokenizer,
            dataset,
            templates: files::templates(&loaded.files, &loaded.path, &spec.report.templates),
            attach: None,
            spec,
        }
    }

    /// Attach to the server at `url` (`--base-url`) instead of the spec's or a launched one.
    /// Refused when an engine of the run is the simulator this process runs: the named server
    /// would receive nothing.
    pub fn attach_to(mut self, url: Option<String>) -> Result<RunConfig, super::PlanError> {
        if let Some(url) = &url {
            let sim = |s: &crate::spec::Spec| s.engine.kind == crate::spec::EngineKind::Sim;
            let engine = if sim(&self.spec) {
                Some("the spec's engine".to_string())
            } else {
                self.spec
                    .variants()
                    .into_iter()
                    .find(|v| sim(&v.spec))
                    .map(|v| format!("variant `{}`", v.name))
            };
            if let Some(engine) = engine {
                let url = url.clone();
                return Err(super::PlanError::AttachToSim { url, engine });
            }
        }
        self.attach = url;
        Ok(self)
    }

    /// The URL the run measures (the simulator's is known only once it listens).
    pub fn base_url(&self) -> String {
        self.attach
            .clone()
            .unwrap_or_else(|| self.spec.engine.base_url.clone())
    }

    /// The whole plan before any server is asked, estimated at the simulator's rates.
    pub fn plan(&self) -> Plan {
        super::expand(&self.spec, &super::sim::rates_for)
    }

    /// The plan without estimates (cheap): what sizes the client's connection pool.
    pub fn sizing_plan(&self) -> Plan {
        super::expand(&self.spec, &|_| Rates::default())
    }

    /// The spec as loaded.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The engine of a spec without variants.
    pub fn engine(&self) -> EngineConfig {
        EngineConfig::new(None, &self.spec, self.attach.as_deref())
    }

    /// The engine variants in order, each with its own engine; empty without variants.
    pub fn variants(&self) -> Vec<EngineConfig> {
        self.spec
            .variants()
            .into_iter()
            .map(|v| EngineConfig::new(Some(v.name), &v.spec, self.attach.as_deref()))
            .collect()
    }
}

/// The settings of the spec `text` (YAML, checked for a run), for tests of the stages below
/// the plan; the files it names are looked for beside `t.yaml`.
#[cfg(test)]
pub(crate) fn of_yaml(text: &str) -> RunConfig {
    match crate::spec::parse("t.yaml", text, crate::spec::Stage::Run, &|_| None) {
        Ok(loaded) => RunConfig::new(&loaded),
        Err(e) => panic!("the test spec is valid: {e:?}"),
    }
}
