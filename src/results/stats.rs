//! Latency statistics with bounded memory: an HDR histogram of microseconds (3 significant
//! digits) summarised as mean, min, p50, p90, p99 and max in milliseconds.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A latency summary in milliseconds (`ttft_ms`, `tbt_ms` and the like).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile (absent in records of older runs).
    #[serde(default)]
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// A latency histogram.
#[derive(Debug, Clone)]
pub struct Latencies {
    hist: Option<Histogram<u64>>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            hist: Histogram::new(3).ok(),
        }
    }
}

impl Latencies {
    /// Record one latency in seconds.
    pub fn record_s(&mut self, secs: f64) {
        if let Some(h) = &mut self.hist {
            let us = (secs * 1e6).round().max(0.0) as u64;
            let _ = h.record(us.max(1));
        }
    }

    /// Record one latency in microseconds.
    pub fn record_us(&mut self, us: u64) {
        if let Some(h) = &mut self.hist {
            let _ = h.record(us.max(1));
        }
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &Latencies) {
        if let (Some(h), Some(o)) = (&mut self.hist, &other.hist) {
            let _ = h.add(o);
        }
    }

    /// The summary in milliseconds; `None` when empty.
    pub fn summary(&self) -> Option<Summary> {
        let h = self.hist.as_ref().filter(|h| !h.is_empty())?;
        let ms = |us: u64| round3(us as f64 / 1000.0);
        Some(Summary {
            mean: round3(h.mean() / 1000.0),
            min: ms(h.min()),
            p50: ms(h.median_equivalent(h.value_at_quantile(0.5))),
            p90: ms(h.median_equivalent(h.value_at_quantile(0.9))),
            p95: ms(h.median_equivalent(h.value_at_quantile(0.95))),
            p99: ms(h.median_equivalent(h.value_at_quantile(0.99))),
            max: ms(h.max()),
        })
    }
}

/// Round to 3 decimals, enough for milliseconds from microseconds.
pub fn round3(v: f64) -> f64 {
    round(v, 3)
}

/// `v` rounded to `digits` decimals: the one rounding of every figure written.
pub fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// US dollars per million output tokens of hardware costing `cost_per_hour` that makes
/// `total_tok_s`: cost / 3600 / tok/s × 10⁶, to 4 decimals (none at no throughput).
pub fn usd_per_mtok(cost_per_hour: f64, total_tok_s: f64) -> Option<f64> {
    (total_tok_s > 0.0 && cost_per_hour >= 0.0)
        .then(|| round(cost_per_hour / 3600.0 / total_tok_s * 1e6, 4))
}

/// The median of a few values (per-request rates of one cell).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Mean and coefficient of variation of the gaps between consecutive times.
pub fn gap_stats(times: &[f64]) -> Option<(f64, f64)> {
    if times.len() < 3 {
        return None;
    }
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean > 0.0).then(|| (mean, var.sqrt() / mean))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_per_million_output_tokens() {
        // $3.50 an hour at 1,000 tok/s: 3.6M tokens an hour, $0.9722 per million.
        assert_eq!(usd_per_mtok(3.5, 1000.0), Some(0.9722));
        assert_eq!(usd_per_mtok(3.5, 0.0), None);
        assert_eq!(usd_per_mtok(0.0, 10.0), Some(0.0));
    }

    #[test]
    fn summary_in_milliseconds() {
        let mut l = Latencies::default();
        for i in 1..=100 {
            l.record_s(f64::from(i) / 1000.0);
        }
        let s = l.summary().unwrap_or_default();
        // Three significant digits: within 0.1%.
        let close = |a: f64, b: f64| (a - b).abs() <= b * 1e-3;
        assert!(
            close(s.min, 1.0) && close(s.p50, 50.0) && close(s.max, 100.0),
            "{s:?}"
        );
        assert!(close(s.mean, 50.5), "{s:?}");
        assert!(close(s.p99, 99.0), "{s:?}");
        assert!(Latencies::default().summary().is_none());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
