//! `manifest.json` (docs/run-directory.md): what a run was — tool and version, the spec's path
//! and sha256, start, resume and end times, host, what the engine reported about itself, the
//! launch command with secrets replaced by `<redacted>`, warnings, and for a merged run the
//! shards it was made from.

use serde::{Deserialize, Serialize};

/// The manifest of a run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always `benchspec`.
    pub tool: String,
    /// The version of benchspec that ran.
    pub tool_version: String,
    /// The spec's path as given on the command line.
    pub spec: String,
    /// The hex sha256 of the spec's bytes.
    pub spec_sha256: String,
    /// The run's identity, made when it starts (kept by `--resume`; a merged run's is made
    /// from its parts'): a history holds a run once, whatever path it is added from. Runs
    /// written before it existed are identified by [`Manifest::identity`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When the run first started (UTC, RFC 3339).
    pub started_at: String,
    /// When each `--resume` started.
    #[serde(default)]
    pub resumed_at: Vec<String>,
    /// When the run ended; `None` while it runs or after it was cut short.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// The git commit of the repository the spec file lives in, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// For a run made by `benchspec import`: the peer tool, its version and the files read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<Imported>,
    /// For a run made by `benchspec predict --out`: the twin that ran as the engine — nothing
    /// in it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_by: Option<PredictedBy>,
    /// The host the client ran on (several, comma-separated, for a merged run).
    #[serde(default)]
    pub host: String,
    /// What the engine said about itself.
    pub engine: EngineFacts,
    /// The launch command, quoted as a shell reads it back, secrets `<redacted>`.
    #[serde(default)]
    pub launch_command: Option<String>,
    /// Things worth knowing that did not stop the run.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The run directories a merged run was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<MergedPart>>,
    /// Worker threads of the measuring client (`--client-threads`, else one per core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<u32>,
    /// The engine variants measured so far (`engine.variants`), in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantFacts>,
}

/// The peer a run was imported from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// `guidellm`, `vllm` or `aiperf`.
    pub tool: String,
    /// The peer's version, as its file states it (`None` when it does not).
    pub version: Option<String>,
    /// The files read, as given.
    pub files: Vec<String>,
}

/// The twin a predicted run was made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedBy {
    /// The twin file, as given.
    pub twin: String,
    /// The engine it was fitted to (kind and reported version).
    pub engine: String,
    /// How many measured cells it was fitted on.
    pub fitted_on: usize,
    /// Its 90% interval inside the fitted range, percent (`None`: no fitted cell could be
    /// left out to earn one).
    pub interval_pct: Option<f64>,
}

/// One engine variant of a run: how it was launched and what it said about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantFacts {
    /// The variant's name.
    pub name: String,
    /// What the variant's engine reported.
    pub engine: EngineFacts,
    /// Its launch command, secrets `<redacted>`; `None` when benchspec attached.
    #[serde(default)]
    pub launch_command: Option<String>,
    /// Why it did not start, when it did not (its cells are failed with this reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// What the engine reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineFacts {
    /// `engine.kind` of the spec.
    pub kind: String,
    /// `/version`, when it answered.
    #[serde(default)]
    pub reported_version: Option<String>,
    /// The model ids of `/v1/models`.
    #[serde(default)]
    pub models: Vec<String>,
    /// The served model's `max_model_len`, when listed.
    #[serde(default)]
    pub max_model_len: Option<u64>,
    /// The KV cache's capacity in tokens, when the engine states it (summed over servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_tokens: Option<u64>,
    /// Every server measured when there are several (`engine.replicas`, `engine.endpoints`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// How requests were spread over them (`least-outstanding`, `round-robin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<String>,
}

/// One run directory of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedPart {
    /// Its path.
    pub dir: String,
    /// `K/N` when it was a shard.
    pub shard: Option<String>,
    /// Its host.
    pub host: Option<String>,
    /// Its start.
    pub started_at: Option<String>,
    /// Its end.
    pub ended_at: Option<String>,
    /// The engine version it saw.
    pub engine_reported_version: Option<String>,
}

impl Manifest {
    /// The manifest of a run starting now, before the engine has been asked anything.
    pub fn new(
        spec_path: &str,
        spec_sha256: String,
        engine_kind: &str,
        started_at: String,
    ) -> Manifest {
        Manifest {
            client_threads: None,
            tool: "benchspec".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            spec: spec_path.into(),
            run_id: Some(new_run_id(&started_at)),
            spec_sha256,
            started_at,
            resumed_at: Vec::new(),
            ended_at: None,
            host: host(),
            git_commit: None,
            imported_from: None,
            predicted_by: None,
            engine: EngineFacts {
                kind: engine_kind.into(),
                reported_version: None,
                models: Vec::new(),
                max_model_len: None,
                kv_tokens: None,
                endpoints: Vec::new(),
                balance: None,
            },
            launch_command: None,
            warnings: Vec::new(),
            merged_from: None,
            variants: Vec::new(),
        }
    }
}

impl Manifest {
    /// The run's identity: its `run_id`, or for a run written before run ids, one derived
    /// from its start, host and spec (the same for every copy of the directory).
    pub fn identity(&self) -> String {
        self.run_id.clone().unwrap_or_else(|| {
            let seed = format!("{}|{}|{}", self.started_at, self.host, self.spec_sha256);
            format!("legacy-{}", &super::spec_sha256(&seed)[..24])
        })
    }
}

/// A fresh run id: 24 hex digits from the start time, host, process and clock.
pub fn new_run_id(started_at: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{started_at}|{}|{}|{nanos}", host(), std::process::id());
    super::spec_sha256(&seed)[..24].to_string()
}

fn host() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}
