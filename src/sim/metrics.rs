//! What the simulated engine publishes on `/metrics`: a [`Snapshot`] of its scheduler's
//! state kept by the driver after every step, rendered in Prometheus text with vLLM's names,
//! types, label names and units (V1 engine, held to a real vLLM 0.32's exposition in
//! `parity_tests`): the request gauges, KV usage (0–1), prefix-cache, prompt, generation,
//! preemption and finished-request counters, `vllm:cache_config_info`, and the TTFT,
//! inter-token, per-request time-per-output-token, end-to-end and queue-time histograms
//! (seconds, vLLM's buckets), observed in real time as the tokens leave the engine.

use super::histogram::{Histogram, ITL_BUCKETS, REQUEST_BUCKETS, TTFT_BUCKETS, label_set};
use std::fmt::Write;

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
    /// Requests finished (at their limit or on their own).
    pub finished: u64,
    /// Of those, the ones that stopped at their limit (`finished_reason="length"`).
    pub finished_length: u64,
    /// Preemptions.
    pub preemptions: u64,
    /// KV blocks, as `cache_config_info` reports them.
    pub kv_blocks: u64,
    /// Tokens per KV block, as `cache_config_info` reports them.
    pub block_size: usize,
    /// From a request's arrival at the API server to its first token (vLLM's TTFT counts
    /// from the request's arrival, its API server's time included).
    pub ttft: Histogram,
    /// Between consecutive tokens of a request.
    pub itl: Histogram,
    /// Per finished request: its decode time over its tokens after the first.
    pub tpot: Histogram,
    /// Per finished request: from its arrival at the API server to its last token.
    pub e2e: Histogram,
    /// Per request: from entering the engine's queue to being scheduled.
    pub queue: Histogram,
    /// The LoRA lines (`super::lora`), rendered when the engine's state is published.
    pub lora: String,
    /// Speculative decoding's counters, when the engine speculates.
    pub spec: Option<super::speculate::SpecCounters>,
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
            finished_length: 0,
            preemptions: 0,
            kv_blocks: 0,
            block_size: super::kv::BLOCK_TOKENS,
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            tpot: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(REQUEST_BUCKETS),
            lora: String::new(),
            queue: Histogram::new(REQUEST_BUCKETS),
            spec: None,
        }
    }
}

/// vLLM's speculative-decoding counters, labelled as vLLM 0.32 labels them (the
/// per-position counter with `position` last).
fn render_spec(out: &mut String, c: &super::speculate::SpecCounters, set: &str, model: &str) {
    for (name, help, value) in [
        (
            "vllm:spec_decode_num_drafts_total",
            "Number of spec decoding drafts.",
            c.drafts,
        ),
        (
            "vllm:spec_decode_num_draft_tokens_total",
            "Number of draft tokens.",
            c.draft_tokens,
        ),
        (
            "vllm:spec_decode_num_accepted_tokens_total",
            "Number of accepted tokens.",
            c.accepted,
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name}{set} {:?}",
            value as f64
        );
    }
    let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    let _ = writeln!(
        out,
        "# HELP {name} Accepted tokens per draft position.\n# TYPE {name} counter"
    );
    for (i, v) in c.per_position.iter().enumerate() {
        let pos = i.to_string();
        let labels = label_set(&[("engine", "0"), ("model_name", model), ("position", &pos)]);
        let _ = writeln!(out, "{name}{labels} {:?}", *v as f64);
    }
}

/// One gauge or counter: its name (a counter's with `_total`, as vLLM's Prometheus client
/// names it in `# TYPE`), help and value.
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
                "vllm:prefix_cache_queries_total",
                "Prefix cache queries, in terms of number of queried tokens.",
                self.prefix_queries as f64,
            ),
            (
                "vllm:prefix_cache_hits_total",
                "Prefix cache hits, in terms of number of cached tokens.",
                self.prefix_hits as f64,
            ),
            (
                "vllm:prompt_tokens_total",
                "Number of prefill tokens processed.",
                self.prompt_tokens as f64,
            ),
            (
                "vllm:generation_tokens_total",
                "Number of generation tokens processed.",
                self.generation_tokens as f64,
            ),
            (
                "vllm:num_preemptions_total",
                "Cumulative number of preemption from the engine.",
                self.preemptions as f64,
            ),
            (
                "vllm:prompt_tokens_cached_total",
                "Number of cached prompt tokens (local + external).",
                self.prefix_hits as f64,
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
                "tokensPerBlock": self.block_size,
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

    /// The exposition with vLLM's names, every sample labelled with `engine` and
    /// `model_name` (`cache_config_info` with `engine` alone), as vLLM 0.32 serves it.
    pub fn render(&self, model_name: &str) -> String {
        let labels = [("engine", "0"), ("model_name", model_name)];
        let set = label_set(&labels);
        let mut out = String::new();
        let (gauges, counters) = self.lines();
        let kinds = gauges
            .iter()
            .map(|g| (g, "gauge"))
            .chain(counters.iter().map(|c| (c, "counter")));
        for ((name, help, value), kind) in kinds {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{set} {value:?}"
            );
        }
        self.render_success(&mut out, &labels);
        out.push_str(&self.lora);
        if let Some(c) = &self.spec {
            render_spec(&mut out, c, &set, model_name);
        }
        let (blocks, block) = (self.kv_blocks.to_string(), self.block_size.to_string());
        let info = label_set(&[
            ("block_size", &block),
            ("enable_prefix_caching", "True"),
            ("engine", "0"),
            ("num_gpu_blocks", &blocks),
        ]);
        let _ = writeln!(
            out,
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{info} 1.0"
        );
        for (h, name, help) in [
            (
                &self.ttft,
                "vllm:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.",
            ),
            (
                &self.itl,
                "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
            ),
            (
                &self.tpot,
                "vllm:request_time_per_output_token_seconds",
                "Histogram of time_per_output_token_seconds per request.",
            ),
            (
                &self.e2e,
                "vllm:e2e_request_latency_seconds",
                "Histogram of e2e request latency in seconds.",
            ),
            (
                &self.queue,
                "vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.",
            ),
        ] {
            h.render(&mut out, name, help, &labels);
        }
        out
    }

    /// `vllm:request_success_total` by `finished_reason`, every reason vLLM lists (the
    /// simulator's requests end at their limit or on their own; none is aborted: a request
    /// whose client went away is not counted).
    fn render_success(&self, out: &mut String, labels: &[(&str, &str)]) {
        let name = "vllm:request_success_total";
        let _ = writeln!(
            out,
            "# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter"
        );
        let stop = self.finished.saturating_sub(self.finished_length);
        for (reason, n) in [
            ("stop", stop),
            ("length", self.finished_length),
            ("abort", 0),
            ("error", 0),
            ("repetition", 0),
        ] {
            let mut with = labels.to_vec();
            with.push(("finished_reason", reason));
            let _ = writeln!(out, "{name}{} {n}.0", label_set(&with));
        }
    }
}
