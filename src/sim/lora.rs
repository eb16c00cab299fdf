//! LoRA adapters on the simulated engine, as vLLM serves them with `--enable-lora
//! --lora-modules NAME=PATH ... --max-loras N`. The rule (docs/spec.md, `engine.sim.lora`):
//!
//! - `/v1/models` lists each adapter after the base model (`parent`: the base), and a
//!   request whose `model` is an adapter runs on it; any other name is vLLM's 404.
//! - At most `max_loras` adapters are resident. A waiting request whose adapter is resident
//!   is scheduled as any other. One whose adapter is not takes a free slot, or else the slot
//!   of the least recently used adapter that no running request uses; loading it adds
//!   `load` to that step's time and counts one load. When every slot's adapter is in use by
//!   a running request, the request stays waiting and the scheduler goes on down the queue
//!   (as vLLM's skips requests over its LoRA budget), taking it again in its place later.
//! - Prefix-cache blocks belong to their adapter: the same prompt on two adapters shares no
//!   block (vLLM keys a block's hash with its LoRA).
//! - `/metrics` has vLLM's `vllm:lora_requests_info` gauge (labels `max_lora`,
//!   `running_lora_adapters`, `waiting_lora_adapters`: the adapters of running and waiting
//!   requests, comma-separated; its value the time of the reading) and the simulator's own
//!   counters `benchspec_sim:lora_requests_total{lora_name}` (requests submitted per adapter)
//!   and `benchspec_sim:lora_loads_total` — what tests hold records against.

use std::fmt::Write;

/// The adapters served and the cost of the slots.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraOptions {
    /// The adapters' names, in the order `/v1/models` lists them.
    pub adapters: Vec<String>,
    /// Resident slots (vLLM `--max-loras`), at least 1.
    pub max_loras: usize,
    /// Engine seconds to load an adapter that is not resident.
    pub load_s: f64,
}

/// Every label set (running adapters, waiting adapters) `lora_requests_info` was set with,
/// and when it was last set.
#[derive(Debug, Clone, Default)]
pub struct InfoSeries(std::collections::BTreeMap<(String, String), f64>);

/// The engine's adapter slots and counters.
#[derive(Debug, Clone)]
pub struct Slots {
    opts: LoraOptions,
    /// Resident adapters with the step count of their last use.
    resident: Vec<(usize, u64)>,
    tick: u64,
    /// Adapters loaded so far.
    pub loads: u64,
    /// Requests submitted so far, adapter by adapter.
    pub requests: Vec<u64>,
}

impl Slots {
    /// Empty slots for `opts`.
    pub fn new(opts: &LoraOptions) -> Slots {
        Slots {
            requests: vec![0; opts.adapters.len()],
            opts: LoraOptions {
                max_loras: opts.max_loras.max(1),
                ..opts.clone()
            },
            resident: Vec::new(),
            tick: 0,
            loads: 0,
        }
    }

    /// The adapter called `name`, by its place in the list.
    pub fn find(opts: &LoraOptions, name: &str) -> Option<usize> {
        opts.adapters.iter().position(|a| a == name)
    }

    /// Whether a request on `adapter` can be scheduled while `busy` adapters have running
    /// requests: it is resident, a slot is free, or a resident one is idle.
    pub fn fits(&self, adapter: usize, busy: &[usize]) -> bool {
        self.resident.iter().any(|(a, _)| *a == adapter)
            || self.resident.len() < self.opts.max_loras
            || self.resident.iter().any(|(a, _)| !busy.contains(a))
    }

    /// Schedule a request on `adapter` (after [`Slots::fits`]): the engine seconds it costs
    /// (a load, or nothing when resident).
    pub fn take(&mut self, adapter: usize, busy: &[usize]) -> f64 {
        self.tick += 1;
        if let Some(slot) = self.resident.iter_mut().find(|(a, _)| *a == adapter) {
            slot.1 = self.tick;
            return 0.0;
        }
        if self.resident.len() >= self.opts.max_loras {
            let idle = self
                .resident
                .iter()
                .enumerate()
                .filter(|(_, (a, _))| !busy.contains(a))
                .min_by_key(|(_, (_, used))| *used)
                .map(|(i, _)| i);
            if let Some(i) = idle {
                self.resident.remove(i);
            }
        }
        self.resident.push((adapter, self.tick));
        self.loads += 1;
        self.opts.load_s
    }

    /// `/metrics` lines: vLLM's `lora_requests_info` — the series of the adapters of
    /// `running` and `waiting` requests set to `now_s` (seconds since the epoch) in `seen`,
    /// and every series set before, as a Prometheus gauge keeps each label set it was ever
    /// set with at its last value — and the simulator's counters.
    pub fn render(
        &self,
        running: &[usize],
        waiting: &[usize],
        now_s: f64,
        seen: &mut InfoSeries,
    ) -> String {
        let names = |list: &[usize]| {
            let mut v: Vec<&str> = list
                .iter()
                .filter_map(|a| self.opts.adapters.get(*a).map(String::as_str))
                .collect();
            v.sort_unstable();
            v.dedup();
            v.join(",")
        };
        seen.0.insert((names(running), names(waiting)), now_s);
        let mut out = String::from(
            "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n",
        );
        for ((run, wait), at) in &seen.0 {
            let _ = writeln!(
                out,
                "vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{run}\",waiting_lora_adapters=\"{wait}\"}} {at:?}",
                self.opts.max_loras
            );
        }
        out.push_str("# HELP benchspec_sim:lora_requests_total Requests submitted, per adapter (the simulator's own count).\n# TYPE benchspec_sim:lora_requests_total counter\n");
        for (name, n) in self.opts.adapters.iter().zip(&self.requests) {
            let _ = writeln!(
                out,
                "benchspec_sim:lora_requests_total{{lora_name=\"{name}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP benchspec_sim:lora_loads_total Adapters loaded into a slot (the simulator's own count).\n# TYPE benchspec_sim:lora_loads_total counter\nbenchspec_sim:lora_loads_total {}",
            self.loads
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(max_loras: usize) -> Slots {
        Slots::new(&LoraOptions {
            adapters: vec!["a".into(), "b".into(), "c".into()],
            max_loras,
            load_s: 0.05,
        })
    }

    /// One slot, requests a b a c one at a time: four loads; three slots: three, then none.
    #[test]
    fn loads_follow_the_slots_and_least_recent_use() {
        let mut one = slots(1);
        let costs: Vec<f64> = [0, 1, 0, 2].iter().map(|a| one.take(*a, &[])).collect();
        assert_eq!(costs, [0.05; 4]);
        assert_eq!(one.loads, 4);
        let mut three = slots(3);
        for a in [0, 1, 0, 2, 1, 2, 0] {
            three.take(a, &[]);
        }
        assert_eq!(three.loads, 3);
        // Two slots holding a (used last) and b: c evicts b, the least recently used.
        let mut two = slots(2);
        for a in [1, 0, 2] {
            two.take(a, &[]);
        }
        assert_eq!(two.take(0, &[]), 0.0, "a stayed");
        assert_eq!(two.take(1, &[]), 0.05, "b was evicted");
    }

    #[test]
    fn a_busy_slot_is_not_taken() {
        let mut one = slots(1);
        one.take(0, &[]);
        assert!(!one.fits(1, &[0]), "a runs: b waits");
        assert!(one.fits(0, &[0]), "a again: runs");
        assert!(one.fits(1, &[]), "a idle: b may evict it");
        let mut seen = InfoSeries::default();
        let text = one.render(&[0], &[1, 1], 5.0, &mut seen);
        assert!(text.contains(
            "{max_lora=\"1\",running_lora_adapters=\"a\",waiting_lora_adapters=\"b\"} 5.0"
        ));
        // Later, b runs and nothing waits: both series are there, each at its last time,
        // as vLLM's gauge keeps every label set it was set with.
        let text = one.render(&[1], &[], 7.0, &mut seen);
        assert!(text.contains("running_lora_adapters=\"a\",waiting_lora_adapters=\"b\"} 5.0"));
        assert!(text.contains("running_lora_adapters=\"b\",waiting_lora_adapters=\"\"} 7.0"));
        let text = one.render(&[0], &[1], 9.0, &mut seen);
        assert!(text.contains("running_lora_adapters=\"a\",waiting_lora_adapters=\"b\"} 9.0"));
        assert_eq!(
            text.matches("vllm:lora_requests_info{").count(),
            2,
            "{text}"
        );
        assert!(text.contains("benchspec_sim:lora_loads_total 1"));
    }
}
