//! A load cell's record from its requests' times: offered, sent and achieved rates, the
//! spread of the sends, TTFT / TPOT / ITL / E2E / queue wait / send lateness distributions,
//! requests in flight, errors by kind, and the SLO verdict.

use super::arrivals::gap_stats;
use super::dispatch::{Done, Finished};
use super::saturation::Times;
use crate::plan::OpenLoad;
use crate::plan::vocab::Slo;
use crate::results::slo::{self, Summaries};
use crate::results::stats::{Latencies, median};
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
fn add(h: &mut Hists, d: &Done, capped: bool) -> slo::Request {
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
    let mut r = slo::Request {
        ok,
        ttft: ttft.map(|t| t.as_secs_f64() * 1e3),
        ..slo::Request::default()
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

/// Each server's share of the finished requests of a load cell (`by_endpoint`).
pub fn shares(done: &[Done]) -> Shares {
    let mut shares = Shares::default();
    for d in done {
        let s = shares.of(d.endpoint);
        s.requests += 1;
        s.tokens += d.tokens as f64;
        if let Some(first) = d.first {
            s.ttft
                .record_us(us(first.saturating_duration_since(d.sent)));
        }
    }
    shares
}

/// Fill `rec` from the finished requests of a load cell.
pub fn fill(rec: &mut Record, f: &Finished, load: &OpenLoad, slo: &Slo) {
    // A queue: the cap, or a rate limit's `retry-after` that held sends back.
    let capped = load.max_concurrency.is_some() || f.done.iter().any(|d| d.admitted > d.due);
    let mut h = Hists::default();
    let requests: Vec<slo::Request> = f.done.iter().map(|d| add(&mut h, d, capped)).collect();
    let end = f.done.iter().map(|d| d.end).max().unwrap_or(f.start);
    let span = secs(f.start, end);
    throughput(rec, f, &requests, span);
    rec.ttft_ms = h.ttft.summary();
    rec.tbt_ms = h.itl.summary();
    arrivals(rec, f, load);
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
    if let Some(v) = slo::judge(slo, &requests, &summaries, span) {
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
fn throughput(rec: &mut Record, f: &Finished, requests: &[slo::Request], span: f64) {
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
    let mut speeds: Vec<f64> = requests
        .iter()
        .filter_map(|r| r.tpot.filter(|t| *t > 0.0).map(|t| 1e3 / t))
        .collect();
    rec.per_request_tok_s = median(&mut speeds).map(|v| round(v, 1));
    let busy: f64 = done.iter().map(|d| secs(d.sent, d.end)).sum();
    rec.avg_active = (span > 0.0).then(|| round(busy / span, 2));
    rec.requests_started = done.len() as u64;
    rec.completed = completed;
    for f in done.iter().filter_map(|d| d.failure.as_ref()) {
        rec.errors += 1;
        *rec.error_kinds.entry(f.kind()).or_default() += 1;
    }
    rec.open.rate_achieved = (span > 0.0).then(|| round(completed as f64 / span, 3));
    rec.open.peak_active = Some(f.peak);
}

/// What was offered, and how the sends really went: their rate and spread.
fn arrivals(rec: &mut Record, f: &Finished, load: &OpenLoad) {
    let mut sends: Vec<f64> = f.done.iter().map(|d| secs(f.start, d.sent)).collect();
    sends.sort_by(f64::total_cmp);
    let o = &mut rec.open;
    o.rate_offered = Some(load.rate);
    o.arrivals = Some(load.arrivals.as_str().to_string());
    o.rate_sent = match (sends.first(), sends.last()) {
        (Some(a), Some(b)) if b > a => Some(round((sends.len() - 1) as f64 / (b - a), 3)),
        _ => None,
    };
    o.arrival_cv = gap_stats(&sends).map(|(_, cv)| round(cv, 3));
}

/// Prompt and output lengths: each exact prompt checked against the server's count, and
/// their means (a dataset's prompts, not made to a length, by the server's count).
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
    let n = done.len().max(1) as f64;
    rec.open.input_tokens_mean = Some(round(
        done.iter().map(|d| input(d) as f64).sum::<f64>() / n,
        1,
    ));
    let ok: Vec<u64> = done
        .iter()
        .filter(|d| d.failure.is_none())
        .map(|d| d.tokens)
        .collect();
    rec.open.output_tokens_mean =
        (!ok.is_empty()).then(|| round(ok.iter().sum::<u64>() as f64 / ok.len() as f64, 1));
    rec.server_prompt_tokens = done.iter().find_map(|d| d.usage_prompt);
}
