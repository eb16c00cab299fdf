//! LoRA adapters sharing one base model (docs/spec.md): the mix a run spreads its requests
//! over (`workload.adapters`), and the adapters the simulated engine serves
//! (`engine.sim.lora`).

use super::units::Span;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// `workload.adapters`: adapter name (a `model` the server lists in `/v1/models`) → its
/// weight in the mix. Each request picks one, drawn with `workload.seed`, in proportion to
/// the weights.
pub type Adapters = BTreeMap<String, f64>;

/// The LoRA adapters the simulated engine serves, as vLLM with `--enable-lora
/// --lora-modules NAME=PATH ... --max-loras N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimLora {
    /// The adapters' names, listed by `/v1/models` beside the base model.
    #[schemars(length(min = 1))]
    pub adapters: Vec<String>,
    /// Adapters resident at once (vLLM `--max-loras`): a request for another waits until a
    /// slot's adapter has no running request, which is then evicted (least recently used).
    #[serde(default = "one_slot")]
    #[schemars(range(min = 1))]
    pub max_loras: u32,
    /// Engine time to load an adapter that is not resident.
    #[serde(default = "default_load")]
    pub load: Span,
}

fn one_slot() -> u32 {
    1
}

fn default_load() -> Span {
    Span(Duration::from_millis(50))
}
