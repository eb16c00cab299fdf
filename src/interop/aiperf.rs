//! AIPerf's `profile_export_aiperf.json` (0.13, schema 1.4): one benchmark, each metric an
//! object with `unit`, `avg`, `p1…p99`, `min`, `max` (ms for latencies), the load in
//! `input_config.phases[]`, the start as a local ISO time without offset.

use super::{InteropError, PeerBenchmark, PeerRun, num, range, text};
use crate::results::Summary;
use serde_json::Value;

fn dist(v: &Value, name: &str) -> Option<Summary> {
    let d = v.get(name)?;
    let g = |k: &str| num(d, &format!("/{k}"));
    Some(Summary {
        mean: g("avg")?,
        min: g("min")?,
        p50: g("p50")?,
        p90: g("p90")?,
        p95: g("p95").unwrap_or_default(),
        p99: g("p99")?,
        max: g("max")?,
    })
}

/// `2026-12-04T15:49:11.536139` (no offset: read as UTC) as Unix seconds.
pub(crate) fn iso_seconds(t: &str) -> Option<f64> {
    let (date, time) = t.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut c = time.split(':');
    let (h, mi) = (
        c.next()?.parse::<i64>().ok()?,
        c.next()?.parse::<i64>().ok()?,
    );
    let s: f64 = c.next()?.split('+').next()?.parse().ok()?;
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60) as f64 + s)
}

/// Read AIPerf's JSON.
pub fn read(v: &Value) -> Result<PeerRun, InteropError> {
    if v.get("aiperf_version").is_none() && v.get("time_to_first_token").is_none() {
        return Err(InteropError::Shape(
            "no `aiperf_version` or `time_to_first_token`",
        ));
    }
    let phase = v
        .pointer("/input_config/phases")
        .and_then(Value::as_array)
        .and_then(|p| {
            p.iter()
                .find(|x| text(x, "/kind").as_deref() == Some("profiling"))
                .or(p.first())
        })
        .cloned()
        .unwrap_or_default();
    let rate = num(&phase, "/rate");
    let concurrency = num(&phase, "/concurrency").map(|c| c as u32);
    let kind = text(&phase, "/type");
    let label = match (rate, concurrency) {
        (Some(r), _) => format!("request-rate {r}"),
        (None, Some(c)) => format!("concurrency {c}"),
        _ => "profile".into(),
    };
    let completed = num(v, "/request_count/avg").map_or(0, |x| x as u64);
    let errors = v
        .get("error_summary")
        .and_then(Value::as_array)
        .map_or(0, |e| {
            e.iter().filter_map(|x| num(x, "/count")).sum::<f64>() as u64
        });
    let b = PeerBenchmark {
        label,
        rate,
        arrivals: kind.filter(|k| k == "poisson" || k == "constant"),
        max_concurrency: concurrency,
        started_at: text(v, "/start_time").as_deref().and_then(iso_seconds),
        duration_s: num(v, "/benchmark_duration/avg"),
        completed,
        errors,
        incomplete: 0,
        input_tokens_mean: num(v, "/input_sequence_length/avg"),
        input_tokens_range: range(v, "/input_sequence_length"),
        output_tokens_mean: num(v, "/output_sequence_length/avg"),
        output_tokens_range: range(v, "/output_sequence_length"),
        output_tokens: num(v, "/total_osl/avg").map(|x| x as u64),
        output_tok_s: num(v, "/output_token_throughput/avg"),
        request_rate: num(v, "/request_throughput/avg"),
        ttft: dist(v, "time_to_first_token"),
        tpot: dist(v, "inter_token_latency"),
        itl: dist(v, "inter_chunk_latency").or_else(|| dist(v, "inter_token_latency")),
        e2e: dist(v, "request_latency"),
        notes: Vec::new(),
    };
    Ok(PeerRun {
        version: text(v, "/aiperf_version"),
        model: text(v, "/input_config/models/items/0/name"),
        target: text(v, "/input_config/endpoint/urls/0"),
        benchmarks: vec![b],
    })
}
