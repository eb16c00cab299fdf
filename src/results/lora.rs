//! The engine's LoRA figures over a cell's window, from vLLM's `vllm:lora_requests_info`
//! gauge (`lora` in the record, docs/results.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the engine said of its LoRA adapters during the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoraUse {
    /// Adapters the engine holds at once (its `max_lora` label: vLLM `--max-loras`).
    pub max_lora: Option<u64>,
    /// The most adapters running requests at one reading.
    pub running_adapters_max: u64,
    /// The most adapters with requests waiting at one reading.
    pub waiting_adapters_max: u64,
    /// Every adapter seen running in the window, by name.
    pub adapters_seen: Vec<String>,
    /// The readings these come from.
    pub readings: u64,
}
