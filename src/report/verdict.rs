//! How `compare` judges one metric's change: past the threshold, past an absolute floor, and
//! — where both runs measured the cell several times — significant by Welch's t-test, into
//! `regression`, `improvement`, `no significant change` or `not comparable`; and
//! `--threshold`'s percentage read ([`parse_threshold`]).

use super::ReportError;
use crate::results::Record;
use schemars::JsonSchema;
use serde::Serialize;

/// What a change amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Worse past the threshold and the floor (and significant, with repeats).
    Regression,
    /// Better past the threshold and the floor (and significant, with repeats).
    Improvement,
    /// Within the threshold, under the floor, or not significant.
    #[serde(rename = "no significant change")]
    NoSignificantChange,
    /// A value is missing on one side.
    #[serde(rename = "not comparable")]
    NotComparable,
}

/// How changes are judged.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct Rules {
    /// Percent past which a change counts.
    pub threshold_pct: f64,
    /// With repeats on both sides, a change counts only when Welch's p is below this.
    pub alpha: f64,
    /// Latency changes smaller than this many ms never count.
    pub min_delta_ms: f64,
    /// Rate changes smaller than this many tok/s never count.
    pub min_delta_tok_s: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            threshold_pct: 5.0,
            alpha: 0.05,
            min_delta_ms: 1.0,
            min_delta_tok_s: 1.0,
        }
    }
}

/// Parse `5%`, `5` or `2.5%` as percent.
pub fn parse_threshold(text: &str) -> Result<f64, ReportError> {
    let t = text.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| ReportError::Threshold(text.to_string()))
}

impl Rules {
    /// The smallest change of metric `key` that can count.
    fn floor(&self, key: &str) -> f64 {
        if key.ends_with("_tok_s") {
            self.min_delta_tok_s
        } else if key.contains("_ms_") {
            self.min_delta_ms
        } else {
            0.0
        }
    }
}

impl Rules {
    /// The verdict on metric `key` going from `base` to `new` (`change_pct` apart), with
    /// Welch's `p_value` when both sides have repeats; `higher` when higher is better.
    pub fn judge(
        &self,
        key: &str,
        (base, new): (Option<f64>, Option<f64>),
        change_pct: Option<f64>,
        p_value: Option<f64>,
        higher: bool,
    ) -> Verdict {
        match (base, new, change_pct) {
            (Some(bv), Some(nv), Some(c)) => {
                let counts = c.abs() > self.threshold_pct
                    && (nv - bv).abs() >= self.floor(key)
                    && p_value.is_none_or(|p| p < self.alpha);
                match (counts, (c < 0.0) == higher) {
                    (false, _) => Verdict::NoSignificantChange,
                    (true, true) => Verdict::Regression,
                    (true, false) => Verdict::Improvement,
                }
            }
            (Some(bv), Some(nv), None) if bv == nv => Verdict::NoSignificantChange,
            _ => Verdict::NotComparable,
        }
    }
}

/// A metric read off a record.
pub(crate) type Pick = fn(&Record) -> Option<f64>;

pub(crate) const RATES: [(&str, &str, Pick); 7] = [
    ("total_tok_s", "Total tok/s", |r| r.total_tok_s),
    ("per_request_tok_s", "Per request tok/s", |r| {
        r.per_request_tok_s
    }),
    ("prefill_tok_s", "Prefill tok/s", |r| r.prefill_tok_s),
    ("rate_achieved", "Achieved req/s", |r| r.open.rate_achieved),
    ("goodput_rps", "Goodput req/s", |r| r.open.goodput_rps),
    ("capacity", "Capacity", capacity),
    ("tokens_per_joule", "Tokens per joule", |r| {
        r.tokens_per_joule
    }),
];
pub(crate) const LATENCIES: [(&str, &str, Pick); 6] = [
    ("ttft_ms_p50", "TTFT p50", |r| r.ttft_ms.map(|s| s.p50)),
    ("tbt_ms_p50", "TBT p50", |r| r.tbt_ms.map(|s| s.p50)),
    ("ttft_ms_p99", "TTFT p99", |r| {
        r.open.rate_offered.and(r.ttft_ms.map(|s| s.p99))
    }),
    ("tpot_ms_p50", "TPOT p50", |r| {
        r.open.rate_offered.and(r.open.tpot_ms.map(|s| s.p50))
    }),
    ("e2e_ms_p99", "E2E p99", |r| {
        r.open.rate_offered.and(r.open.e2e_ms.map(|s| s.p99))
    }),
    ("usd_per_mtok", "USD per M output tokens", |r| {
        r.usd_per_mtok
    }),
];

/// A capacity search's result as a value that can be judged: the capacity found; 0 when not
/// even the search's `min` met the SLO (a collapse is a regression, not a missing value);
/// none when the search's `max` still met it ("at least N" is not N: a fall from 34 to "at
/// least 4" cannot be told from no change).
fn capacity(r: &Record) -> Option<f64> {
    use crate::results::CapacityBound;
    if r.phase != crate::plan::Phase::Capacity {
        return r.open.capacity;
    }
    match r.open.capacity_bound {
        Some(CapacityBound::AtLeast) => None,
        Some(CapacityBound::BelowMin) => Some(0.0),
        _ => r.open.capacity,
    }
}

/// A capacity search's probe: its value differs from run to run, so only the search's
/// summary record is compared.
pub(crate) fn probe(r: &Record) -> bool {
    r.cell.split('/').any(|s| s == "capacity") && r.phase != crate::plan::Phase::Capacity
}

/// The headline metrics of a record that `compare` and the history judge: `(key, value,
/// higher is better)`, none for a capacity search's probe.
pub(crate) fn headline(r: &Record) -> Vec<(&'static str, f64, bool)> {
    if probe(r) {
        return Vec::new();
    }
    let rates = RATES.iter().map(|m| (m, true));
    let latencies = LATENCIES.iter().map(|m| (m, false));
    rates
        .chain(latencies)
        .filter_map(|((key, _, pick), higher)| Some((*key, pick(r)?, higher)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(parse_threshold("5%").ok(), Some(5.0));
        assert_eq!(parse_threshold("2.5").ok(), Some(2.5));
        assert_eq!(parse_threshold(" 0% ").ok(), Some(0.0));
        for bad in ["", "five", "-1%", "%", "inf"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
