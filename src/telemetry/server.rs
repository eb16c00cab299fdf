//! The engine seen from inside: its Prometheus `/metrics`, scraped once before a cell, every
//! `telemetry.interval` during it (and at the window's edges), and once after, reduced to the
//! record's `server` fields with each engine's own metric names — vLLM's (current and older
//! names), SGLang's and llama.cpp's.

use super::prom::{self, Scrape};
use crate::results::stats::round;
use crate::results::{Bucket, ServerUse};
use std::time::Duration;
use tokio::time::Instant;

/// How long after a window opens the scrape it asked for may answer and still count as the
/// window's start.
pub(super) const OPENING: Duration = Duration::from_millis(250);

/// One engine family's metric names.
#[derive(Debug)]
pub struct Names {
    /// The family, as records write it in `server.source`.
    pub source: &'static str,
    /// The prefix that identifies it.
    prefix: &'static str,
    running: &'static [&'static str],
    waiting: &'static [&'static str],
    kv_usage: &'static [&'static str],
    prefix_queries: &'static [&'static str],
    prefix_hits: &'static [&'static str],
    /// Prompt tokens computed rather than found cached, where the engine counts those
    /// instead of lookups (llama.cpp): the lookups are these and the hits together.
    prompt_computed: &'static [&'static str],
    /// A hit-rate gauge, where the engine gives a rate rather than counters.
    hit_rate: &'static [&'static str],
    preemptions: &'static [&'static str],
    ttft: &'static [&'static str],
    itl: &'static [&'static str],
}

/// The engines whose names are known.
pub const FAMILIES: [Names; 4] = [
    Names {
        source: "vllm",
        prefix: "vllm:",
        running: &["vllm:num_requests_running"],
        waiting: &["vllm:num_requests_waiting"],
        kv_usage: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        prefix_queries: &[
            "vllm:prefix_cache_queries_total",
            "vllm:gpu_prefix_cache_queries_total",
        ],
        prefix_hits: &[
            "vllm:prefix_cache_hits_total",
            "vllm:gpu_prefix_cache_hits_total",
        ],
        prompt_computed: &[],
        hit_rate: &["vllm:gpu_prefix_cache_hit_rate"],
        preemptions: &["vllm:num_preemptions_total"],
        ttft: &["vllm:time_to_first_token_seconds"],
        itl: &[
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",
        ],
    },
    Names {
        source: "sglang",
        prefix: "sglang:",
        running: &["sglang:num_running_reqs"],
        waiting: &["sglang:num_queue_reqs"],
        kv_usage: &["sglang:token_usage"],
        prefix_queries: &[],
        prefix_hits: &[],
        prompt_computed: &[],
        hit_rate: &["sglang:cache_hit_rate"],
        preemptions: &["sglang:num_retracted_reqs_total"],
        ttft: &["sglang:time_to_first_token_seconds"],
        itl: &[
            "sglang:inter_token_latency_seconds",
            "sglang:time_per_output_token_seconds",
        ],
    },
    Names {
        source: "llamacpp",
        prefix: "llamacpp:",
        running: &["llamacpp:requests_processing"],
        waiting: &["llamacpp:requests_deferred"],
        kv_usage: &["llamacpp:kv_cache_usage_ratio"],
        prefix_queries: &[],
        prefix_hits: &["llamacpp:prompt_tokens_cached_total"],
        prompt_computed: &["llamacpp:prompt_tokens_total"],
        hit_rate: &[],
        preemptions: &[],
        ttft: &[],
        itl: &[],
    },
    // trtllm-serve's JSON iteration statistics as `trtllm.rs` reads them, and the histograms
    // of its Prometheus metrics where they are served under `trtllm:` names (by Dynamo).
    Names {
        source: "trtllm",
        prefix: "trtllm:",
        running: &["trtllm:num_active_requests"],
        waiting: &["trtllm:num_queued_requests"],
        kv_usage: &["trtllm:kv_cache_usage"],
        prefix_queries: &[],
        prefix_hits: &[],
        prompt_computed: &[],
        hit_rate: &["trtllm:kv_cache_hit_rate"],
        preemptions: &[],
        ttft: &["trtllm:time_to_first_token_seconds"],
        itl: &["trtllm:time_per_output_token_seconds"],
    },
];

/// Whether a sample called `name` is one a cell reads (a histogram's `_bucket`, `_sum` and
/// `_count` lines included).
pub fn wanted(name: &str) -> bool {
    let base = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    name == "vllm:cache_config_info"
        || name == super::lora::NAME
        || super::spec::wanted(name)
        || FAMILIES.iter().any(|f| {
            [
                f.running,
                f.waiting,
                f.kv_usage,
                f.prefix_queries,
                f.prefix_hits,
                f.prompt_computed,
                f.hit_rate,
                f.preemptions,
                f.ttft,
                f.itl,
            ]
            .iter()
            .any(|names| names.contains(&name) || names.contains(&base))
        })
}

/// The family whose names `scrape` uses.
pub fn family(scrape: &Scrape) -> Option<&'static Names> {
    FAMILIES.iter().find(|f| scrape.has_prefix(f.prefix))
}

/// The KV-cache capacity in tokens that vLLM states in `cache_config_info`.
pub fn vllm_kv_tokens(scrape: &Scrape) -> Option<u64> {
    let num = |key: &str| -> Option<u64> {
        scrape
            .label("vllm:cache_config_info", key)?
            .parse::<f64>()
            .ok()
            .map(|v| v as u64)
    };
    Some(num("num_gpu_blocks")? * num("block_size")?)
}

/// What the scrapes of a cell say.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The record's fields.
    pub server: ServerUse,
    /// Mean of the waiting requests in the window.
    pub waiting_mean: f64,
    /// Scrapes the gauges were read from.
    pub scrapes: usize,
    /// The engine's LoRA figures (vLLM's `lora_requests_info`), where it has them.
    pub lora: Option<crate::results::LoraUse>,
    /// Speculative decoding's counts over the window, where the engine counts them.
    pub spec: Option<crate::results::SpecCounts>,
}

/// A cell's scrapes: the one before it, those during it, the one after it.
#[derive(Debug)]
pub struct Scrapes {
    /// Before the cell started.
    pub before: Scrape,
    /// During it, in order.
    pub during: Vec<Scrape>,
    /// After it ended.
    pub after: Scrape,
}

/// The gauge `names` in every scrape of `scrapes`, in order.
fn gauge(scrapes: &[&Scrape], names: &[&str]) -> Vec<f64> {
    scrapes.iter().filter_map(|s| s.sum(names)).collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// A counter's increase from `a` to `b` (a reset counts from zero).
fn increase(a: &Scrape, b: &Scrape, names: &[&str]) -> Option<f64> {
    let later = b.sum(names)?;
    let earlier = a.sum(names).unwrap_or(0.0);
    Some(if later >= earlier {
        later - earlier
    } else {
        later
    })
}

/// A histogram's p50 over what it observed from `a` to `b`, in ms, and the bucket it lies
/// in. Where nine in ten observations or more fell in the lowest bucket, interpolating would
/// only say "half its bound" (5 ms for vLLM's ITL, whatever the truth): the histogram's own
/// mean (sum / count) stands in, which for such a tight distribution is close to its median.
fn p50_ms(a: &Scrape, b: &Scrape, names: &[&str]) -> Option<(f64, Bucket)> {
    let name = names.iter().find(|n| b.buckets(n).is_some())?;
    let d = prom::delta(&b.buckets(name)?, a.buckets(name).as_ref());
    let (first, total) = (d.first()?, d.last()?.1);
    let p50 = prom::quantile(&d, 0.5)?;
    let (low, high) = prom::bucket(&d, 0.5)?;
    let secs = if p50 <= first.0 && first.1 >= 0.9 * total {
        let sum = format!("{name}_sum");
        increase(a, b, &[&sum])
            .map(|s| (s / total).clamp(0.0, first.0))
            .unwrap_or(p50)
    } else {
        p50
    };
    let bucket = Bucket {
        low_ms: round(low * 1000.0, 3),
        high_ms: high.is_finite().then(|| round(high * 1000.0, 3)),
    };
    Some((round(secs * 1000.0, 2), bucket))
}

impl Scrapes {
    /// The record's `server` fields over the window `open..close`; `None` when the engine's
    /// names are unknown. Gauges are read from the scrapes inside the window, counters over
    /// the cell, histograms from the last scrape at or before the window opened to the first
    /// at or after it closed. What nothing measured is absent, never zero: the gauges when no
    /// scrape fell inside the window (a prefill cell's window of milliseconds — the scrapes
    /// around it saw an idle engine, not the cell), a histogram that observed nothing new.
    pub fn summarize(&self, open: Instant, close: Instant) -> Option<Seen> {
        self.summarize_from(open, close, open)
    }

    /// [`Scrapes::summarize`], the gauges read only from scrapes answered at or after
    /// `gauges_from` (a cell whose load starts when its window opens: a scrape in its first
    /// moments reads the engine before the first request reached it).
    pub fn summarize_from(
        &self,
        open: Instant,
        close: Instant,
        gauges_from: Instant,
    ) -> Option<Seen> {
        let names = family(&self.after).or_else(|| family(&self.before))?;
        let all: Vec<&Scrape> = std::iter::once(&self.before)
            .chain(&self.during)
            .chain(std::iter::once(&self.after))
            .collect();
        let inside: Vec<&Scrape> = all
            .iter()
            .copied()
            .filter(|s| s.at >= open.max(gauges_from) && s.at <= close)
            .collect();
        // The scrape the window's opening asks for answers a moment after it: that is where
        // the window's counters start (else a cell's warm-up would count as its own) — but
        // never at or after the close: a window shorter than `OPENING` (a prefill request, a
        // fast session cell) starts at the last scrape before its close.
        let start = open + OPENING;
        let from = all
            .iter()
            .rev()
            .find(|s| s.at <= start && s.at < close)
            .unwrap_or(&all[0]);
        let to = all
            .iter()
            .find(|s| s.at >= close)
            .unwrap_or(&all[all.len() - 1]);
        let running = gauge(&inside, names.running);
        let waiting = gauge(&inside, names.waiting);
        // Over the window, as the histograms: a cell's cold warm-up is not its hit rate.
        let queries = increase(from, to, names.prefix_queries).or_else(|| {
            Some(
                increase(from, to, names.prompt_computed)? + increase(from, to, names.prefix_hits)?,
            )
        });
        let hit_rate = match queries {
            Some(q) if q > 0.0 => increase(from, to, names.prefix_hits).map(|h| h / q),
            _ => mean(&gauge(&inside, names.hit_rate)),
        };
        let ttft = p50_ms(from, to, names.ttft);
        let itl = p50_ms(from, to, names.itl);
        let server = ServerUse {
            running_mean: mean(&running).map(|v| round(v, 2)),
            running_max: max(&running),
            waiting_max: max(&waiting),
            kv_usage_max: max(&gauge(&inside, names.kv_usage)).map(|v| round(v, 4)),
            prefix_hit_rate: hit_rate.map(|v| round(v, 4)),
            preemptions: increase(&self.before, &self.after, names.preemptions),
            ttft_ms_p50: ttft.map(|t| t.0),
            ttft_ms_p50_bucket: ttft.map(|t| t.1),
            itl_ms_p50: itl.map(|t| t.0),
            itl_ms_p50_bucket: itl.map(|t| t.1),
            source: names.source.to_string(),
        };
        // The LoRA gauge over the window: from the scrape that opened it to the one that
        // closed it (a series set after the first was set inside the window).
        let window: Vec<&Scrape> = std::iter::once(*from)
            .chain(inside.iter().copied())
            .chain(std::iter::once(*to))
            .collect();
        let lora = super::lora::read(&window);
        Some(Seen {
            server,
            waiting_mean: mean(&waiting).unwrap_or(0.0),
            scrapes: running.len(),
            lora,
            spec: super::spec::counts(from, to),
        })
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
