//! The embedded simulated engine: an OpenAI-compatible server with vLLM's API surface, whose
//! timing comes from a performance model of continuous batching (see [`engine`]) rather than
//! a GPU. It is the quickstart's default engine, the test double of the integration tests
//! and a what-if tool for capacity planning.

pub mod calibrate;
pub mod engine;
pub mod kv;
pub mod profile;
pub mod tokenizer;
