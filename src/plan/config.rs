//! The run's settings resolved from the spec: what the client is told (endpoint, model,
//! API, dialect, key, limits). Nothing below the plan reads the spec for these.

use crate::client;
use crate::spec::{Api, EngineKind, Spec};

/// The client's settings for `spec`'s engine at `base`, with `pool` keep-alive connections.
pub fn client_settings(
    spec: &Spec,
    base: String,
    key: Option<client::ApiKey>,
    pool: usize,
) -> client::Settings {
    let w = &spec.workload;
    client::Settings {
        base,
        model: spec.model.served_name.clone(),
        api: match w.api {
            Api::Completions => client::Api::Completions,
            Api::Chat => client::Api::Chat,
        },
        dialect: match spec.engine.kind {
            EngineKind::LlamaCpp => client::Dialect::LlamaCpp,
            EngineKind::Openai => client::Dialect::Hosted,
            _ => client::Dialect::Serving,
        },
        key,
        stall: w.stall_timeout.0,
        ignore_eos: w.ignore_eos,
        pool,
    }
}
