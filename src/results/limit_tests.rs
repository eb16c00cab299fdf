//! The diagnosis rules, table-driven, and which records of a run get one.

use super::*;
use crate::results::limit_cells::fill;
use crate::results::{ClientUse, ServerUse, Status, Summary};

fn summary(p50: f64) -> Summary {
    Summary {
        mean: p50,
        min: p50,
        p50,
        p90: p50,
        p95: p50,
        p99: p50,
        max: p50,
    }
}

/// A decode record at concurrency `c` with the engine's view (running mean and max,
/// waiting max, KV usage, preemptions), the client's in flight, TPOT and TTFT p50.
#[allow(clippy::too_many_arguments)]
fn rec(c: u32, srv: Option<(f64, f64, f64, f64, f64)>, active: f64, tbt: f64, ttft: f64) -> Record {
    let cell = crate::plan::Cell {
        id: format!("decode/1K/c{c}"),
        variant: None,
        context: 1024,
        concurrency: c,
        prompt_tokens: 1024,
        clamped: false,
        measure: crate::plan::Measure::Decode(crate::plan::Decode::FixedDuration(
            std::time::Duration::from_secs(1),
        )),
        skip: None,
        estimate_s: 1.0,
        repeats: 1,
    };
    let mut r = Record::new(&cell, "t".into(), &Default::default());
    r.status = Status::Valid;
    r.avg_active = Some(active);
    r.tbt_ms = Some(summary(tbt));
    r.ttft_ms = Some(summary(ttft));
    r.server = srv.map(|(rm, rx, w, kv, p)| ServerUse {
        running_mean: Some(rm),
        running_max: Some(rx),
        waiting_max: Some(w),
        kv_usage_max: Some(kv),
        prefix_hit_rate: None,
        preemptions: Some(p),
        ttft_ms_p50: None,
        ttft_ms_p50_bucket: None,
        itl_ms_p50: None,
        itl_ms_p50_bucket: None,
        source: "vllm".into(),
    });
    r
}

const CAP4: Option<Cap> = Some(Cap {
    value: 4.0,
    from: "--max-num-seqs",
});

const CAP16: Option<Cap> = Some(Cap {
    value: 16.0,
    from: "--max-num-seqs",
});

/// One rule's case: name, record, cap, cold TTFT, expected kind.
type Row = (
    &'static str,
    Record,
    Option<Cap>,
    Option<f64>,
    Option<LimitKind>,
);

/// A record for each rule where requests wait or the KV cache fills.
fn queue_rows() -> Vec<Row> {
    // (name, record, cap, client busy, cold TTFT, expected kind)
    vec![
        // Held back at the cap of 4: the scheduler.
        (
            "cap",
            rec(8, Some((4.0, 4.0, 4.0, 0.5, 0.0)), 8.0, 10.5, 400.0),
            CAP4,
            None,
            Some(LimitKind::Scheduler),
        ),
        // The same with no cap in the spec: not judged, never a guess.
        (
            "no cap",
            rec(8, Some((4.0, 4.0, 4.0, 0.5, 0.0)), 8.0, 10.5, 400.0),
            None,
            None,
            None,
        ),
        // Held back under the cap: KV.
        (
            "under cap",
            rec(8, Some((2.5, 3.0, 5.0, 0.9, 0.0)), 8.0, 10.5, 400.0),
            CAP4,
            None,
            Some(LimitKind::KvCache),
        ),
        // Preemptions: KV, cap or not.
        (
            "preempted",
            rec(8, Some((8.0, 8.0, 0.0, 0.8, 3.0)), 8.0, 12.0, 60.0),
            None,
            None,
            Some(LimitKind::KvCache),
        ),
        // 95% used: KV.
        (
            "full",
            rec(8, Some((8.0, 8.0, 0.0, 0.95, 0.0)), 8.0, 12.0, 60.0),
            None,
            None,
            Some(LimitKind::KvCache),
        ),
    ]
}

/// The rules with nothing held back, and the client's.
fn latency_rows() -> Vec<Row> {
    let busy = |mut r: Record| {
        r.client = Some(ClientUse {
            cpu_busy: 0.97,
            threads: 2,
            rss_mb: None,
            cpu_s: 1.0,
        });
        r
    };
    vec![
        // A waiting blip with nothing held back on average (in flight = running): not held.
        (
            "blip",
            rec(8, Some((7.8, 8.0, 1.0, 0.5, 0.0)), 8.0, 19.0, 60.0),
            CAP16,
            None,
            Some(LimitKind::Compute),
        ),
        // Nothing held, TPOT 1.9× the lower step's: compute.
        (
            "compute",
            rec(8, Some((8.0, 8.0, 0.0, 0.5, 0.0)), 8.0, 19.0, 60.0),
            None,
            None,
            Some(LimitKind::Compute),
        ),
        // TPOT 1.19×: holds; TTFT 3× a cold request's 50 ms: prefill interference.
        (
            "prefill",
            rec(8, Some((8.0, 8.0, 0.0, 0.5, 0.0)), 8.0, 11.9, 150.0),
            None,
            Some(50.0),
            Some(LimitKind::PrefillInterference),
        ),
        // TTFT 1.9× a cold one and TPOT holding: no rule met.
        (
            "neither",
            rec(8, Some((8.0, 8.0, 0.0, 0.5, 0.0)), 8.0, 11.9, 95.0),
            None,
            Some(50.0),
            None,
        ),
        // The shipped capacity test's: TTFT 9.6 ms, 2.9× a cold 3.3 ms, but 6.3 ms of wait
        // (under 50 ms): no limit a user sees, not prefill interference.
        (
            "tiny wait",
            rec(8, Some((8.0, 8.0, 0.0, 0.5, 0.0)), 8.0, 10.5, 9.6),
            None,
            Some(3.3),
            None,
        ),
        // No engine metrics: not judged.
        (
            "no metrics",
            rec(8, None, 8.0, 19.0, 400.0),
            CAP4,
            Some(50.0),
            None,
        ),
        // The client above validity.max_client_busy: the client, whatever the engine says.
        (
            "client",
            busy(rec(8, Some((4.0, 4.0, 4.0, 0.5, 0.0)), 8.0, 10.5, 400.0)),
            CAP4,
            None,
            Some(LimitKind::Client),
        ),
    ]
}

#[test]
fn each_kind_from_its_evidence_and_none_without() {
    let base = rec(4, Some((4.0, 4.0, 0.0, 0.3, 0.0)), 4.0, 10.0, 50.0);
    let mut table = queue_rows();
    table.extend(latency_rows());
    for (name, r, cap, cold, want) in table {
        let j = Judged {
            at: &r,
            base: Some(&base),
            above: None,
            cold_ttft: cold.map(|c| (c, "prefill/1K")),
            cap,
            max_client_busy: 0.9,
            knobs: Knobs::Launch,
        };
        let got = judge(&j);
        assert_eq!(got.kind, want, "{name}: {got:?}");
        assert!(!got.suggestion.is_empty(), "{name}");
        if want.is_some() && want != Some(LimitKind::Client) {
            assert!(!got.evidence.is_empty(), "{name}");
        }
    }
}

#[test]
fn prefill_interference_needs_a_wait_of_50_ms_and_4_tokens() {
    // (TTFT p50, cold TTFT p50, TPOT p50 (the lower step's the same), interference?)
    let cases = [
        (150.0, 50.0, 11.9, true),  // 100 ms wait ≥ 50, ≥ 4 × 11.9 = 47.6
        (99.0, 49.0, 11.9, true),   // 50 ms wait: the floor itself
        (98.0, 49.0, 11.9, false),  // 49 ms: under the floor, though 2× cold
        (9.6, 3.3, 0.6, false),     // 6.3 ms: milliseconds
        (140.0, 60.0, 25.0, false), // 80 ms ≥ 50 but < 4 × 25 = 100: under 4 tokens
        (180.0, 60.0, 25.0, true),  // 120 ms ≥ 100
        (110.0, 60.0, 5.0, false),  // 1.83× cold: the ratio rule
    ];
    for (ttft, cold, tpot, want) in cases {
        let base = rec(4, Some((4.0, 4.0, 0.0, 0.3, 0.0)), 4.0, tpot, cold);
        let r = rec(8, Some((8.0, 8.0, 0.0, 0.5, 0.0)), 8.0, tpot, ttft);
        let j = Judged {
            at: &r,
            base: Some(&base),
            above: None,
            cold_ttft: Some((cold, "prefill/1K")),
            cap: None,
            max_client_busy: 0.9,
            knobs: Knobs::Launch,
        };
        let got = judge(&j).kind;
        let expect = want.then_some(LimitKind::PrefillInterference);
        assert_eq!(got, expect, "TTFT {ttft} cold {cold} TPOT {tpot}");
    }
}

#[test]
fn the_evidence_quotes_the_record_and_the_flag_follows_the_engine() {
    let r = rec(8, Some((4.0, 4.0, 4.0, 0.5, 0.0)), 8.0, 10.5, 400.0);
    let j = Judged {
        at: &r,
        base: None,
        above: None,
        cold_ttft: None,
        cap: CAP4,
        max_client_busy: 0.9,
        knobs: Knobs::Launch,
    };
    let got = judge(&j);
    let value = |n: &str| got.evidence.iter().find(|e| e.name == n).map(|e| e.value);
    assert_eq!(value("server.running_max"), Some(4.0));
    assert_eq!(value("server.waiting_max"), Some(4.0));
    assert_eq!(value("cap"), Some(4.0));
    assert!(
        got.suggestion.contains("--max-num-seqs"),
        "{}",
        got.suggestion
    );
    let mut llama = r.clone();
    if let Some(s) = llama.server.as_mut() {
        s.source = "llamacpp".into();
    }
    let j = Judged { at: &llama, ..j };
    assert!(judge(&j).suggestion.contains("--parallel"));
}

#[test]
fn the_last_cell_before_a_plateau_is_judged_from_the_step_past_it() {
    // tok/s 100, 190, 200: c2 → c4 adds 5% (< 10%), so c2 is the last before the plateau,
    // judged from c4's engine view (4 running at the cap of 2? no: held back at cap 2).
    let mut rs = vec![
        rec(1, Some((1.0, 1.0, 0.0, 0.1, 0.0)), 1.0, 10.0, 50.0),
        rec(2, Some((2.0, 2.0, 0.0, 0.2, 0.0)), 2.0, 10.5, 52.0),
        rec(4, Some((2.0, 2.0, 2.0, 0.2, 0.0)), 4.0, 10.5, 110.0),
    ];
    for (r, t) in rs.iter_mut().zip([100.0, 190.0, 200.0]) {
        r.total_tok_s = Some(t);
    }
    let cap = |_: Option<&str>| {
        let cap = Cap {
            value: 2.0,
            from: "engine.sim.max_num_seqs",
        };
        (Some(cap), Knobs::Sim)
    };
    fill(&mut rs, &cap, 0.9);
    assert!(rs[0].limit.is_none() && rs[2].limit.is_none());
    let l = rs[1].limit.as_ref().map(|l| (l.kind, l.evidence[1].value));
    assert_eq!(l, Some((Some(LimitKind::Scheduler), 200.0)));
    // A step adding 10% or more is no plateau.
    rs[2].total_tok_s = Some(210.0);
    fill(&mut rs, &cap, 0.9);
    assert!(rs.iter().all(|r| r.limit.is_none()));
}

/// A judgement of `r` against `base` with `cap`, the settings changed where `knobs` says.
fn judged(r: &Record, base: &Record, cap: Option<Cap>, knobs: Knobs) -> Limit {
    judged_above(r, base, None, cap, knobs)
}

/// [`judged`] with the step above `r`.
fn judged_above(
    r: &Record,
    base: &Record,
    above: Option<&Record>,
    cap: Option<Cap>,
    knobs: Knobs,
) -> Limit {
    judge(&Judged {
        at: r,
        base: Some(base),
        above,
        cold_ttft: None,
        cap,
        max_client_busy: 0.9,
        knobs,
    })
}

#[test]
fn requests_neither_running_nor_waiting_are_held_before_the_scheduler_not_compute() {
    // The newcomer's load/16K/r60 on h200-gemma-4-e2b (cap 256): 33.8 req/s × 1.378 s mean
    // E2E = 46.6 in flight by Little's law, while the engine ran 5.4 on average (max 6) with
    // none waiting: 46.6 − 5.4 = 41.2 requests were in neither gauge. The API server's one
    // tokenizer takes 16,384 × 1.7 µs = 27.9 ms per prompt, at most 35.9 req/s: below the
    // 60 offered, so they queue there. TPOT 1.3× the lower rate's would read as compute.
    let cap = Some(Cap {
        value: 256.0,
        from: "engine.sim.max_num_seqs",
    });
    let base = rec(1, Some((0.9, 2.0, 0.0, 0.0, 0.0)), 0.9, 3.8, 88.0);
    let r = rec(
        60,
        Some((5.4, 6.0, 0.0, 0.004, 0.0)),
        33.8 * 1.378,
        4.94,
        1243.0,
    );
    let l = judged(&r, &base, cap, Knobs::Sim);
    assert_eq!(l.kind, None, "{l:#?}");
    let gap = l.evidence.iter().find(|e| e.name == "before_scheduler");
    let gap = gap.map(|e| (e.value * 10.0).round() / 10.0);
    assert_eq!(gap, Some(41.2), "{l:#?}");
    assert!(l.suggestion.contains("API server"), "{}", l.suggestion);
    // The closed-loop 32K decode at c16: 16 in flight, 6 running, none waiting.
    let r = rec(16, Some((6.0, 6.0, 0.0, 0.008, 0.0)), 16.0, 4.9, 583.0);
    let l = judged(&r, &base, cap, Knobs::Attached);
    assert_eq!(l.kind, None, "{l:#?}");
    assert!(
        l.suggestion.contains("--api-server-count"),
        "{}",
        l.suggestion
    );
    // In flight = running: the engine holds them all, TPOT rising is compute as before.
    let r = rec(16, Some((16.0, 16.0, 0.0, 0.1, 0.0)), 16.0, 4.94, 90.0);
    assert_eq!(
        judged(&r, &base, cap, Knobs::Sim).kind,
        Some(LimitKind::Compute)
    );
}

#[test]
fn running_at_the_cap_with_the_step_up_held_back_is_the_scheduler() {
    // The newcomer's capacity/1K/c8 on tiny with max_num_seqs 8: 8 running on average and at
    // most, none waiting, TPOT 0.773 against c1's 0.619 (1.25×, "compute" before); c12
    // held 4 back at 8 running (rc1's records), so capacity 8 is the cap.
    let cap = Some(Cap {
        value: 8.0,
        from: "engine.sim.max_num_seqs",
    });
    let base = rec(1, Some((1.0, 1.0, 0.0, 0.016, 0.0)), 1.0, 0.619, 3.2);
    let c12 = rec(12, Some((8.0, 8.0, 4.0, 0.127, 0.0)), 12.0, 0.777, 4.9);
    let r = rec(8, Some((8.0, 8.0, 0.0, 0.127, 0.0)), 8.0, 0.773, 4.9);
    let l = judged_above(&r, &base, Some(&c12), cap, Knobs::Sim);
    assert_eq!(l.kind, Some(LimitKind::Scheduler), "{l:#?}");
    assert!(l.suggestion.contains("engine.sim.max_num_seqs"));
    // The same c12 as a 1 s probe's few scrapes saw it (/tmp rerun of cap.yaml): none
    // caught waiting, 6 running on average, 8 at most: 12 in flight past a cap of 8.
    let sparse = rec(12, Some((6.0, 8.0, 0.0, 0.127, 0.0)), 12.0, 0.777, 4.9);
    let l = judged_above(&r, &base, Some(&sparse), cap, Knobs::Sim);
    assert_eq!(l.kind, Some(LimitKind::Scheduler), "{l:#?}");
    // No step up (the search's top), or one not past the cap: nothing shows the cap binds.
    let free = rec(12, Some((7.0, 7.5, 0.0, 0.2, 0.0)), 8.0, 0.9, 4.9);
    for above in [None, Some(&free)] {
        let got = judged_above(&r, &base, above, cap, Knobs::Sim).kind;
        assert_eq!(got, Some(LimitKind::Compute), "{above:?}");
    }
    // A 1 s probe's few scrapes (a rerun of cap.yaml): running mean 6.0, max 8, the
    // client's 8 in flight throughout: at the cap.
    let few = rec(8, Some((6.0, 8.0, 0.0, 0.127, 0.0)), 8.0, 0.773, 4.9);
    let got = judged_above(&few, &base, Some(&c12), cap, Knobs::Sim).kind;
    assert_eq!(got, Some(LimitKind::Scheduler));
    // Under the cap (7.2 of 8 in flight on average): TPOT's rise is compute.
    let r = rec(8, Some((7.2, 8.0, 0.0, 0.127, 0.0)), 7.2, 0.773, 4.9);
    let got = judged_above(&r, &base, Some(&c12), cap, Knobs::Sim).kind;
    assert_eq!(got, Some(LimitKind::Compute));
}

#[test]
fn the_suggestion_names_what_the_spec_can_change() {
    let base = rec(4, Some((4.0, 4.0, 0.0, 0.3, 0.0)), 4.0, 10.0, 50.0);
    let held = rec(8, Some((4.0, 4.0, 4.0, 0.5, 0.0)), 8.0, 10.5, 400.0);
    let full = rec(8, Some((8.0, 8.0, 0.0, 0.97, 0.0)), 8.0, 12.0, 60.0);
    // (record, cap, knobs, must contain, must not contain)
    let cases = [
        (
            &full,
            None,
            Knobs::Sim,
            "engine.sim.kv_tokens",
            "--gpu-memory-utilization",
        ),
        (
            &full,
            None,
            Knobs::Launch,
            "--gpu-memory-utilization",
            "engine.sim",
        ),
        (
            &full,
            None,
            Knobs::Attached,
            "attached server's own launch command",
            "engine.sim",
        ),
        (
            &held,
            CAP4,
            Knobs::Attached,
            "attached server's own launch command",
            "engine.sim",
        ),
        (
            &held,
            CAP4,
            Knobs::Sim,
            "engine.sim.max_num_seqs",
            "--max-num-seqs",
        ),
        // No cap known: attached, neither `--max-num-seqs` in a launch command nor
        // `engine.sim.max_num_seqs` exists to set; the spec can launch the engine itself.
        (
            &held,
            None,
            Knobs::Attached,
            "engine.launch.command",
            "engine.sim",
        ),
        (
            &held,
            None,
            Knobs::Sim,
            "engine.sim.max_num_seqs",
            "--max-num-seqs",
        ),
    ];
    for (r, cap, knobs, has, lacks) in cases {
        let s = judged(r, &base, cap, knobs).suggestion;
        assert!(s.contains(has) && !s.contains(lacks), "{knobs:?}: {s}");
    }
}

#[test]
fn only_the_cell_before_the_first_flat_step_is_judged() {
    // tok/s 100, 190, 200, 205: c2 → c4 adds 5%, c4 → c8 2.5%: c4 is on the plateau, only
    // c2 is the last cell before it (the newcomer's f1.yaml had c4 and c8 both judged).
    let mut rs = vec![
        rec(1, Some((1.0, 1.0, 0.0, 0.1, 0.0)), 1.0, 10.0, 50.0),
        rec(2, Some((2.0, 2.0, 0.0, 0.2, 0.0)), 2.0, 10.5, 52.0),
        rec(4, Some((2.0, 2.0, 2.0, 0.2, 0.0)), 4.0, 10.5, 110.0),
        rec(8, Some((2.0, 2.0, 6.0, 0.2, 0.0)), 8.0, 10.5, 300.0),
    ];
    for (r, t) in rs.iter_mut().zip([100.0, 190.0, 200.0, 205.0]) {
        r.total_tok_s = Some(t);
    }
    let cap = Cap {
        value: 2.0,
        from: "engine.sim.max_num_seqs",
    };
    fill(&mut rs, &|_| (Some(cap), Knobs::Sim), 0.9);
    let judged: Vec<&str> = rs
        .iter()
        .filter(|r| r.limit.is_some())
        .map(|r| r.cell.as_str())
        .collect();
    assert_eq!(judged, ["decode/1K/c2"]);
}
