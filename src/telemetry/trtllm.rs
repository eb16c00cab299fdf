//! TensorRT-LLM's `trtllm-serve` answers `/metrics` with JSON iteration statistics (with
//! `enable_iter_perf_stats` on), not Prometheus text: a list of the scheduler's iterations
//! since the last call. The latest one is read as the gauges of that moment, under `trtllm:`
//! names, so that the rest of the server view treats it like any other engine:
//!
//! | JSON (latest iteration)                          | read as                          |
//! |--------------------------------------------------|----------------------------------|
//! | `numActiveRequests`                              | `trtllm:num_active_requests`     |
//! | `numQueuedRequests`                              | `trtllm:num_queued_requests`     |
//! | `kvCacheStats.usedNumBlocks / maxNumBlocks`      | `trtllm:kv_cache_usage`          |
//! | `kvCacheStats.cacheHitRate`                      | `trtllm:kv_cache_hit_rate`       |
//!
//! and `maxNumBlocks × tokensPerBlock` is the KV cache's capacity in tokens.

use serde::Deserialize;

/// One iteration's statistics: the few fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Iteration {
    num_active_requests: Option<f64>,
    num_queued_requests: Option<f64>,
    kv_cache_stats: Option<KvStats>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvStats {
    max_num_blocks: Option<f64>,
    used_num_blocks: Option<f64>,
    tokens_per_block: Option<f64>,
    cache_hit_rate: Option<f64>,
}

/// Whether a `/metrics` body is JSON iteration statistics rather than Prometheus text.
pub fn is_iteration_stats(text: &str) -> bool {
    text.trim_start().starts_with('[')
}

/// The latest iteration of `text`, if it holds any.
fn latest(text: &str) -> Option<Iteration> {
    serde_json::from_str::<Vec<Iteration>>(text).ok()?.pop()
}

/// The latest iteration of `text` as Prometheus text under `trtllm:` names (empty when the
/// list is empty: no iteration ran since the last call, or the statistics are off).
pub fn exposition(text: &str) -> String {
    let Some(it) = latest(text) else {
        return String::new();
    };
    let kv = it.kv_cache_stats.as_ref();
    let usage = kv.and_then(|k| match (k.used_num_blocks, k.max_num_blocks) {
        (Some(used), Some(max)) if max > 0.0 => Some(used / max),
        _ => None,
    });
    [
        ("trtllm:num_active_requests", it.num_active_requests),
        ("trtllm:num_queued_requests", it.num_queued_requests),
        ("trtllm:kv_cache_usage", usage),
        (
            "trtllm:kv_cache_hit_rate",
            kv.and_then(|k| k.cache_hit_rate),
        ),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} {v}\n")))
    .collect()
}

/// The KV cache's capacity in tokens, as the latest iteration states it.
pub fn kv_tokens(text: &str) -> Option<u64> {
    let kv = latest(text)?.kv_cache_stats?;
    let tokens = kv.max_num_blocks? * kv.tokens_per_block?;
    (tokens > 0.0).then_some(tokens as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = r#"[
        {"iter": 1, "iterLatencyMS": 16.5, "gpuMemUsage": 56401920000, "numActiveRequests": 1,
         "numQueuedRequests": 0, "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 10,
         "tokensPerBlock": 32, "freeNumBlocks": 90}},
        {"iter": 2, "numActiveRequests": 6, "numQueuedRequests": 2,
         "inflightBatchingStats": {"numContextRequests": 1, "numGenRequests": 5},
         "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 45, "tokensPerBlock": 32,
         "cacheHitRate": 0.25}}
    ]"#;

    #[test]
    fn the_latest_iteration_is_read_as_gauges() {
        assert!(is_iteration_stats(STATS));
        assert!(!is_iteration_stats("vllm:num_requests_running 1\n"));
        assert_eq!(
            exposition(STATS),
            "trtllm:num_active_requests 6\ntrtllm:num_queued_requests 2\n\
             trtllm:kv_cache_usage 0.45\ntrtllm:kv_cache_hit_rate 0.25\n"
        );
        assert_eq!(kv_tokens(STATS), Some(3200));
    }

    #[test]
    fn no_iteration_or_no_stats_is_no_gauge() {
        for text in ["[]", "[{}]", "[{\"iter\": 3}]", "not json ["] {
            assert_eq!(exposition(text), "", "{text}");
            assert_eq!(kv_tokens(text), None, "{text}");
        }
        assert_eq!(
            exposition("[{\"numActiveRequests\": 2}]"),
            "trtllm:num_active_requests 2\n"
        );
    }
}
