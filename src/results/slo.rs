//! Judging a cell against the spec's `slo` (docs/results.md): per request, whether it met every
//! objective (vLLM's goodput: TTFT, TPOT and E2E of the request against the thresholds; ITL
//! as the request's own gaps at the objective's percentile); per cell, whether each metric's
//! percentile over the cell is within its threshold (`slo_met`).

use super::stats::Summary;
use crate::spec::{Slo, SloMetric};

/// The latencies of one finished request, milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestLatencies {
    /// Whether it finished without failing.
    pub ok: bool,
    /// Time to first token.
    pub ttft: Option<f64>,
    /// Time per output token (absent for a single-token answer).
    pub tpot: Option<f64>,
    /// End-to-end latency.
    pub e2e: Option<f64>,
    /// Its gaps between tokens, sorted ascending.
    pub itl: Vec<f64>,
}

impl RequestLatencies {
    fn value(&self, m: SloMetric, p: u8) -> Option<f64> {
        match m {
            SloMetric::Ttft => self.ttft,
            SloMetric::Tpot => self.tpot,
            SloMetric::E2e => self.e2e,
            SloMetric::Itl => percentile_sorted(&self.itl, p),
        }
    }

    /// Whether it finished and met every objective (a metric it has no value of, such as
    /// TPOT of a one-token answer, is not held against it).
    pub fn good(&self, slo: &Slo) -> bool {
        self.ok
            && slo
                .terms()
                .all(|(m, p, limit)| self.value(m, p).is_none_or(|v| v <= ms(limit)))
    }
}

/// A cell's summaries of each metric.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summaries {
    /// TTFT.
    pub ttft: Option<Summary>,
    /// TPOT.
    pub tpot: Option<Summary>,
    /// ITL (or TBT).
    pub itl: Option<Summary>,
    /// End-to-end.
    pub e2e: Option<Summary>,
}

/// A cell's verdict against the SLO.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloVerdict {
    /// Requests per second that met every objective.
    pub goodput_rps: f64,
    /// Fraction of finished requests that met every objective.
    pub fraction: f64,
    /// Whether each metric's percentile over the cell is within its threshold.
    pub met: bool,
}

/// Judge `requests` (finished over `span_s` seconds) and the cell's `summaries` against
/// `slo`; `None` when there is no SLO or nothing finished.
pub fn judge(
    slo: &Slo,
    requests: &[RequestLatencies],
    s: &Summaries,
    span_s: f64,
) -> Option<SloVerdict> {
    if slo.is_empty() || requests.is_empty() {
        return None;
    }
    let good = requests.iter().filter(|r| r.good(slo)).count() as f64;
    Some(SloVerdict {
        goodput_rps: if span_s > 0.0 { good / span_s } else { 0.0 },
        fraction: good / requests.len() as f64,
        met: met(slo, s),
    })
}

/// Whether every objective holds at its percentile over the cell; a metric that was not
/// measured does not hold.
pub fn met(slo: &Slo, s: &Summaries) -> bool {
    slo.terms().all(|(m, p, limit)| {
        let summary = match m {
            SloMetric::Ttft => s.ttft,
            SloMetric::Tpot => s.tpot,
            SloMetric::Itl => s.itl,
            SloMetric::E2e => s.e2e,
        };
        summary.is_some_and(|x| at(&x, p) <= ms(limit))
    })
}

/// The summary's value at percentile `p` (50, 90, 95 or 99).
pub fn at(s: &Summary, p: u8) -> f64 {
    match p {
        50 => s.p50,
        90 => s.p90,
        95 => s.p95,
        _ => s.p99,
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The nearest-rank percentile of ascending `v`.
pub fn percentile_sorted(v: &[f64], p: u8) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let rank = (f64::from(p) / 100.0 * v.len() as f64).ceil() as usize;
    v.get(rank.clamp(1, v.len()) - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Objective, Span};
    use std::time::Duration;

    fn obj(p90: u64) -> Option<Objective> {
        Some(Objective {
            p90: Some(Span(Duration::from_millis(p90))),
            ..Objective::default()
        })
    }

    fn req(ttft: f64, tpot: f64, itl: &[f64]) -> RequestLatencies {
        RequestLatencies {
            ok: true,
            ttft: Some(ttft),
            tpot: Some(tpot),
            e2e: Some(ttft + tpot * 100.0),
            itl: itl.to_vec(),
        }
    }

    #[test]
    fn goodput_counts_the_requests_that_met_every_objective() {
        let slo = Slo {
            ttft: obj(500),
            tpot: obj(50),
            ..Slo::default()
        };
        let reqs = [
            req(100.0, 20.0, &[]), // good
            req(499.0, 50.0, &[]), // good: at the limit
            req(501.0, 20.0, &[]), // TTFT too slow
            req(100.0, 51.0, &[]), // TPOT too slow
            RequestLatencies {
                ok: false,
                ..req(1.0, 1.0, &[])
            }, // failed
        ];
        let v = judge(&slo, &reqs, &Summaries::default(), 2.0);
        assert_eq!(v.map(|v| (v.goodput_rps, v.fraction)), Some((1.0, 0.4)));
    }

    #[test]
    fn itl_is_judged_on_each_requests_own_gaps() {
        let slo = Slo {
            itl: Some(Objective {
                p99: Some(Span(Duration::from_millis(100))),
                ..Objective::default()
            }),
            ..Slo::default()
        };
        let gaps: Vec<f64> = (0..100)
            .map(|i| if i == 99 { 150.0 } else { 10.0 })
            .collect();
        // 100 gaps: the p99 is the 99th smallest (10 ms), the single 150 ms gap is the max.
        assert!(req(1.0, 1.0, &gaps).good(&slo));
        let mut worse = gaps.clone();
        worse[97] = 150.0;
        worse.sort_by(f64::total_cmp);
        assert!(!req(1.0, 1.0, &worse).good(&slo));
    }

    #[test]
    fn the_cell_meets_the_slo_when_every_percentile_holds() {
        let slo = Slo {
            ttft: obj(500),
            ..Slo::default()
        };
        let s = |p90| Summaries {
            ttft: Some(Summary {
                p90,
                ..Summary::default()
            }),
            ..Summaries::default()
        };
        assert!(met(&slo, &s(412.0)));
        assert!(!met(&slo, &s(501.0)));
        assert!(!met(&slo, &Summaries::default()), "unmeasured never holds");
    }
}
