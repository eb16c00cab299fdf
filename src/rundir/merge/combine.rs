//! One record of a load cell measured in parts by several client machines (`run --shard
//! K/N --split-load`, joined by `benchspec merge`): every part's requests, as each saved
//! them, go through the same computation a single client's requests do — so its percentiles
//! come from all the requests, not from averaged percentiles. Each part's times count from
//! its own first arrival, placed at its window's wall-clock start (`window_started_at`):
//! parts that started apart stay apart, so the record spans what really happened (parts
//! of older runs, without it, are taken to have started together). `merge` marks a cell
//! whose parts' windows overlap too little invalid.

use crate::plan::{Cell, Measure, Workload};
use crate::results::Record;
use crate::results::fill::verdict::{open_reasons, verdict};
use crate::results::fill::{Done, Finished, fill, shares};
use crate::rundir::OpenRequest;
use std::time::Duration;
use tokio::time::Instant;

/// The record of `cell` (its whole load) from each part's record and requests.
pub(super) fn combine(
    cell: &Cell,
    workload: &Workload,
    parts: &[(Record, Vec<OpenRequest>)],
) -> Record {
    let Some((first, _)) = parts.first() else {
        return Record::new(cell, String::new(), &Default::default());
    };
    let Measure::Load(load) = cell.measure else {
        return first.clone();
    };
    let finished = finished(parts);
    let mut rec = measured_fields_cleared(first.clone());
    fill(&mut rec, &finished, &load, &workload.slo);
    rec.open.window_started_at = parts
        .iter()
        .filter_map(|(r, _)| r.open.window_started_at.clone())
        .min_by(|a, b| starts(a).total_cmp(&starts(b)));
    rec.token_source = first.token_source;
    rec.server = first.server.clone();
    rec.prefix_hit_expected = first.prefix_hit_expected;
    let urls: Vec<String> = first
        .by_endpoint
        .iter()
        .flatten()
        .map(|e| e.url.clone())
        .collect();
    // The adapters in the mix's order, as every part's `by_adapter` lists them.
    let adapters: Vec<String> = first
        .by_adapter
        .iter()
        .flatten()
        .map(|a| a.adapter.clone())
        .collect();
    let shares = shares(&finished.done);
    let span = rec.measured_s.unwrap_or(0.0);
    rec.by_endpoint = shares.fields(&urls, span);
    rec.by_adapter = shares.adapter_fields(&adapters, span);
    // The engine's gauge, as its view (`server`): the first part's readings.
    rec.lora = first.lora.clone();
    from_parts(&mut rec, parts);
    if let Some(cost) = workload.cost_per_hour {
        rec.usd_per_mtok = rec
            .total_tok_s
            .and_then(|t| crate::results::stats::usd_per_mtok(cost, t));
    }
    let reasons = open_reasons(&rec, &workload.validity);
    let (errors, started) = (rec.errors, rec.requests_started);
    verdict(rec, errors, started, &reasons)
}

/// Every part's requests as the driver's, their times shifted to their windows' starts.
fn finished(parts: &[(Record, Vec<OpenRequest>)]) -> Finished {
    let start = Instant::now();
    let at = |s: f64| start + Duration::from_secs_f64(s.max(0.0));
    let shifts = shifts(parts);
    let done: Vec<Done> = parts
        .iter()
        .zip(&shifts)
        .flat_map(|((_, lines), shift)| lines.iter().map(move |r| shifted(r, *shift)))
        .map(|r| Done {
            due: at(r.due_s),
            admitted: at(r.admitted_s),
            sent: at(r.sent_s),
            first: r.first_token_s.map(at),
            last: r.last_token_s.map(at),
            end: at(r.end_s),
            tokens: r.output_tokens,
            all_usage: true,
            gaps: r.itl_us.clone(),
            failure: r.error.clone(),
            usage_prompt: r.usage_prompt_tokens,
            usage_cached: r.usage_cached_tokens,
            prompt_target: r.prompt_tokens,
            endpoint: r.endpoint.unwrap_or(0),
            adapter: r.adapter,
        })
        .collect();
    Finished {
        peak: peak(&done),
        done,
        start,
    }
}

/// What the whole takes from its parts' records: the rate sent, the busiest client, the
/// warnings.
fn from_parts(rec: &mut Record, parts: &[(Record, Vec<OpenRequest>)]) {
    // Each part's sends span the whole window: over the union, (N − 1) ÷ span counts every
    // part's first and last send once for all of them and reads high (4.4 for two parts on
    // time at 2.0 each). The whole's rate sent is the parts' added.
    let sent: Option<f64> = parts.iter().map(|(r, _)| r.open.rate_sent).sum();
    if let Some(sent) = sent {
        rec.open.rate_sent = Some(crate::results::stats::round(sent, 3));
    }
    // The busiest part's client: a part whose client was the bottleneck leaves the whole
    // cell invalid, as it would have been with one client.
    rec.client = parts
        .iter()
        .filter_map(|(r, _)| r.client)
        .max_by(|a, b| a.cpu_busy.total_cmp(&b.cpu_busy));
    rec.warnings = parts.iter().flat_map(|(r, _)| r.warnings.clone()).collect();
    rec.warnings.dedup();
}

/// The Unix seconds of a `window_started_at` (0 when unreadable).
fn starts(text: &str) -> f64 {
    crate::results::unix_of_rfc3339(text).unwrap_or(0.0)
}

/// Seconds each part's window started after the earliest part's; all 0 unless every part
/// says when its window started.
fn shifts(parts: &[(Record, Vec<OpenRequest>)]) -> Vec<f64> {
    let at: Option<Vec<f64>> = parts
        .iter()
        .map(|(r, _)| crate::results::unix_of_rfc3339(r.open.window_started_at.as_deref()?))
        .collect();
    match at {
        Some(at) => {
            let first = at.iter().copied().fold(f64::INFINITY, f64::min);
            at.iter().map(|a| a - first).collect()
        }
        None => vec![0.0; parts.len()],
    }
}

/// `r` with its times `shift` seconds later.
fn shifted(r: &OpenRequest, shift: f64) -> OpenRequest {
    let by = |t: f64| t + shift;
    OpenRequest {
        due_s: by(r.due_s),
        admitted_s: by(r.admitted_s),
        sent_s: by(r.sent_s),
        first_token_s: r.first_token_s.map(by),
        last_token_s: r.last_token_s.map(by),
        end_s: by(r.end_s),
        ..r.clone()
    }
}

/// The most requests in flight at once over all parts.
fn peak(done: &[Done]) -> u32 {
    let mut edges: Vec<(Instant, i32)> = done
        .iter()
        .flat_map(|d| [(d.sent, 1), (d.end, -1)])
        .collect();
    // An end before a start at the same instant: a request that ended does not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most.max(0) as u32
}

/// `rec` with what a part measured taken away (the cell's identity and labels kept).
fn measured_fields_cleared(rec: Record) -> Record {
    Record {
        errors: 0,
        error_kinds: Default::default(),
        reasons: Vec::new(),
        warnings: Vec::new(),
        client: None,
        by_endpoint: None,
        by_adapter: None,
        lora: None,
        open: Default::default(),
        ..rec
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::rundir::OpenRequest;

    fn plan() -> Plan {
        let text = "version: 1\nname: s\nengine: {kind: vllm, base_url: 'http://127.0.0.1:9'}\n\
             model: {served_name: m, max_model_len: 100000}\nworkload: {max_output_tokens: 16}\n\
             matrix: {contexts: [512], concurrency: [1]}\n\
             phases: {load: {contexts: [512], rates: [30], duration: 4s}}\n";
        crate::plan::config::of_yaml(text).sizing_plan()
    }

    /// 120 requests whose latencies all differ (TTFT 20–140 ms, TPOT 5–13 ms).
    fn requests() -> Vec<OpenRequest> {
        (0..120u32)
            .map(|i| {
                let sent = f64::from(i) / 30.0;
                let ttft = 0.02 + f64::from(i % 60) * 0.002;
                let tpot = 0.005 + f64::from(i % 17) * 0.0005;
                let last = sent + ttft + 15.0 * tpot;
                OpenRequest {
                    due_s: sent,
                    admitted_s: sent,
                    sent_s: sent,
                    first_token_s: Some(sent + ttft),
                    last_token_s: Some(last),
                    end_s: last,
                    prompt_tokens: 512,
                    output_tokens: 16,
                    usage_prompt_tokens: Some(512),
                    usage_cached_tokens: None,
                    error: None,
                    itl_us: vec![(tpot * 1e6) as u32; 15],
                    endpoint: None,
                    adapter: None,
                }
            })
            .collect()
    }

    /// Three parts of a load combine into exactly the record of the whole (every percentile
    /// from every request), unlike the mean of the parts' own percentiles.
    #[test]
    fn parts_combine_into_the_record_of_the_whole() {
        let plan = plan();
        let cell = plan
            .cells
            .iter()
            .find(|c| c.id == "load/512/r30")
            .unwrap_or_else(|| panic!("{:#?}", plan.cells));
        let rec = Record::new(cell, String::new(), &Default::default());
        let all = requests();
        let whole = combine(cell, &plan.workload, &[(rec.clone(), all.clone())]);
        let thirds: Vec<(Record, Vec<OpenRequest>)> = (0..3)
            .map(|k| {
                let mine = all.iter().skip(k).step_by(3).cloned().collect();
                (rec.clone(), mine)
            })
            .collect();
        let merged = combine(cell, &plan.workload, &thirds);
        assert_eq!(merged.requests_started, 120);
        assert_eq!(merged.ttft_ms, whole.ttft_ms);
        assert_eq!(merged.open.tpot_ms, whole.open.tpot_ms);
        assert_eq!(merged.open.itl_ms, whole.open.itl_ms);
        assert_eq!(merged.open.e2e_ms, whole.open.e2e_ms);
        assert_eq!(merged.total_tok_s, whole.total_tok_s);
        assert_eq!(merged.open.peak_active, whole.open.peak_active);
        assert_eq!(merged.status, crate::results::Status::Valid, "{merged:#?}");
        // The mean of each part's p99 is not the p99 of all.
        let p99 = |reqs: &[OpenRequest]| {
            let r = combine(cell, &plan.workload, &[(rec.clone(), reqs.to_vec())]);
            r.ttft_ms.map_or(0.0, |t| t.p99)
        };
        let mean: f64 = thirds.iter().map(|(_, r)| p99(r)).sum::<f64>() / 3.0;
        let true_p99 = whole.ttft_ms.map_or(0.0, |t| t.p99);
        assert!((mean - true_p99).abs() > 1e-3, "{mean} vs {true_p99}");
    }

    /// Worked by hand: three parts that each sent on time at 10 req/s send 30 together (not
    /// the union's (N − 1) ÷ span); a part whose client was 95% busy leaves the whole invalid.
    #[test]
    fn the_parts_rates_sent_add_up_and_a_busy_client_is_kept() {
        let plan = plan();
        let Some(cell) = plan.cells.iter().find(|c| c.id == "load/512/r30") else {
            panic!("{:#?}", plan.cells);
        };
        let mut rec = Record::new(cell, String::new(), &Default::default());
        rec.open.rate_sent = Some(10.0);
        let client = |busy: f64| crate::results::ClientUse {
            cpu_busy: busy,
            threads: 2,
            rss_mb: None,
            cpu_s: 1.0,
        };
        let all = requests();
        let parts: Vec<(Record, Vec<OpenRequest>)> = (0..3)
            .map(|k| {
                let mut r = rec.clone();
                r.client = Some(client(if k == 1 { 0.95 } else { 0.1 }));
                (r, all.iter().skip(k).step_by(3).cloned().collect())
            })
            .collect();
        let merged = combine(cell, &plan.workload, &parts);
        assert_eq!(merged.open.rate_sent, Some(30.0));
        assert_eq!(merged.client.map(|c| c.cpu_busy), Some(0.95));
        assert_eq!(merged.status, crate::results::Status::Invalid);
        assert!(
            merged
                .reasons
                .iter()
                .any(|r| r.starts_with("client saturated")),
            "{:?}",
            merged.reasons
        );
    }

    /// Worked by hand: 120 requests, request i to adapter i mod 3 of [a, b, c] (40 each),
    /// split over two parts: the whole's `by_adapter` counts every part's requests, 40 each.
    #[test]
    fn the_parts_adapters_add_up() {
        let plan = plan();
        let Some(cell) = plan.cells.iter().find(|c| c.id == "load/512/r30") else {
            panic!("{:#?}", plan.cells);
        };
        let mut rec = Record::new(cell, String::new(), &Default::default());
        let row = |name: &str| crate::results::AdapterUse {
            adapter: name.into(),
            requests: 0,
            total_tok_s: None,
            ttft_ms_p50: None,
        };
        rec.by_adapter = Some(vec![row("a"), row("b"), row("c")]);
        let all: Vec<OpenRequest> = requests()
            .into_iter()
            .enumerate()
            .map(|(i, r)| OpenRequest {
                adapter: Some(i % 3),
                ..r
            })
            .collect();
        let parts: Vec<(Record, Vec<OpenRequest>)> = (0..2)
            .map(|k| {
                (
                    rec.clone(),
                    all.iter().skip(k).step_by(2).cloned().collect(),
                )
            })
            .collect();
        let merged = combine(cell, &plan.workload, &parts);
        let got: Vec<(String, u64)> = merged
            .by_adapter
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a.adapter, a.requests))
            .collect();
        let want: Vec<(String, u64)> = ["a", "b", "c"]
            .iter()
            .map(|n| (n.to_string(), 40))
            .collect();
        assert_eq!(got, want);
    }
}
