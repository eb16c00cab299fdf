//! The embedded simulated engine: an OpenAI-compatible server with vLLM's API surface, whose
//! timing comes from a performance model of continuous batching (see [`engine`]) rather than
//! a GPU. It is the quickstart's default engine, the test double of the integration tests
//! and a what-if tool for capacity planning.

mod api;
pub mod calibrate;
mod dialect;
mod driver;
mod endpoints;
mod engine;
mod entry;
pub mod fitted;
mod generate;
mod histogram;
mod http;
pub mod images;
mod kv;
pub mod lora;
mod metrics;
mod noise;
mod options;
#[cfg(test)]
mod parity;
pub mod profile;
mod server;
mod speculate;
mod stream;
pub mod tokenizer;

pub use options::{Faults, Options, SimDialect};
pub use server::{InProcess, Sim, start, start_threaded};
pub use speculate::Speculation;

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
    /// The twin file could not be read.
    #[error("cannot read the twin {path}: {why}")]
    Twin {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// A twin file's `[params]` cannot be read (the file is named by the caller).
    #[error("{0}")]
    TwinParams(String),
    /// A limit in a twin file's `[params]` is 0.
    #[error(
        "a limit in [params] is 0: {name}; fit the twin again (`benchspec fit`) or correct that line (at least 1)"
    )]
    TwinLimit {
        /// The parameter.
        name: &'static str,
    },
    /// A cost in a twin file's `[params]` is negative or not a number.
    #[error(
        "a cost in [params] is negative or not a number: {name} = {value}; fit the twin again (`benchspec fit`) or correct that line"
    )]
    TwinCost {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// An image of a request is not a base64 `data:` URL (answered HTTP 400).
    #[error("image {index}: the simulator reads base64 `data:` URLs only")]
    ImageUrl {
        /// Its place among the request's images, from 1.
        index: usize,
    },
    /// An image of a request is neither PNG nor JPEG (answered HTTP 400).
    #[error("image {index}: not a PNG or JPEG")]
    ImageFormat {
        /// Its place among the request's images, from 1.
        index: usize,
    },
    /// `benchspec sim --image-tokens` is neither `N` nor `patch:P`.
    #[error("`{value}` is not N or patch:P (e.g. 256, patch:28)")]
    ImageTokensArg {
        /// What was given.
        value: String,
    },
    /// `benchspec sim --acceptance` is not three probabilities.
    #[error(
        "`{value}`: give three probabilities from 0 to 1 (random, natural, code), e.g. 0.3,0.6,0.8"
    )]
    AcceptanceArg {
        /// What was given.
        value: String,
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

/// The profile called `name`, or an error listing the known ones.
pub fn find_profile(name: &str) -> Result<profile::Profile, SimError> {
    profile::profile(name).ok_or_else(|| SimError::UnknownProfile {
        name: name.to_string(),
        known: profile::names(),
    })
}
