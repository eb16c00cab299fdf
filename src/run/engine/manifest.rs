//! What a run says about itself in its run directory's manifest: what the server reports
//! (version, models, max_model_len), the launch command with secrets replaced by
//! `<redacted>`, the start, resume and end times. The files themselves belong to `rundir`.

use crate::client::{Client, Introspection};
use crate::plan::{EngineConfig, RunConfig};
use crate::results::record::utc_now;
use crate::run::error::EngineError;
use crate::rundir::{Manifest, RunDir, RunDirError, spec_sha256};
use serde_json::Value;

/// What the server says about itself.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// `/version`, when it answers.
    pub version: Option<String>,
    /// The model ids of `/v1/models`.
    pub models: Vec<String>,
    /// `max_model_len` of the served model, when listed.
    pub max_model_len: Option<u64>,
    /// The KV cache's capacity in tokens, when the engine states it.
    pub kv_tokens: Option<u64>,
    started_at: String,
}

impl ServerInfo {
    /// Ask every server (replicas, endpoints); an error when one is unreachable or does not
    /// serve `served`. The first one's version and models are kept; KV capacities add up.
    pub async fn read(client: &Client, served: &str) -> Result<ServerInfo, EngineError> {
        let mut info = ServerInfo::read_one(client, served).await?;
        for i in 1..client.endpoints().len() {
            let other = ServerInfo::read_one(&client.endpoint(i), served).await?;
            info.kv_tokens = info.kv_tokens.zip(other.kv_tokens).map(|(a, b)| a + b);
        }
        Ok(info)
    }

    /// Ask one server, through the client's one introspection ([`Client::introspect`]).
    async fn read_one(client: &Client, served: &str) -> Result<ServerInfo, EngineError> {
        let answers = client
            .introspect()
            .await
            .map_err(|source| EngineError::Unreachable {
                base: client.base.clone(),
                source,
            })?;
        let ids = answers.model_ids();
        let Some(model) = answers.model(served) else {
            let there = if ids.is_empty() {
                "no models".to_string()
            } else {
                ids.iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(EngineError::NotServed {
                base: client.base.clone(),
                there,
                served: served.to_string(),
            });
        };
        let max_model_len = model.get("max_model_len").and_then(Value::as_u64);
        let version = answers
            .version
            .as_ref()
            .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_string));
        Ok(ServerInfo {
            kv_tokens: kv_tokens(&answers),
            version,
            models: ids,
            max_model_len,
            started_at: utc_now(),
        })
    }
}

impl ServerInfo {
    /// Nothing asked yet (a run of engine variants starts before any engine is up): only
    /// the start time.
    pub fn unasked() -> ServerInfo {
        ServerInfo {
            started_at: utc_now(),
            ..ServerInfo::default()
        }
    }

    /// The limits the plan is expanded for.
    pub fn limits(&self) -> crate::plan::Limits {
        crate::plan::Limits {
            max_model_len: self.max_model_len,
            kv_tokens: self.kv_tokens,
        }
    }
}

/// The KV cache's capacity in tokens, as the engine states it: vLLM's `cache_config_info`
/// (blocks × block size), TensorRT-LLM's iteration statistics (blocks × tokens per block),
/// SGLang's `max_total_num_tokens`, or llama.cpp's slots × context per slot.
fn kv_tokens(answers: &Introspection) -> Option<u64> {
    if let Some(text) = &answers.metrics {
        if crate::telemetry::trtllm::is_iteration_stats(text) {
            if let Some(kv) = crate::telemetry::trtllm::kv_tokens(text) {
                return Some(kv);
            }
        } else {
            let scrape = crate::telemetry::prom::Scrape::new(tokio::time::Instant::now(), text);
            if let Some(kv) = crate::telemetry::server::vllm_kv_tokens(&scrape) {
                return Some(kv);
            }
        }
    }
    if let Some(kv) = answers
        .server_info
        .as_ref()
        .and_then(|v| v.get("max_total_num_tokens"))
        .and_then(Value::as_u64)
    {
        return Some(kv);
    }
    let props = answers.props.as_ref()?;
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")?
        .as_u64()?;
    let slots = props
        .get("total_slots")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    Some(n_ctx * slots)
}

/// The manifest of a run of `config` (its engine `engine`) starting now against `server`.
pub(in crate::run) fn manifest(
    config: &RunConfig,
    engine: &EngineConfig,
    server: &ServerInfo,
) -> Manifest {
    let mut m = Manifest::new(
        &config.spec_path,
        spec_sha256(&config.spec_source),
        engine.kind,
        server.started_at.clone(),
    );
    m.engine.reported_version.clone_from(&server.version);
    m.engine.models.clone_from(&server.models);
    m.engine.max_model_len = server.max_model_len;
    m.engine.kv_tokens = server.kv_tokens;
    if engine.endpoints.len() > 1 {
        m.engine.endpoints.clone_from(&engine.endpoints);
        m.engine.balance = Some(engine.balance.as_str().to_string());
    }
    m.launch_command.clone_from(&engine.launch_command);
    m.git_commit = crate::rundir::git::commit_of(std::path::Path::new(&config.spec_path));
    m.warnings
        .extend(engine.version_warning(server.version.as_deref()));
    m
}

/// A warning when the spec's `max_model_len` (what the plan sized prompts for) is more than
/// the server's own: the longer prompts will be refused by the server, cell by cell.
pub(in crate::run) fn limit_warning(spec: Option<u64>, server: Option<u64>) -> Option<String> {
    match (spec, server) {
        (Some(want), Some(got)) if want > got => Some(format!(
            "the spec says max_model_len {want}, the server serves {got} (its `/v1/models`): \
             prompt and output over {got} tokens will fail; set `model.max_model_len: {got}` \
             or leave it out to take the server's"
        )),
        _ => None,
    }
}

/// What a variant of the run was and what its engine said about itself.
pub(in crate::run) fn variant_facts(
    name: &str,
    engine: &EngineConfig,
    server: &ServerInfo,
) -> crate::rundir::VariantFacts {
    crate::rundir::VariantFacts {
        name: name.to_string(),
        engine: crate::rundir::EngineFacts {
            kind: engine.kind.to_string(),
            reported_version: server.version.clone(),
            models: server.models.clone(),
            max_model_len: server.max_model_len,
            kv_tokens: server.kv_tokens,
            endpoints: Vec::new(),
            balance: None,
        },
        launch_command: engine.launch_command.clone(),
        failed: None,
    }
}

/// The manifest of a resumed run: the earlier run's first start and resumes kept, this
/// start added to `resumed_at`.
pub(in crate::run) fn resumed(mut now: Manifest, earlier: &Manifest) -> Manifest {
    let this_start = std::mem::replace(&mut now.started_at, earlier.started_at.clone());
    now.resumed_at.clone_from(&earlier.resumed_at);
    now.resumed_at.push(this_start);
    now.variants.clone_from(&earlier.variants);
    now.run_id.clone_from(&earlier.run_id);
    now
}

/// Write the manifest with the end time.
pub(in crate::run) fn write_end(dir: &RunDir, manifest: &Manifest) -> Result<(), RunDirError> {
    let mut m = manifest.clone();
    m.ended_at = Some(utc_now());
    dir.write_manifest(&m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Api;
    use crate::client::replay::{Answer, replaying};

    /// Real vLLM's `/v1/models`, `/version` and `/metrics` (tests/fixtures/vllm): the served
    /// model's max_model_len 4096, version 0.32.0, and the KV cache of 4,096 blocks of 128
    /// tokens that `cache_config_info` also states as `kv_cache_size_tokens="524288"`.
    #[tokio::test]
    async fn real_vllm_says_its_limits_version_and_kv_cache() {
        let client = replaying(
            Api::Completions,
            vec![
                Answer::get(
                    "/v1/models",
                    include_str!("../../../tests/fixtures/vllm/models.json"),
                ),
                Answer::get(
                    "/version",
                    include_str!("../../../tests/fixtures/vllm/version.json"),
                ),
                Answer::get(
                    "/metrics",
                    include_str!("../../../tests/fixtures/vllm/metrics-before.txt"),
                ),
            ],
        );
        let info = ServerInfo::read(&client, "tiny").await;
        let info = info.expect("real vLLM's answers are read");
        assert_eq!(info.models, ["tiny"]);
        assert_eq!(info.max_model_len, Some(4096));
        assert_eq!(info.version.as_deref(), Some("0.32.0"));
        assert_eq!(info.kv_tokens, Some(524_288));
        let other = ServerInfo::read(&client, "nope").await;
        assert!(other.is_err(), "a model vLLM does not serve is refused");
    }

    /// llama.cpp states no KV capacity of its own: slots × `n_ctx` per slot, 2 × 2048, from
    /// the same introspection `init` reads.
    #[tokio::test]
    async fn llama_cpp_kv_is_slots_times_context() {
        let client = replaying(
            Api::Completions,
            vec![
                Answer::get("/v1/models", r#"{"data":[{"id":"smollm2"}]}"#),
                Answer::get(
                    "/props",
                    r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":2,"build_info":"b6000"}"#,
                ),
            ],
        );
        let info = ServerInfo::read(&client, "smollm2").await;
        let info = info.expect("llama.cpp's answers are read");
        assert_eq!((info.kv_tokens, info.version), (Some(4096), None));
    }

    #[test]
    fn a_spec_longer_than_the_server_is_warned_of() {
        for (spec, server, warned) in [
            (Some(8192), Some(4096), true),
            (Some(4096), Some(4096), false),
            (Some(2048), Some(4096), false),
            (None, Some(4096), false),
            (Some(8192), None, false),
        ] {
            let w = limit_warning(spec, server);
            assert_eq!(w.is_some(), warned, "{spec:?} {server:?}: {w:?}");
            if let Some(w) = w {
                assert!(w.contains("8192") && w.contains("4096"), "{w}");
            }
        }
    }
}
