//! guidellm's JSON (`guidellm run --output kind=json`, v0.8): `benchmarks[]`, one per
//! strategy or rate, each with `metrics.<name>.successful` distributions (`mean`, `median`,
//! `min`, `max`, `percentiles.p50…p99`), latencies in ms but `request_latency` in seconds.

use super::{InteropError, PeerBenchmark, PeerRun, num, range, text};
use crate::results::Summary;
use serde_json::Value;

/// A `successful` distribution of `metrics.<name>` as a summary, × `scale` (s → ms: 1000).
fn dist(m: &Value, name: &str, scale: f64) -> Option<Summary> {
    let d = m.pointer(&format!("/{name}/successful"))?;
    if d.get("count").and_then(Value::as_u64) == Some(0) {
        return None;
    }
    let p = |k: &str| num(d, &format!("/percentiles/{k}")).map(|x| x * scale);
    Some(Summary {
        mean: num(d, "/mean")? * scale,
        min: num(d, "/min")? * scale,
        p50: num(d, "/median").map(|x| x * scale).or_else(|| p("p50"))?,
        p90: p("p90")?,
        p95: p("p95").unwrap_or_default(),
        p99: p("p99")?,
        max: num(d, "/max")? * scale,
    })
}

fn benchmark(b: &Value) -> Result<PeerBenchmark, InteropError> {
    let m = b
        .get("metrics")
        .ok_or(InteropError::Shape("a benchmark without `metrics`"))?;
    let strategy = b.pointer("/config/strategy").cloned().unwrap_or_default();
    let kind = text(&strategy, "/type_").unwrap_or_else(|| "unknown".into());
    let rate = num(&strategy, "/rate");
    let streams = num(&strategy, "/streams").map(|s| s as u32);
    let label = match (rate, streams) {
        (Some(r), _) => format!("{kind}@{r:.2}"),
        (None, Some(s)) => format!("{kind}@{s}"),
        _ => kind.clone(),
    };
    let count = |k: &str| num(m, &format!("/request_totals/{k}")).map_or(0, |x| x as u64);
    Ok(PeerBenchmark {
        label,
        rate: rate.filter(|_| kind != "throughput"),
        arrivals: Some(kind.clone()).filter(|k| k == "poisson" || k == "constant"),
        max_concurrency: match kind.as_str() {
            "synchronous" => Some(1),
            "concurrent" => streams,
            _ => None,
        },
        started_at: num(b, "/start_time"),
        duration_s: num(b, "/duration"),
        completed: count("successful"),
        errors: count("errored"),
        incomplete: count("incomplete"),
        input_tokens_mean: num(m, "/prompt_token_count/successful/mean"),
        input_tokens_range: range(m, "/prompt_token_count/successful"),
        output_tokens_mean: num(m, "/output_token_count/successful/mean"),
        output_tokens_range: range(m, "/output_token_count/successful"),
        output_tokens: num(m, "/output_token_count/successful/total_sum").map(|x| x as u64),
        output_tok_s: num(m, "/output_tokens_per_second/successful/mean"),
        request_rate: num(m, "/requests_per_second/successful/mean"),
        ttft: dist(m, "time_to_first_token_ms", 1.0),
        tpot: dist(m, "time_per_output_token_ms", 1.0),
        itl: dist(m, "inter_token_latency_ms", 1.0),
        e2e: dist(m, "request_latency", 1000.0),
        notes: Vec::new(),
    })
}

/// Read guidellm's JSON.
pub fn read(v: &Value) -> Result<PeerRun, InteropError> {
    let list = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .ok_or(InteropError::Shape("no `benchmarks` array"))?;
    if list.is_empty() {
        return Err(InteropError::Shape("`benchmarks` is empty"));
    }
    let benchmarks = list.iter().map(benchmark).collect::<Result<Vec<_>, _>>()?;
    let backend = list[0]
        .pointer("/config/backend")
        .cloned()
        .unwrap_or_default();
    Ok(PeerRun {
        version: text(v, "/metadata/guidellm_version"),
        model: text(&backend, "/model"),
        target: text(&backend, "/target"),
        benchmarks,
    })
}
