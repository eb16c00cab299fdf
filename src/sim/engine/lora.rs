//! The scheduler's LoRA views: the adapters of its running and waiting requests
//! (`sim::lora`'s slots and `vllm:lora_requests_info`).

use super::{ReqId, Scheduler};

impl Scheduler {
    /// The adapters of the running requests.
    pub fn running_adapters(&self) -> Vec<usize> {
        self.adapters_of(self.running.iter())
    }

    /// The adapters of the waiting requests.
    pub fn waiting_adapters(&self) -> Vec<usize> {
        self.adapters_of(self.waiting.iter())
    }

    fn adapters_of<'a>(&self, ids: impl Iterator<Item = &'a ReqId>) -> Vec<usize> {
        ids.filter_map(|id| self.reqs.get(id)?.adapter).collect()
    }
}
