//! One engine of a run as the run sees it: where it answers, whether benchspec starts it (the
//! simulator in-process, or a launch command), the model it must serve, the version the spec
//! expects, the API key's variable, what the client is told and what is watched. The parts
//! that read the environment (the key, `${VAR}` in the launch) are resolved when the engine
//! is brought up, so that a variant whose environment is wrong fails alone.

use super::launch::{LaunchConfig, Replica, shown};
use crate::client;
use crate::plan::{Limits, Plan};
use crate::sim::{Options, SimError};
use crate::spec::command::{CommandError, parse_url};
use crate::spec::telemetry::Telemetry;
use crate::spec::{ApiSpec, EngineKind, Spec};
use std::collections::BTreeMap;

/// Why an engine's settings could not be resolved from the environment (exit 3, as an
/// engine that cannot start).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The API key's variable holds what cannot be sent in a header.
    #[error("`engine.api_key_env`: ${var}: {source}")]
    BadKey {
        /// The variable's name (never its value).
        var: String,
        /// Where the key breaks.
        source: client::BadKey,
    },
    /// The launch command cannot be split.
    #[error("`engine.launch.command`: {0}")]
    Command(#[from] CommandError),
    /// The launch command refers to an unset environment variable.
    #[error("`${{{0}}}` in `engine.launch` names an environment variable that is not set")]
    UnsetVar(String),
    /// The simulator's options name what does not exist (a profile).
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// What is watched while cells are measured: the spec's `telemetry` and the GPUs
/// `hardware` says the engine has.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    /// Server scrapes and the GPU source.
    pub telemetry: Telemetry,
    /// `hardware.gpu`: the GPU model telemetry should find.
    pub gpu: Option<String>,
    /// `hardware.gpu_count`: how many GPUs telemetry should find.
    pub gpu_count: Option<u32>,
}

/// One engine of a run (the spec's, or a variant's).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The variant's name; `None` for a spec without variants.
    pub variant: Option<String>,
    /// `engine.kind` as written (`vllm`, `sim`, …).
    pub kind: &'static str,
    /// The engine is the embedded simulator, started in-process.
    pub in_process: bool,
    /// The URL of the server to measure (`--base-url` over `engine.base_url`); the
    /// simulator's is known once it listens.
    pub base_url: String,
    /// `--base-url` was given for an engine the spec says how to launch: it is attached to,
    /// not launched.
    pub launch_ignored: bool,
    /// Every server requests go to: `base_url` alone, each launched replica's
    /// (`base_url`'s port + its index), or `engine.endpoints`.
    pub endpoints: Vec<String>,
    /// How requests are spread over `endpoints`.
    pub balance: crate::spec::BalanceSpec,
    /// How many replicas benchspec launches (1 when it launches one, or none).
    pub replicas: u32,
    /// `model.served_name`.
    pub served_name: String,
    /// `engine.version`: the version the server should report.
    pub version: Option<String>,
    /// The launch command as a shell reads it back, secrets `<redacted>`.
    pub launch_command: Option<String>,
    /// The spec's labels (every record carries them).
    pub labels: BTreeMap<String, String>,
    /// What is watched.
    pub watch: Watch,
    launches: bool,
    spec: Spec,
}

impl EngineConfig {
    /// The engine `spec` describes (`variant`: its variant's name), `attach` the
    /// `--base-url` given.
    pub(super) fn new(variant: Option<String>, spec: &Spec, attach: Option<&str>) -> Self {
        let in_process = spec.engine.kind == EngineKind::Sim;
        let has_launch = spec.engine.launch.is_some();
        let launches = !in_process && attach.is_none() && has_launch;
        let base_url = attach.map_or_else(|| spec.engine.base_url.clone(), str::to_string);
        let replicas = if launches { spec.engine.replicas } else { 1 };
        let endpoints = match attach {
            None if !spec.engine.endpoints.is_empty() && !in_process => {
                spec.engine.endpoints.clone()
            }
            _ => (0..replicas)
                .map(|i| with_port(&base_url, i).unwrap_or_else(|| base_url.clone()))
                .collect(),
        };
        EngineConfig {
            base_url: endpoints.first().cloned().unwrap_or(base_url),
            endpoints,
            balance: spec.engine.balance,
            replicas,
            variant,
            kind: spec.engine.kind.as_str(),
            in_process,
            launch_ignored: !in_process && attach.is_some() && has_launch,
            served_name: spec.model.served_name.clone(),
            version: spec.engine.version.clone(),
            launch_command: spec.engine.launch.as_ref().and_then(shown),
            labels: spec.labels.clone(),
            watch: Watch {
                telemetry: spec.telemetry.clone(),
                gpu: spec.hardware.gpu.clone(),
                gpu_count: spec.hardware.gpu_count,
            },
            launches,
            spec: spec.clone(),
        }
    }

    /// The simulator's options, when the engine is the simulator.
    pub fn sim(&self) -> Result<Option<Options>, ConfigError> {
        if !self.in_process {
            return Ok(None);
        }
        Ok(Some(crate::plan::sim::options_for(&self.spec)?))
    }

    /// The API key, read from `engine.api_key_env` in `env` (never shown anywhere).
    pub fn api_key(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<client::ApiKey>, ConfigError> {
        let Some(name) = &self.spec.engine.api_key_env else {
            return Ok(None);
        };
        env(name)
            .map(client::ApiKey::new)
            .transpose()
            .map_err(|source| ConfigError::BadKey {
                var: name.clone(),
                source,
            })
    }

    /// How benchspec launches each replica of the engine, `${VAR}` replaced from `env`;
    /// none when it does not launch it (the simulator, servers to attach to).
    pub fn launches(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<LaunchConfig>, ConfigError> {
        let Some(l) = self.spec.engine.launch.as_ref().filter(|_| self.launches) else {
            return Ok(Vec::new());
        };
        let port = |url: &str| parse_url(url).map_or(0, |u| u.port);
        (0..self.replicas)
            .map(|index| {
                let url = self
                    .endpoints
                    .get(index as usize)
                    .map_or("", String::as_str);
                let replica = Replica {
                    index,
                    of: self.replicas,
                    port: port(url),
                };
                LaunchConfig::resolve(l, env, replica)
            })
            .collect()
    }

    /// What the client is told: this engine at `base`, with `pool` keep-alive connections.
    pub fn client_settings(
        &self,
        base: String,
        key: Option<client::ApiKey>,
        pool: usize,
    ) -> client::Settings {
        let w = &self.spec.workload;
        client::Settings {
            base,
            others: self.endpoints.iter().skip(1).cloned().collect(),
            balance: match self.balance {
                crate::spec::BalanceSpec::LeastOutstanding => client::Balance::LeastOutstanding,
                crate::spec::BalanceSpec::RoundRobin => client::Balance::RoundRobin,
            },
            model: self.served_name.clone(),
            api: match w.api {
                ApiSpec::Completions => client::Api::Completions,
                ApiSpec::Chat => client::Api::Chat,
            },
            dialect: match self.spec.engine.kind {
                EngineKind::LlamaCpp => client::ClientDialect::LlamaCpp,
                EngineKind::Openai => client::ClientDialect::Hosted,
                _ => client::ClientDialect::Serving,
            },
            key,
            stall: w.stall_timeout.0,
            ignore_eos: w.ignore_eos,
            pool,
            adapters: w
                .adapters
                .iter()
                .flatten()
                .map(|(n, w)| (n.clone(), *w))
                .collect(),
            adapter_seed: w.seed,
            temperature: w.temperature,
        }
    }

    /// The maker of `workload.images`, when the spec asks for images.
    pub fn images(&self) -> Option<std::sync::Arc<dyn client::Attach>> {
        let images = self.spec.workload.images?;
        let maker = crate::images::Maker::new(images, self.spec.model.image_limit);
        Some(std::sync::Arc::new(maker))
    }

    /// This engine's plan, expanded for the limits its server reports (the cells of a
    /// variant are not yet prefixed with its name).
    pub fn plan(&self, limits: Limits) -> Plan {
        crate::plan::expand_for(&self.spec, &crate::plan::sim::rates_for, limits)
    }

    /// A warning when the server reports another version than the spec says.
    pub fn version_warning(&self, reported: Option<&str>) -> Option<String> {
        match (&self.version, reported) {
            (Some(want), Some(got)) if want != got => Some(format!(
                "the spec says engine version {want}, the server reports {got}"
            )),
            _ => None,
        }
    }
}

/// `url` with its port moved on by `offset` (replica `offset` of a launched engine); `None`
/// when it is not a URL or the port would not exist.
fn with_port(url: &str, offset: u32) -> Option<String> {
    if offset == 0 {
        return Some(url.to_string());
    }
    let u = parse_url(url).ok()?;
    let port = u16::try_from(u32::from(u.port) + offset).ok()?;
    let rest = url.split_once("://")?.1;
    let path = rest.find(['/', '?', '#']).map_or("", |i| &rest[i..]);
    Some(format!("{}://{}:{port}{path}", u.scheme, u.host))
}

#[cfg(test)]
mod tests {
    #[test]
    fn replica_urls_move_the_port() {
        let cases = [
            ("http://127.0.0.1:8000", 0, Some("http://127.0.0.1:8000")),
            ("http://127.0.0.1:8000", 2, Some("http://127.0.0.1:8002")),
            ("http://[::1]:9000/v1", 1, Some("http://[::1]:9001/v1")),
            ("http://host", 1, Some("http://host:81")),
            ("http://h:65535", 1, None),
        ];
        for (url, i, want) in cases {
            assert_eq!(super::with_port(url, i).as_deref(), want, "{url} + {i}");
        }
    }
}
