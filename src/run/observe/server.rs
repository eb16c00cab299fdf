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
const OPENING: Duration = Duration::from_millis(250);

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
        let names = family(&self.after).or_else(|| family(&self.before))?;
        let all: Vec<&Scrape> = std::iter::once(&self.before)
            .chain(&self.during)
            .chain(std::iter::once(&self.after))
            .collect();
        let inside: Vec<&Scrape> = all
            .iter()
            .copied()
            .filter(|s| s.at >= open && s.at <= close)
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
        Some(Seen {
            server,
            waiting_mean: mean(&waiting).unwrap_or(0.0),
            scrapes: running.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64, text: &str) -> Scrape {
        Scrape::new(base + Duration::from_millis(ms), text)
    }

    fn vllm(running: u32, waiting: u32, preempt: u32, ttft: [u32; 3]) -> String {
        format!(
            "vllm:num_requests_running{{e=\"0\"}} {running}\nvllm:num_requests_waiting {waiting}\n\
             vllm:kv_cache_usage_perc 0.5\nvllm:num_preemptions_total {preempt}\n\
             vllm:prefix_cache_queries_total {}\nvllm:prefix_cache_hits_total {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.01\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {}\n",
            preempt * 100,
            preempt * 25,
            ttft[0],
            ttft[1],
            ttft[2]
        )
    }

    /// A window shorter than the opening's grace (a 196 ms session cell on real vLLM): its
    /// edge scrapes answer 3 ms after each edge, both before open + 250 ms. The counters and
    /// the histogram run from the opening's scrape to the closing's, not from the closing's
    /// to itself (which read nothing: no hit rate, no TTFT).
    #[test]
    fn a_window_shorter_than_the_opening_grace_keeps_its_counters() {
        let t = Instant::now();
        let s = Scrapes {
            before: at(t, 0, &vllm(0, 0, 1, [5, 5, 5])),
            during: vec![
                at(t, 3, &vllm(2, 0, 1, [5, 5, 5])),
                at(t, 199, &vllm(0, 0, 3, [5, 7, 7])),
            ],
            after: at(t, 205, &vllm(0, 0, 3, [5, 7, 7])),
        };
        let ms = |v| t + Duration::from_millis(v);
        let u = s.summarize(ms(0), ms(196)).unwrap().server;
        // 50 more hits of 200 more queries; two new TTFTs in (10, 100] ms: p50 at 55 ms.
        assert_eq!(u.prefix_hit_rate, Some(0.25), "{u:#?}");
        assert_eq!(u.ttft_ms_p50, Some(55.0), "{u:#?}");
        assert_eq!(u.running_max, Some(2.0), "{u:#?}");
    }

    #[test]
    fn a_cell_reduced_to_server_fields() {
        let t = Instant::now();
        let s = Scrapes {
            before: at(t, 0, &vllm(0, 0, 1, [5, 5, 5])),
            during: vec![
                at(t, 1000, &vllm(2, 6, 1, [5, 5, 5])),
                at(t, 2000, &vllm(4, 4, 2, [5, 7, 7])),
                at(t, 3000, &vllm(3, 5, 3, [5, 9, 9])),
            ],
            after: at(t, 4000, &vllm(0, 0, 3, [5, 9, 9])),
        };
        let open = t + Duration::from_millis(1500);
        let close = t + Duration::from_millis(3000);
        let seen = s.summarize(open, close).unwrap_or_else(|| unreachable!());
        let (u, waiting) = (seen.server, seen.waiting_mean);
        assert_eq!(seen.scrapes, 2);
        assert_eq!(u.source, "vllm");
        assert_eq!(
            u.running_mean,
            Some(3.5),
            "the two scrapes inside the window"
        );
        assert_eq!((u.running_max, u.waiting_max), (Some(4.0), Some(5.0)));
        assert!((waiting - 4.5).abs() < 1e-9);
        assert_eq!(u.preemptions, Some(2.0));
        assert_eq!(u.prefix_hit_rate, Some(0.25));
        // From the scrape at 1000 ms to the one at 3000: 4 observations in (10, 100] ms.
        assert_eq!(u.ttft_ms_p50, Some(55.0));
        let bucket = Bucket {
            low_ms: 10.0,
            high_ms: Some(100.0),
        };
        assert_eq!(u.ttft_ms_p50_bucket, Some(bucket));
        assert_eq!(u.itl_ms_p50, None);
    }

    /// What nothing measured is absent, never zero; what was measured is kept, zeros too.
    /// The fields: running mean, running max, waiting max, KV max, hit rate, preemptions,
    /// TTFT p50 (by hand from the scrapes each case builds).
    #[test]
    fn absent_is_not_zero() {
        type Fields = [Option<f64>; 7];
        let t = Instant::now();
        let idle = |preempt, ttft| vllm(0, 0, preempt, ttft).replace("perc 0.5", "perc 0");
        let cases: [(&str, Scrapes, (u64, u64), Fields); 4] = [
            (
                // A prefill cell's 5 ms window between the scrapes before and after it: no
                // gauge was read in it (the idle engine after the cell is not the cell); the
                // preemption counter and the TTFT histogram did change over it (one request
                // in (10, 100] ms: 55 ms).
                "no scrape inside the window",
                Scrapes {
                    before: at(t, 0, &idle(1, [5, 5, 5])),
                    during: vec![],
                    after: at(t, 1000, &idle(1, [5, 6, 6])),
                },
                (500, 505),
                [None, None, None, None, None, Some(0.0), Some(55.0)],
            ),
            (
                // The histogram saw nothing new from before the window to after it (the
                // prefix counters did: 25 more hits of 100 more queries).
                "a histogram with no new observations",
                Scrapes {
                    before: at(t, 0, &idle(1, [5, 6, 6])),
                    during: vec![],
                    after: at(t, 1000, &idle(2, [5, 6, 6])),
                },
                (500, 505),
                [None, None, None, None, Some(0.25), Some(1.0), None],
            ),
            (
                // A scrape inside the window saw an idle engine: measured zeros stay.
                "an idle engine seen inside the window",
                Scrapes {
                    before: at(t, 0, &idle(1, [5, 5, 5])),
                    during: vec![at(t, 502, &idle(1, [5, 5, 5]))],
                    after: at(t, 1000, &idle(1, [5, 5, 5])),
                },
                (500, 505),
                [
                    Some(0.0),
                    Some(0.0),
                    Some(0.0),
                    Some(0.0),
                    None,
                    Some(0.0),
                    None,
                ],
            ),
            (
                // Only the scrapes outside the window say anything about the gauges: none
                // is read, however busy the engine was before or after.
                "busy scrapes around an empty window",
                Scrapes {
                    before: at(t, 0, &vllm(4, 2, 1, [5, 5, 5])),
                    during: vec![at(t, 200, &vllm(3, 1, 1, [5, 5, 5]))],
                    after: at(t, 1000, &vllm(2, 0, 1, [5, 5, 5])),
                },
                (500, 505),
                [None, None, None, None, None, Some(0.0), None],
            ),
        ];
        for (name, scrapes, (open, close), want) in cases {
            let ms = |v| t + Duration::from_millis(v);
            let seen = scrapes.summarize(ms(open), ms(close));
            let seen = seen.unwrap_or_else(|| panic!("{name}: vLLM's names are known"));
            let u = &seen.server;
            let got: Fields = [
                u.running_mean,
                u.running_max,
                u.waiting_max,
                u.kv_usage_max,
                u.prefix_hit_rate,
                u.preemptions,
                u.ttft_ms_p50,
            ];
            assert_eq!(got, want, "{name}");
            assert_eq!(u.ttft_ms_p50_bucket.is_some(), want[6].is_some(), "{name}");
            let inside = usize::from(want[0].is_some());
            assert_eq!(seen.scrapes, inside, "{name}");
        }
    }

    #[test]
    fn llama_cpps_cached_prompt_tokens_give_its_hit_rate() {
        // llama.cpp counts prompt tokens it computed and those it found cached, apart.
        let text = |computed: u32, cached: u32| {
            format!(
                "llamacpp:requests_processing 1\nllamacpp:prompt_tokens_total {computed}\n\
                 llamacpp:prompt_tokens_cached_total {cached}\n"
            )
        };
        let t = Instant::now();
        let s = Scrapes {
            before: at(t, 0, &text(1000, 0)),
            during: vec![at(t, 1000, &text(1000, 0)), at(t, 2000, &text(1400, 1200))],
            after: at(t, 3000, &text(1600, 1800)),
        };
        let seen = s
            .summarize(
                t + Duration::from_millis(500),
                t + Duration::from_millis(2500),
            )
            .unwrap_or_else(|| unreachable!());
        assert_eq!(seen.server.source, "llamacpp");
        // From the scrape at 0 (before the opening) to the one at 3000 (after the close):
        // 600 computed, 1800 cached.
        assert_eq!(seen.server.prefix_hit_rate, Some(0.75));
    }

    #[test]
    fn only_the_names_a_cell_reads_are_kept() {
        for name in [
            "vllm:num_requests_running",
            "vllm:time_to_first_token_seconds_bucket",
            "vllm:inter_token_latency_seconds_sum",
            "vllm:cache_config_info",
            "sglang:num_queue_reqs",
            "llamacpp:requests_deferred",
        ] {
            assert!(wanted(name), "{name}");
        }
        for name in [
            "vllm:e2e_request_latency_seconds_bucket",
            "python_gc_objects_collected_total",
            "vllm:num_requests_running_x",
        ] {
            assert!(!wanted(name), "{name}");
        }
    }

    #[test]
    fn an_itl_below_the_lowest_bucket_is_the_histograms_mean() {
        let t = Instant::now();
        let itl = |n: u32, sum: f64| {
            format!(
                "vllm:num_requests_running 1\n\
                 vllm:inter_token_latency_seconds_bucket{{le=\"0.01\"}} {n}\n\
                 vllm:inter_token_latency_seconds_bucket{{le=\"+Inf\"}} {n}\n\
                 vllm:inter_token_latency_seconds_sum {sum}\n"
            )
        };
        let s = Scrapes {
            before: at(t, 0, &itl(100, 0.07)),
            during: vec![],
            after: at(t, 1000, &itl(1100, 0.77)),
        };
        let seen = s
            .summarize(t, t + Duration::from_secs(1))
            .unwrap_or_else(|| unreachable!());
        // 1,000 gaps adding up to 0.7 s: 0.7 ms each, where interpolation would say 5 ms.
        assert_eq!(seen.server.itl_ms_p50, Some(0.7));
    }

    #[test]
    fn unknown_names_are_no_fields() {
        let t = Instant::now();
        let s = Scrapes {
            before: at(t, 0, "go_goroutines 12\n"),
            during: vec![],
            after: at(t, 10, "go_goroutines 12\n"),
        };
        assert!(s.summarize(t, t).is_none());
        let kv = Scrape::new(
            t,
            "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1000\"} 1.0\n",
        );
        assert_eq!(vllm_kv_tokens(&kv), Some(16_000));
    }
}
