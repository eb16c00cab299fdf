//! What the simulated engine publishes on `/metrics`: a [`Snapshot`] of its scheduler's
//! state kept by the driver after every step, rendered in Prometheus text with vLLM's names
//! (V1 engine): the request gauges, KV usage, prefix-cache and preemption counters,
//! `vllm:cache_config_info`, and the TTFT and inter-token-latency histograms with vLLM's
//! buckets, observed in real time as the tokens leave the engine.

use std::fmt::Write;

/// vLLM's `vllm:time_to_first_token_seconds` buckets.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// vLLM's `vllm:inter_token_latency_seconds` buckets.
pub const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// A Prometheus histogram: counts per bucket (not cumulative), then the overflow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// Count one observation of `secs`.
    pub fn observe(&mut self, secs: f64) {
        let i = self.bounds.partition_point(|b| *b < secs);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.sum += secs;
    }

    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count;
            let le = self
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| format!("{b:?}"));
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}.0");
        }
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}.0");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
    }
}

/// Engine state published for `/metrics`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Requests running.
    pub running: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// KV-cache usage, 0 to 1.
    pub kv_usage: f64,
    /// Prefix-cache queries, tokens.
    pub prefix_queries: u64,
    /// Prefix-cache hits, tokens.
    pub prefix_hits: u64,
    /// Prompt tokens received.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub generation_tokens: u64,
    /// Requests finished.
    pub finished: u64,
    /// Preemptions.
    pub preemptions: u64,
    /// KV blocks, as `cache_config_info` reports them.
    pub kv_blocks: u64,
    /// From a request's arrival at the engine to its first token.
    pub ttft: Histogram,
    /// Between consecutive tokens of a request.
    pub itl: Histogram,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            prefix_queries: 0,
            prefix_hits: 0,
            prompt_tokens: 0,
            generation_tokens: 0,
            finished: 0,
            preemptions: 0,
            kv_blocks: 0,
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
        }
    }
}

/// One gauge or counter: its name (without `_total`), help and value.
type Line = (&'static str, &'static str, f64);

impl Snapshot {
    /// The gauges and counters, with vLLM's names and help texts.
    fn lines(&self) -> ([Line; 3], [Line; 6]) {
        let gauges = [
            (
                "vllm:num_requests_running",
                "Number of requests in model execution batches.",
                self.running as f64,
            ),
            (
                "vllm:num_requests_waiting",
                "Number of requests waiting to be processed.",
                self.waiting as f64,
            ),
            (
                "vllm:kv_cache_usage_perc",
                "KV-cache usage. 1 means 100 percent usage.",
                self.kv_usage,
            ),
        ];
        let counters = [
            (
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
                self.prefix_queries as f64,
            ),
            (
                "vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.",
                self.prefix_hits as f64,
            ),
            (
                "vllm:prompt_tokens",
                "Number of prefill tokens processed.",
                self.prompt_tokens as f64,
            ),
            (
                "vllm:generation_tokens",
                "Number of generation tokens processed.",
                self.generation_tokens as f64,
            ),
            (
                "vllm:num_preemptions",
                "Cumulative number of preemption from the engine.",
                self.preemptions as f64,
            ),
            (
                "vllm:request_success",
                "Count of successfully processed requests.",
                self.finished as f64,
            ),
        ];
        (gauges, counters)
    }

    /// This state as `trtllm-serve` answers `/metrics`: JSON iteration statistics, here the
    /// latest iteration alone, with the fields benchspec reads (the real one lists every
    /// iteration since the last call, with more fields).
    pub fn trtllm_iterations(&self) -> serde_json::Value {
        let blocks = self.kv_blocks;
        let used = (self.kv_usage * blocks as f64).round() as u64;
        let hit_rate = if self.prefix_queries > 0 {
            self.prefix_hits as f64 / self.prefix_queries as f64
        } else {
            0.0
        };
        serde_json::json!([{
            "numActiveRequests": self.running,
            "numQueuedRequests": self.waiting,
            "kvCacheStats": {
                "maxNumBlocks": blocks,
                "usedNumBlocks": used,
                "freeNumBlocks": blocks.saturating_sub(used),
                "tokensPerBlock": super::kv::BLOCK_TOKENS,
                "cacheHitRate": hit_rate,
            },
        }])
    }

    /// The Prometheus text of this state with SGLang's names (no KV capacity: SGLang states
    /// it in `/get_server_info`).
    pub fn render_sglang(&self, model_name: &str) -> String {
        let hit = if self.prefix_queries > 0 {
            self.prefix_hits as f64 / self.prefix_queries as f64
        } else {
            0.0
        };
        let mut out = String::new();
        for (name, help, value) in [
            (
                "sglang:num_running_reqs",
                "The number of running requests.",
                self.running as f64,
            ),
            (
                "sglang:num_queue_reqs",
                "The number of requests in the waiting queue.",
                self.waiting as f64,
            ),
            ("sglang:token_usage", "The token usage.", self.kv_usage),
            ("sglang:cache_hit_rate", "The prefix cache hit rate.", hit),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{model_name=\"{model_name}\"}} {value:?}"
            );
        }
        out
    }

    /// The exposition with vLLM's names, every sample labelled with `model_name`.
    pub fn render(&self, model_name: &str) -> String {
        let labels = format!("engine=\"0\",model_name=\"{model_name}\"");
        let mut out = String::new();
        let (gauges, counters) = self.lines();
        let kinds = gauges
            .iter()
            .map(|g| (g, "gauge", ""))
            .chain(counters.iter().map(|c| (c, "counter", "_total")));
        for ((name, help, value), kind, suffix) in kinds {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{suffix}{{{labels}}} {value:?}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{{block_size=\"{}\",engine=\"0\",num_gpu_blocks=\"{}\",enable_prefix_caching=\"True\"}} 1.0",
            super::kv::BLOCK_TOKENS,
            self.kv_blocks
        );
        self.ttft.render(
            &mut out,
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            &labels,
        );
        self.itl.render(
            &mut out,
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            &labels,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_count_into_vllm_buckets() {
        let mut h = Histogram::new(TTFT_BUCKETS);
        h.observe(0.001); // on a bound: counted in it (le)
        h.observe(0.03);
        h.observe(9999.0);
        let mut out = String::new();
        h.render(&mut out, "t", "help", "a=\"b\"");
        assert!(out.contains("t_bucket{a=\"b\",le=\"0.001\"} 1.0"), "{out}");
        assert!(out.contains("t_bucket{a=\"b\",le=\"0.02\"} 1.0"), "{out}");
        assert!(out.contains("t_bucket{a=\"b\",le=\"0.04\"} 2.0"), "{out}");
        assert!(out.contains("t_bucket{a=\"b\",le=\"2560.0\"} 2.0"), "{out}");
        assert!(out.contains("t_bucket{a=\"b\",le=\"+Inf\"} 3.0"), "{out}");
        assert!(out.contains("t_count{a=\"b\"} 3.0"), "{out}");
    }
}
