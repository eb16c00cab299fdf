//! Tests of the reduction of a cell's scrapes to its `server` fields.

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

/// A prefill request's window (500–540 ms) whose opening scrape answered at 503 ms, before
/// the request reached the engine (it read 0 running): for a cell whose load starts with
/// its window, no gauge comes from its first 250 ms; its TTFT histogram still counts.
#[test]
fn a_cold_window_reads_no_gauge_from_its_first_moments() {
    let t = Instant::now();
    let s = Scrapes {
        before: at(t, 0, &vllm(0, 0, 1, [5, 5, 5])),
        during: vec![at(t, 503, &vllm(0, 0, 1, [5, 5, 5]))],
        after: at(t, 545, &vllm(0, 0, 1, [5, 6, 6])),
    };
    let ms = |v| t + Duration::from_millis(v);
    let warm = s.summarize(ms(500), ms(540)).unwrap().server;
    assert_eq!(
        warm.running_mean,
        Some(0.0),
        "read as a running load's: {warm:#?}"
    );
    let cold = s.summarize_from(ms(500), ms(540), ms(750)).unwrap().server;
    assert_eq!(
        (cold.running_mean, cold.kv_usage_max),
        (None, None),
        "{cold:#?}"
    );
    assert_eq!(cold.ttft_ms_p50, Some(55.0), "{cold:#?}");
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
    let t = Instant::now();
    for (name, scrapes, (open, close), want) in absent_cases(t) {
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

/// The fields [`absent_is_not_zero`] checks, in its order.
type Fields = [Option<f64>; 7];

/// The cases of [`absent_is_not_zero`], scraped from `t` on: a name, the scrapes, the
/// window (ms from `t`) and the fields expected.
fn absent_cases(t: Instant) -> [(&'static str, Scrapes, (u64, u64), Fields); 4] {
    let idle = |preempt, ttft| vllm(0, 0, preempt, ttft).replace("perc 0.5", "perc 0");
    [
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
    ]
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
