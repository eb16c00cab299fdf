//! A cell measured several times (`repeats`, docs/results.md): its repeats' records combined into
//! one — the means of the headline metrics with their 95% confidence intervals and each
//! repeat's value, counts added up, and the verdict of the worst repeat.

use super::significance::mean_ci95;
use super::{Record, Status};
use std::collections::BTreeMap;

/// The metrics a repeated cell reports as mean ± half-width, and where they live.
pub const KEYS: [&str; 5] = [
    "total_tok_s",
    "per_request_tok_s",
    "ttft_ms_p50",
    "tbt_ms_p50",
    "prefill_tok_s",
];

/// The value of metric `key` in `r`.
pub fn get(r: &Record, key: &str) -> Option<f64> {
    match key {
        "total_tok_s" => r.total_tok_s,
        "per_request_tok_s" => r.per_request_tok_s,
        "ttft_ms_p50" => r.ttft_ms.map(|s| s.p50),
        "tbt_ms_p50" => r.tbt_ms.map(|s| s.p50),
        "prefill_tok_s" => r.prefill_tok_s,
        _ => None,
    }
}

fn set(r: &mut Record, key: &str, v: f64) {
    match key {
        "total_tok_s" => r.total_tok_s = Some(v),
        "per_request_tok_s" => r.per_request_tok_s = Some(v),
        "ttft_ms_p50" => {
            if let Some(s) = &mut r.ttft_ms {
                s.p50 = v;
            }
        }
        "tbt_ms_p50" => {
            if let Some(s) = &mut r.tbt_ms {
                s.p50 = v;
            }
        }
        "prefill_tok_s" => r.prefill_tok_s = Some(v),
        _ => {}
    }
}

fn round(v: f64) -> f64 {
    super::stats::round3(v)
}

/// Fill `rec`'s `repeats`, `ci95` and `per_repeat` from `values` (key → one value per
/// repeat), and put each mean in its field.
pub fn summarize(rec: &mut Record, values: BTreeMap<String, Vec<f64>>, repeats: u32) {
    let mut ci = BTreeMap::new();
    for (key, v) in &values {
        if let Some((mean, half)) = mean_ci95(v) {
            set(rec, key, round(mean));
            if let Some(h) = half {
                ci.insert(key.clone(), round(h));
            }
        }
    }
    rec.repeats = Some(repeats);
    rec.ci95 = Some(ci);
    rec.per_repeat = Some(values);
}

/// One record of the repeats of a cell (in the order measured; at least one).
pub fn combine(mut reps: Vec<Record>) -> Option<Record> {
    let n = reps.len() as u32;
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for key in KEYS {
        let v: Vec<f64> = reps.iter().filter_map(|r| get(r, key)).collect();
        if !v.is_empty() {
            values.insert(key.to_string(), v);
        }
    }
    let mut rec = reps.pop()?;
    rec.reasons = rec
        .reasons
        .iter()
        .map(|w| format!("repeat {n}: {w}"))
        .collect();
    for (i, r) in reps.iter().enumerate() {
        rec.reasons
            .extend(r.reasons.iter().map(|w| format!("repeat {}: {w}", i + 1)));
        rec.warnings.extend(r.warnings.iter().cloned());
        rec.requests_started += r.requests_started;
        rec.completed += r.completed;
        rec.errors += r.errors;
        for (k, c) in &r.error_kinds {
            *rec.error_kinds.entry(k.clone()).or_default() += c;
        }
        rec.output_tokens = match (rec.output_tokens, r.output_tokens) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        rec.measured_s = match (rec.measured_s, r.measured_s) {
            (Some(a), Some(b)) => Some(round(a + b)),
            (a, b) => a.or(b),
        };
        rec.status = worse(rec.status, r.status);
        rec.images = super::ImageUse::merge(rec.images, r.images);
    }
    rec.reasons.sort();
    rec.warnings.sort();
    rec.warnings.dedup();
    summarize(&mut rec, values, n);
    Some(rec)
}

/// The worse of two verdicts: a failed repeat fails the cell only when every one failed.
fn worse(a: Status, b: Status) -> Status {
    match (a, b) {
        (Status::Failed, Status::Failed) => Status::Failed,
        (Status::Valid, Status::Valid) => Status::Valid,
        (Status::Skipped, o) | (o, Status::Skipped) => o,
        _ => Status::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stats::Summary;

    fn rep(tok_s: f64, ttft: f64, status: Status) -> Record {
        let mut r: Record = serde_json::from_value(serde_json::json!({
            "schema": "benchspec.result.v1", "cell": "decode/1K/c2", "phase": "decode",
            "context": 1024, "concurrency": 2, "status": "valid", "reasons": [],
            "started_at": "", "measured_s": 2.0, "prompt_tokens": 1024, "output_tokens": 100,
            "token_source": "usage", "total_tok_s": tok_s, "per_request_tok_s": null,
            "avg_active": 2.0, "requests_started": 4, "completed": 2, "errors": 0,
            "error_kinds": {}, "ttft_ms": null, "tbt_ms": null, "prefill_tok_s": null,
            "labels": {}, "server_prompt_tokens": null
        }))
        .unwrap_or_else(|e| unreachable!("{e}"));
        r.ttft_ms = Some(Summary {
            p50: ttft,
            ..Summary::default()
        });
        r.status = status;
        if status == Status::Invalid {
            r.reasons.push("short window".into());
        }
        r
    }

    #[test]
    fn repeats_become_a_mean_with_its_interval() {
        let reps = vec![
            rep(100.0, 10.0, Status::Valid),
            rep(110.0, 12.0, Status::Invalid),
            rep(120.0, 11.0, Status::Valid),
        ];
        let r = combine(reps).unwrap_or_else(|| unreachable!());
        assert_eq!(r.total_tok_s, Some(110.0));
        assert_eq!(r.ttft_ms.map(|s| s.p50), Some(11.0));
        let ci = r.ci95.unwrap_or_default();
        // s = 10, n = 3: t(0.975, 2) = 4.303 → 4.303 × 10 / √3.
        assert!((ci["total_tok_s"] - 24.843).abs() < 0.01, "{ci:?}");
        assert_eq!(
            r.per_repeat.unwrap_or_default()["total_tok_s"],
            vec![100.0, 110.0, 120.0]
        );
        assert_eq!(
            (r.repeats, r.output_tokens, r.completed),
            (Some(3), Some(300), 6)
        );
        assert_eq!(r.status, Status::Invalid);
        assert_eq!(r.reasons, vec!["repeat 2: short window".to_string()]);
    }
}
