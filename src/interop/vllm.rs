//! `vllm bench serve --save-result` JSON: one benchmark per file, its statistics as flat
//! keys (`mean_ttft_ms`, `median_ttft_ms`, `std_ttft_ms`, `p99_ttft_ms`, and `pNN_<metric>_ms`
//! for each of `--metric-percentiles`) for ttft, tpot, itl and e2el, the totals
//! (`completed`, `failed`, `total_input_tokens`, `total_output_tokens`, `duration`,
//! `request_throughput`, `output_throughput`), `request_rate` (a number or `"inf"`),
//! `max_concurrency`, and per-request arrays in seconds (`latencies` always, `ttfts` with
//! `--save-detailed`, with `input_lens` and `output_lens`). A statistic the file lacks (min, max, p90 without
//! `--metric-percentiles 50,90,99`) is taken from those arrays when the file has them. The
//! file does not say vLLM's version.

use super::{InteropError, PeerBenchmark, PeerRun, num, text};
use crate::results::Summary;
use serde_json::Value;

/// The percentile `p` (0–100) of sorted `v`, interpolated as numpy's default.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.len() == 1 {
        return v[0];
    }
    let rank = p / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

/// The summary of `<stat>_<metric>_ms` keys, per-request `values` (ms) filling gaps.
fn dist(v: &Value, metric: &str, values: Option<Vec<f64>>) -> Option<Summary> {
    let key = |stat: &str| num(v, &format!("/{stat}_{metric}_ms"));
    let mut sorted = values.unwrap_or_default();
    sorted.retain(|x| x.is_finite());
    sorted.sort_by(f64::total_cmp);
    let from = |p: f64| (!sorted.is_empty()).then(|| percentile(&sorted, p));
    Some(Summary {
        mean: key("mean")?,
        min: key("min")
            .or_else(|| sorted.first().copied())
            .or_else(|| key("median"))?,
        p50: key("median").or_else(|| key("p50"))?,
        p90: key("p90").or_else(|| from(90.0)).or_else(|| key("p99"))?,
        p95: key("p95").or_else(|| from(95.0)).unwrap_or_default(),
        p99: key("p99").or_else(|| from(99.0))?,
        max: key("max")
            .or_else(|| sorted.last().copied())
            .or_else(|| key("p99"))?,
    })
}

/// The statistics the file does not state for a metric that has no per-request values to
/// take them from: the record shows its median as the minimum, its p99 as the maximum (and
/// the p90 when absent), and 0 as the p95 — said in the record's warnings, not made up
/// silently.
fn unstated(v: &Value) -> Vec<String> {
    let mut notes = Vec::new();
    for (metric, values) in [
        ("ttft", "ttfts"),
        ("tpot", ""),
        ("itl", ""),
        ("e2el", "latencies"),
    ] {
        if num(v, &format!("/mean_{metric}_ms")).is_none()
            || (!values.is_empty() && v.get(values).is_some_and(Value::is_array))
        {
            continue;
        }
        let missing: Vec<&str> = ["min", "p90", "p95", "max"]
            .into_iter()
            .filter(|stat| num(v, &format!("/{stat}_{metric}_ms")).is_none())
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "vLLM's file states no {} of {metric}: in the record a missing min is its median, a missing max or p90 its p99, a missing p95 0 (unknown, not measured)",
                missing.join(", ")
            ));
        }
    }
    notes
}

fn array(v: &Value, key: &str, scale: f64) -> Option<Vec<f64>> {
    let a = v.get(key)?.as_array()?;
    Some(
        a.iter()
            .filter_map(Value::as_f64)
            .map(|x| x * scale)
            .collect(),
    )
}

/// The least and the most of the per-request lengths `key` (`--save-detailed`).
fn lens_range(v: &Value, key: &str) -> Option<(f64, f64)> {
    let a = array(v, key, 1.0)?;
    let min = a.iter().copied().reduce(f64::min)?;
    let max = a.iter().copied().reduce(f64::max)?;
    Some((min, max))
}

/// `20261204-154911` as Unix seconds (vLLM writes local time; read as UTC).
fn date_seconds(d: &str) -> Option<f64> {
    let (day, time) = d.split_once('-')?;
    if day.len() != 8 || time.len() != 6 {
        return None;
    }
    let iso = format!(
        "{}-{}-{}T{}:{}:{}",
        &day[..4],
        &day[4..6],
        &day[6..],
        &time[..2],
        &time[2..4],
        &time[4..]
    );
    super::aiperf::iso_seconds(&iso)
}

/// Read vLLM's saved result.
pub fn read(v: &Value) -> Result<PeerRun, InteropError> {
    if v.get("mean_ttft_ms").is_none() || v.get("completed").is_none() {
        return Err(InteropError::Shape("no `mean_ttft_ms` or `completed`"));
    }
    let rate = match v.get("request_rate") {
        Some(Value::String(s)) if s == "inf" => Some(f64::INFINITY),
        Some(x) => x.as_f64().filter(|r| r.is_finite()),
        None => None,
    };
    let completed = num(v, "/completed").map_or(0, |x| x as u64);
    let errors = num(v, "/failed").map(|x| x as u64).unwrap_or_else(|| {
        let prompts = num(v, "/num_prompts").map_or(completed, |x| x as u64);
        prompts.saturating_sub(completed)
    });
    let output = num(v, "/total_output_tokens");
    let mean = |total: Option<f64>| {
        total
            .filter(|_| completed > 0)
            .map(|t| t / completed as f64)
    };
    let burstiness = num(v, "/burstiness").unwrap_or(1.0);
    let b = PeerBenchmark {
        label: match rate {
            Some(r) if r.is_finite() => format!("request-rate {r}"),
            Some(_) => "request-rate inf".into(),
            None => "request-rate not stated".into(),
        },
        rate,
        arrivals: Some(
            if burstiness == 1.0 {
                "poisson"
            } else {
                "gamma"
            }
            .into(),
        ),
        max_concurrency: num(v, "/max_concurrency").map(|c| c as u32),
        started_at: text(v, "/date").as_deref().and_then(date_seconds),
        duration_s: num(v, "/duration"),
        completed,
        errors,
        incomplete: 0,
        input_tokens_mean: mean(num(v, "/total_input_tokens")),
        input_tokens_range: lens_range(v, "input_lens"),
        output_tokens_mean: mean(output),
        output_tokens_range: lens_range(v, "output_lens"),
        output_tokens: output.map(|x| x as u64),
        output_tok_s: num(v, "/output_throughput"),
        request_rate: num(v, "/request_throughput"),
        ttft: dist(v, "ttft", array(v, "ttfts", 1000.0)),
        tpot: dist(v, "tpot", None),
        itl: dist(v, "itl", None),
        e2e: dist(v, "e2el", array(v, "latencies", 1000.0)),
        notes: unstated(v),
    };
    Ok(PeerRun {
        version: text(v, "/vllm_version").or_else(|| text(v, "/version")),
        model: text(v, "/model_id"),
        target: None,
        benchmarks: vec![b],
    })
}
