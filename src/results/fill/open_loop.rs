//! A load or replay cell's record from its requests' times: offered, sent and achieved rates
//! (one definition for both, [`rates`]), the spread of the sends, TTFT / TPOT / ITL / E2E / queue wait / send lateness distributions,
//! requests in flight, errors by kind, and the SLO verdict.

use super::saturation::Times;
use super::times::{Done, Finished};
use crate::plan::OpenLoad;
use crate::plan::vocab::Slo;
use crate::results::slo::{self, Summaries};
use crate::results::stats::{Latencies, gap_stats};
use crate::results::{Record, Shares, TokenSource};
use tokio::time::Instant;

fn us(d: std::time::Duration) -> u64 {
    d.as_micros() as u64
}

fn secs(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64()
}

use crate::results::stats::round;

/// The distributions of a load cell's requests.
#[derive(Default)]
struct Hists {
    ttft: Latencies,
    tpot: Latencies,
    itl: Latencies,
    e2e: Latencies,
    queue: Latencies,
    late: Latencies,
}

/// One request's latencies for the SLO, and its place in the distributions.
fn add(h: &mut Hists, d: &Done, capped: bool) -> slo::RequestLatencies {
    h.late
        .record_us(us(d.sent.saturating_duration_since(d.admitted)));
    if capped {
        h.queue
            .record_us(us(d.admitted.saturating_duration_since(d.due)));
    }
    let ok = d.failure.is_none() && d.tokens > 0;
    let ttft = d.first.map(|f| f.saturating_duration_since(d.sent));
    if let Some(t) = ttft {
        h.ttft.record_us(us(t));
    }
    for &g in &d.gaps {
        h.itl.record_us(u64::from(g));
    }
    let mut r = slo::RequestLatencies {
        ok,
        ttft: ttft.map(|t| t.as_secs_f64() * 1e3),
        ..slo::RequestLatencies::default()
    };
    if !ok {
        return r;
    }
    if let (Some(first), Some(last)) = (d.first, d.last) {
        let e2e = last.saturating_duration_since(d.sent);
        h.e2e.record_us(us(e2e));
        r.e2e = Some(e2e.as_secs_f64() * 1e3);
        if d.tokens > 1 {
            let tpot = secs(first, last) / (d.tokens - 1) as f64;
            h.tpot.record_s(tpot);
            r.tpot = Some(tpot * 1e3);
        }
    }
    r.itl = d.gaps.iter().map(|&g| f64::from(g) / 1e3).collect();
    r.itl.sort_by(f64::total_cmp);
    r
}

/// Each server's and each adapter's share of the finished requests of a load cell
/// (`by_endpoint`, `by_adapter`).
pub fn shares(done: &[Done]) -> Shares {
    let mut shares = Shares::default();
    for d in done {
        let ttft = d.first.map(|f| us(f.saturating_duration_since(d.sent)));
        shares.each(d.endpoint, d.adapter, |s| {
            s.requests += 1;
            s.tokens += d.tokens as f64;
            if let Some(t) = ttft {
                s.ttft.record_us(t);
            }
        });
    }
    shares
}

/// Fill `rec` from the finished requests of a load or replay cell (`load.rate`: the rate
/// offered, see [`rates`]).
pub fn fill(rec: &mut Record, f: &Finished, load: &OpenLoad, slo: &Slo) {
    // A queue: the cap, or a rate limit's `retry-after` that held sends back.
    let capped = load.max_concurrency.is_some() || f.done.iter().any(|d| d.admitted > d.due);
    let mut h = Hists::default();
    let requests: Vec<slo::RequestLatencies> =
        f.done.iter().map(|d| add(&mut h, d, capped)).collect();
    let end = f.done.iter().map(|d| d.end).max().unwrap_or(f.start);
    let span = secs(f.start, end);
    throughput(rec, f, &requests, span);
    rec.ttft_ms = h.ttft.summary();
    rec.tbt_ms = h.itl.summary();
    let window = rates(rec, f, load, span);
    let o = &mut rec.open;
    o.tpot_ms = h.tpot.summary();
    o.itl_ms = h.itl.summary();
    o.e2e_ms = h.e2e.summary();
    o.queue_ms = h.queue.summary();
    o.send_lateness_ms = h.late.summary();
    let summaries = Summaries {
        ttft: rec.ttft_ms,
        tpot: o.tpot_ms,
        itl: o.itl_ms,
        e2e: o.e2e_ms,
    };
    if let Some(v) = slo::judge(slo, &requests, &summaries, window) {
        o.goodput_rps = Some(round(v.goodput_rps, 3));
        o.slo_fraction = Some(round(v.fraction, 4));
        o.slo_met = Some(v.met);
    }
    lengths(rec, &f.done);
    rec.open.saturated = saturated(f);
}

/// Whether the requests of `f` saturated the server ([`super::saturation`]).
fn saturated(f: &Finished) -> Option<String> {
    let times: Vec<Times> = f
        .done
        .iter()
        .map(|d| Times {
            due: secs(f.start, d.due),
            admitted: secs(f.start, d.admitted),
            sent: secs(f.start, d.sent),
            end: secs(f.start, d.end),
            ok: d.failure.is_none() && d.tokens > 0,
        })
        .collect();
    super::saturation::judge(&times)
}

/// Tokens, rates, requests in flight and errors over the cell's `span` seconds.
fn throughput(rec: &mut Record, f: &Finished, requests: &[slo::RequestLatencies], span: f64) {
    let done = &f.done;
    let completed = requests.iter().filter(|r| r.ok).count() as u64;
    let tokens: u64 = done.iter().map(|d| d.tokens).sum();
    rec.measured_s = Some(round(span, 3));
    rec.output_tokens = Some(tokens);
    rec.token_source = Some(if done.iter().all(|d| d.all_usage) {
        TokenSource::Usage
    } else {
        TokenSource::Chunks
    });
    rec.total_tok_s = (span > 0.0).then(|| round(tokens as f64 / span, 1));
    let tpots: Vec<f64> = requests.iter().filter_map(|r| r.tpot).collect();
    let (speed, bursts) = crate::results::bursts::per_request(&tpots);
    rec.per_request_tok_s = speed.map(|v| round(v, 1));
    rec.warnings.extend(bursts);
    let busy: f64 = done.iter().map(|d| secs(d.sent, d.end)).sum();
    rec.avg_active = (span > 0.0).then(|| round(busy / span, 2));
    rec.requests_started = done.len() as u64;
    rec.completed = completed;
    for f in done.iter().filter_map(|d| d.failure.as_ref()) {
        rec.errors += 1;
        *rec.error_kinds.entry(f.kind()).or_default() += 1;
    }
    rec.open.peak_active = Some(f.peak);
}

/// The rates of a load or replay cell (docs/results.md, "Rates"), all over the same kind of
/// span. N arrivals at a mean gap g = 1 / `offered` take N·g to offer: N − 1 gaps from the
/// first to the last, and the last one's own. `rate_sent` counts the N − 1 gaps between the
/// first and the last send, so sends on time read exactly `offered`; `rate_achieved` counts
/// the completed requests over the window from the first arrival to the later of the last
/// request's end and the end of the offered period (N·g): a server that keeps up reads the
/// rate sent, one that falls behind reads completions over the time they took (vLLM's
/// request throughput). Also how arrivals were drawn and the spread of the real sends.
/// Returns the window, seconds (`span`: first arrival to last end).
fn rates(rec: &mut Record, f: &Finished, load: &OpenLoad, span: f64) -> f64 {
    let mut sends: Vec<f64> = f.done.iter().map(|d| secs(f.start, d.sent)).collect();
    sends.sort_by(f64::total_cmp);
    let offered = load.rate;
    let o = &mut rec.open;
    o.rate_offered = Some(offered);
    o.arrivals = Some(load.arrivals.as_str().to_string());
    o.arrival_cv = gap_stats(&sends).map(|(_, cv)| round(cv, 3));
    o.rate_sent = match (sends.first(), sends.last()) {
        (Some(a), Some(b)) if b > a => Some(round((sends.len() - 1) as f64 / (b - a), 3)),
        _ => None,
    };
    let gap = if offered.is_inf() || offered.0 <= 0.0 {
        0.0
    } else {
        1.0 / offered.0
    };
    let window = span.max(f.done.len() as f64 * gap);
    // One request is no rate (as `rate_sent` needs two sends): 1 ÷ its own time is not one.
    o.rate_achieved =
        (window > 0.0 && f.done.len() > 1).then(|| round(rec.completed as f64 / window, 3));
    window
}

/// Prompt and output lengths: each exact prompt checked against the server's count, and
/// the means over the requests that succeeded (a dataset's prompts, not made to a length, by
/// the server's count).
fn lengths(rec: &mut Record, done: &[Done]) {
    let mismatched: Vec<&Done> = done
        .iter()
        .filter(|d| d.prompt_target > 0 && d.usage_prompt.is_some_and(|p| p != d.prompt_target))
        .collect();
    if let Some(d) = mismatched.first() {
        rec.reasons.push(format!(
            "prompt length mismatch: sent {} tokens, the server counted {} ({} requests)",
            d.prompt_target,
            d.usage_prompt.unwrap_or_default(),
            mismatched.len()
        ));
    }
    let input = |d: &Done| match d.prompt_target {
        0 => d.usage_prompt.unwrap_or_default(),
        t => t,
    };
    // Only requests that succeeded: a refused prompt (too long, say) was never served.
    let ok: Vec<&Done> = done.iter().filter(|d| d.failure.is_none()).collect();
    let mean = |of: &dyn Fn(&Done) -> u64| {
        (!ok.is_empty()).then(|| {
            round(
                ok.iter().map(|d| of(d) as f64).sum::<f64>() / ok.len() as f64,
                1,
            )
        })
    };
    rec.open.input_tokens_mean = mean(&input);
    rec.open.output_tokens_mean = mean(&|d| d.tokens);
    rec.server_prompt_tokens = done.iter().find_map(|d| d.usage_prompt);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Failure;
    use crate::plan::vocab::{Arrivals, Rate};
    use crate::plan::{Bound, OpenLoad};
    use std::time::Duration;

    fn record() -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": "benchspec.result.v1", "cell": "replay/t", "phase": "replay",
            "context": 0, "concurrency": 0, "status": "failed", "reasons": [],
            "started_at": "", "measured_s": null, "prompt_tokens": 0, "output_tokens": null,
            "token_source": null, "total_tok_s": null, "per_request_tok_s": null,
            "avg_active": null, "requests_started": 0, "completed": 0, "errors": 0,
            "error_kinds": {}, "tbt_ms": null, "prefill_tok_s": null, "labels": {},
            "server_prompt_tokens": null, "ttft_ms": null
        }))
        .unwrap_or_else(|e| unreachable!("{e}"))
    }

    /// Requests sent on time at `due` (s), each ending at its `end` (s); `failed` by index.
    fn finished(due: &[f64], end: &[f64], failed: Option<usize>) -> Finished {
        let start = Instant::now();
        let at = |s: f64| start + Duration::from_secs_f64(s);
        let done = due
            .iter()
            .zip(end)
            .enumerate()
            .map(|(i, (&d, &e))| {
                let bad = failed == Some(i);
                Done {
                    due: at(d),
                    admitted: at(d),
                    sent: at(d),
                    first: (!bad).then(|| at(d + 0.02)),
                    last: (!bad).then(|| at(e)),
                    end: at(e),
                    tokens: if bad { 0 } else { 8 },
                    all_usage: true,
                    gaps: vec![],
                    failure: bad.then_some(Failure::Http(400)),
                    usage_prompt: (!bad).then_some(1000),
                    usage_cached: None,
                    prompt_target: if bad { 200_000 } else { 1000 },
                    endpoint: 0,
                    adapter: None,
                }
            })
            .collect();
        Finished {
            done,
            peak: 1,
            start,
        }
    }

    fn load(rate: f64) -> OpenLoad {
        OpenLoad {
            rate: Rate(rate),
            arrivals: Arrivals::Constant,
            burstiness: 1.0,
            max_concurrency: None,
            bound: Bound::Requests(5),
            input: None,
            output: None,
        }
    }

    /// Worked by hand. The trace: 5 requests over 1.221 s (gap 0.30525 s), so
    /// offered = 4 / 1.221 = 3.276 req/s and on-time sends read 4 / 1.221 = 3.276; each
    /// ends 51 ms after its send (the last at 1.272 s) and the window is the offered period,
    /// 5 × 0.30525 = 1.52625 s: achieved 5 / 1.52625 = 3.276 (it read 5 / 1.272 = 3.931,
    /// above the rate sent). The last request ending at 2.0 s: 5 / 2.0 = 2.5. One failed
    /// (a 200,000-token prompt refused): 4 / 1.52625 = 2.621, and the prompt mean is the
    /// 4 others' 1000. A load cell at 4 req/s (gap 0.25 s), requests ending 50 ms after
    /// their sends: offered, sent and achieved 4 (5 / max(1.05, 1.25)).
    #[test]
    fn an_on_time_cell_reads_one_rate_and_achieved_never_above_sent() {
        let trace: Vec<f64> = (0..5).map(|i| f64::from(i) * 0.30525).collect();
        let late = |t: &[f64]| t.iter().map(|d| d + 0.051).collect::<Vec<f64>>();
        let mut behind = late(&trace);
        behind[4] = 2.0;
        let quarter: Vec<f64> = (0..5).map(|i| f64::from(i) * 0.25).collect();
        let cases = [
            (&trace, late(&trace), None, 4.0 / 1.221, 3.276, 3.276),
            (&trace, behind, None, 4.0 / 1.221, 3.276, 2.5),
            (&trace, late(&trace), Some(2), 4.0 / 1.221, 3.276, 2.621),
            (&quarter, late(&quarter), None, 4.0, 4.0, 4.0),
        ];
        for (due, end, failed, rate, sent, achieved) in cases {
            let mut rec = record();
            fill(
                &mut rec,
                &finished(due, &end, failed),
                &load(rate),
                &Slo::default(),
            );
            let o = &rec.open;
            assert_eq!(o.rate_offered.map(|r| round(r.0, 3)), Some(sent), "{due:?}");
            assert_eq!(o.rate_sent, Some(sent), "{due:?} {end:?}");
            assert_eq!(o.rate_achieved, Some(achieved), "{due:?} {end:?}");
            assert_eq!(
                o.input_tokens_mean,
                Some(1000.0),
                "failed prompts not counted"
            );
            assert_eq!(o.output_tokens_mean, Some(8.0));
        }
    }
}
