//! The embedded simulated engine: an OpenAI-compatible server with vLLM's API surface, whose
//! timing comes from a performance model of continuous batching (see [`engine`]) rather than
//! a GPU. It is the quickstart's default engine, the test double of the integration tests
//! and a what-if tool for capacity planning.

pub mod api;
pub mod calibrate;
pub mod driver;
pub mod endpoints;
pub mod engine;
pub mod kv;
pub mod profile;
pub mod server;
pub mod stream;
pub mod tokenizer;

pub use server::{Dialect, Faults, Options, Sim, start};

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No built-in profile has this name.
    #[error("unknown simulator profile `{name}`; the profiles are {}", .known.join(", "))]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The built-in names.
        known: Vec<&'static str>,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl SimError {
    /// The exit code: 2 for a bad name, 3 when the engine cannot be started.
    pub fn exit_code(&self) -> i32 {
        match self {
            SimError::UnknownProfile { .. } => 2,
            SimError::Bind { .. } => 3,
        }
    }
}

/// The profile called `name`, or an error listing the known ones.
pub fn find_profile(name: &str) -> Result<profile::Profile, SimError> {
    profile::profile(name).ok_or_else(|| SimError::UnknownProfile {
        name: name.to_string(),
        known: profile::names(),
    })
}

/// The simulator options a spec asks for (`engine.kind: sim`): its profile and faults, serving
/// `model.served_name`.
pub fn options_for(spec: &crate::spec::Spec) -> Result<Options, SimError> {
    let sim = spec.engine.sim.clone().unwrap_or(crate::spec::SimEngine {
        profile: "h200-gemma-4-e2b".into(),
        reasoning_tokens: 0,
        tokens_per_chunk: 1,
        dialect: crate::spec::SimDialect::Vllm,
        faults: crate::spec::SimFaults::default(),
    });
    let mut opts = Options::new(find_profile(&sim.profile)?);
    opts.served_name.clone_from(&spec.model.served_name);
    opts.reasoning_tokens = sim.reasoning_tokens as usize;
    opts.tokens_per_chunk = sim.tokens_per_chunk.max(1) as usize;
    opts.seed = spec.workload.seed;
    opts.dialect = match sim.dialect {
        crate::spec::SimDialect::Vllm => Dialect::Vllm,
        crate::spec::SimDialect::LlamaCpp => Dialect::LlamaCpp,
    };
    opts.faults = Faults {
        failure_rate: sim.faults.failure_rate,
        disconnect_rate: sim.faults.disconnect_rate,
        stall_rate: sim.faults.stall_rate,
        die_after: sim.faults.die_after.map(|d| d.0),
    };
    Ok(opts)
}
