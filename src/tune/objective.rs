//! What `tune` maximises (or minimises) under the spec's SLO, from a configuration's records:
//! measured, the best of its cells that met the SLO; predicted (the spec run against a twin),
//! the same with a 90% interval — its optimistic end counting every cell that could meet the
//! SLO within the twin's interval, its pessimistic end only those that met it. A predicted
//! cell counts as a measured one does (valid, not capped below `min_active_fraction` × C), and
//! its interval is never narrower than how far the family's twin missed the family's measured
//! configurations ([`Missed`]).

use crate::plan::Phase;
use crate::results::slo::at;
use crate::results::{Record, Status};
use crate::spec::{Slo, SloMetric};
use crate::telemetry::SERVER_RAN;
use crate::twin::predict::PredictedCell;
use serde::{Deserialize, Serialize};

/// The objective `--objective` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneObjective {
    /// Requests per second that met every objective of the SLO (vLLM's goodput), higher is
    /// better.
    Goodput,
    /// Total output tok/s per GPU (`hardware.gpu_count`, default 1) of a cell that met the
    /// SLO, higher is better.
    TokSPerGpu,
    /// $ per million output tokens (`hardware.cost_per_hour`) of a cell that met the SLO,
    /// lower is better.
    UsdPerMtok,
}

/// A configuration's predicted objective: its value and the ends of its 90% interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Estimate {
    /// The twin's value (`None`: no cell is predicted to meet the SLO).
    pub value: Option<f64>,
    /// The pessimistic end (`None`: no cell surely meets the SLO).
    pub low: Option<f64>,
    /// The optimistic end (`None`: unbounded — a cell without an interval could meet it).
    pub high: Option<f64>,
    /// Whether any cell could meet the SLO inside its interval.
    pub possible: bool,
}

impl Estimate {
    /// `1234.5 (90%: 1200.0 – 1300.0)`, for people.
    pub fn describe(&self) -> String {
        let num = |v: Option<f64>| v.map_or("—".to_string(), |x| format!("{x:.1}"));
        if !self.possible {
            return "no cell can meet the SLO inside its interval".into();
        }
        format!(
            "{} (90%: {} – {})",
            num(self.value),
            num(self.low),
            self.high.map_or("unbounded".into(), |h| format!("{h:.1}"))
        )
    }
}

impl TuneObjective {
    /// The name as `--objective` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TuneObjective::Goodput => "goodput",
            TuneObjective::TokSPerGpu => "tok-s-per-gpu",
            TuneObjective::UsdPerMtok => "usd-per-mtok",
        }
    }

    /// Whether `a` is better than `b`.
    pub fn beats(self, a: f64, b: f64) -> bool {
        match self {
            TuneObjective::UsdPerMtok => a < b,
            _ => a > b,
        }
    }

    /// The better of two values.
    pub fn best(self, a: Option<f64>, b: Option<f64>) -> Option<f64> {
        match (a, b) {
            (Some(x), Some(y)) => Some(if self.beats(y, x) { y } else { x }),
            (x, y) => x.or(y),
        }
    }

    /// One valid cell's value when it met the SLO.
    fn cell(self, r: &Record, gpus: f64) -> Option<f64> {
        self.counted(r, gpus).filter(|_| r.status == Status::Valid)
    }

    /// A cell's value when it met the SLO, its validity judged by the caller.
    fn counted(self, r: &Record, gpus: f64) -> Option<f64> {
        let met = r.open.slo_met == Some(true);
        match self {
            TuneObjective::Goodput => r.open.goodput_rps.filter(|g| *g > 0.0),
            TuneObjective::TokSPerGpu => r.total_tok_s.filter(|_| met).map(|t| t / gpus),
            TuneObjective::UsdPerMtok => r.usd_per_mtok.filter(|_| met),
        }
    }

    /// A measured configuration's value: the best of its cells (`None`: none met the SLO).
    pub fn measured<'a>(self, records: impl Iterator<Item = &'a Record>, gpus: f64) -> Option<f64> {
        records.fold(None, |acc, r| self.best(acc, self.cell(r, gpus)))
    }

    /// A cell's value at the optimistic end of a relative interval `f`: every request good.
    fn optimistic(self, r: &Record, gpus: f64, f: f64) -> Option<f64> {
        match self {
            TuneObjective::Goodput => {
                let rate = r
                    .measured_s
                    .filter(|s| *s > 0.0)
                    .map(|s| r.completed as f64 / s);
                self.best(r.open.goodput_rps, rate).map(|v| v * (1.0 + f))
            }
            TuneObjective::TokSPerGpu => r.total_tok_s.map(|t| t / gpus * (1.0 + f)),
            TuneObjective::UsdPerMtok => r.usd_per_mtok.map(|u| u / (1.0 + f)),
        }
    }

    /// A cell's value at the pessimistic end.
    fn pessimistic(self, v: f64, f: f64) -> Option<f64> {
        match self {
            TuneObjective::UsdPerMtok => (f < 1.0).then(|| v / (1.0 - f)),
            _ => Some(v * (1.0 - f).max(0.0)),
        }
    }

    /// A predicted configuration's value and interval from its simulated `records` and the
    /// prediction's `cells` (their intervals, each at least as wide as `rules.missed`); a cell
    /// counts as a measured one does: valid, the engine running at least `min_active` × C.
    pub fn predicted<'a>(
        self,
        records: impl Iterator<Item = &'a Record>,
        cells: &[PredictedCell],
        rules: &PredictionRules,
    ) -> Estimate {
        let (slo, gpus) = (rules.slo, rules.gpus);
        let mut e = Estimate::default();
        let mut unbounded = false;
        for r in records.filter(|r| counts(r, rules.min_active)) {
            let (f, f_ttft) = fractions(cells.iter().find(|c| c.cell == r.cell));
            let (f, f_ttft) = (
                at_least(f, rules.missed.tok_s),
                at_least(f_ttft, rules.missed.ttft),
            );
            let value = self.counted(r, gpus);
            e.value = self.best(e.value, value);
            let could = r.open.slo_met == Some(true) || could_meet(r, slo, f, f_ttft);
            if !could {
                continue;
            }
            e.possible = true;
            match f {
                Some(f) => {
                    e.high = self.best(e.high, self.optimistic(r, gpus, f));
                    e.low = self.best(e.low, value.and_then(|v| self.pessimistic(v, f)));
                }
                None => unbounded = true,
            }
        }
        if unbounded {
            e.high = None;
        }
        e
    }
}

/// What a predicted configuration's objective is judged by, as a measured one's.
#[derive(Debug, Clone, Copy)]
pub struct PredictionRules<'a> {
    /// The spec's SLO.
    pub slo: &'a Slo,
    /// `hardware.gpu_count` (at least 1).
    pub gpus: f64,
    /// `validity.min_active_fraction`.
    pub min_active: f64,
    /// How far the family's twin missed its measured configurations.
    pub missed: Missed,
}

/// How far a family's twin missed the configurations it was fitted on, as relative
/// half-widths every predicted cell's interval is at least (`None`: unbounded — the twin got
/// a measured configuration's validity or SLO wrong, or nothing could be compared).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Missed {
    /// Tok/s (and the objective, and latencies between tokens).
    pub tok_s: Option<f64>,
    /// TTFT.
    pub ttft: Option<f64>,
}

impl Missed {
    /// No miss: the cells' own intervals.
    pub const NONE: Missed = Missed {
        tok_s: Some(0.0),
        ttft: Some(0.0),
    };

    /// For people, of a family with `n` measured configurations.
    pub fn said(&self, n: usize) -> String {
        let pct = |f: Option<f64>| f.map_or("unbounded".into(), |f| format!("±{:.1}%", f * 100.0));
        let two = if n <= 2 {
            format!(
                " (twice the twin's miss on the {n} configuration(s) it was fitted on: too few to leave one out)"
            )
        } else {
            String::new()
        };
        format!(
            "intervals at least tok/s {}, TTFT {}{two}",
            pct(self.tok_s),
            pct(self.ttft)
        )
    }
}

/// The wider of a cell's half-width and the family's miss (`None` either: unbounded).
fn at_least(f: Option<f64>, missed: Option<f64>) -> Option<f64> {
    Some(f?.max(missed?))
}

/// Whether a predicted record counts as a measured one would: valid, its engine not capped
/// below `min_active` × C. The cap is the most the engine ran at once: the simulation's mean
/// is a few scrapes of a short window, which put a twin's m8 at 16 streams at 4.0 running
/// (8 most) — invalid on one fit, valid on the next — where the measured engine ran 8.0. A
/// record invalid for that reason alone is judged by the cap; a simulation whose metrics were
/// not judged may say valid, and is judged by it too.
fn counts(r: &Record, min_active: f64) -> bool {
    let only_engine_view = r.status == Status::Invalid
        && !r.reasons.is_empty()
        && r.reasons.iter().all(|x| x.starts_with(SERVER_RAN));
    if r.status != Status::Valid && !only_engine_view {
        return false;
    }
    let most = r.server.as_ref().and_then(|s| s.running_max);
    match most {
        Some(m) if r.phase == Phase::Decode => m >= min_active * f64::from(r.concurrency),
        _ => r.status == Status::Valid,
    }
}

/// A predicted cell's relative half-widths: tok/s (and latencies between tokens), TTFT.
fn fractions(c: Option<&PredictedCell>) -> (Option<f64>, Option<f64>) {
    let rel = |h: Option<f64>, v: Option<f64>| Some(h? / v.filter(|v| *v > 0.0)?);
    let Some(c) = c else { return (None, None) };
    let f = rel(c.interval.total_tok_s, c.total_tok_s)
        .or(rel(c.interval.per_request_tok_s, c.per_request_tok_s));
    (f, rel(c.interval.ttft_ms_p50, c.ttft_ms_p50).or(f))
}

/// Whether `r` could meet every term of `slo` with each latency at the low end of its
/// interval (no interval: it could).
fn could_meet(r: &Record, slo: &Slo, f: Option<f64>, f_ttft: Option<f64>) -> bool {
    slo.terms().all(|(m, p, limit)| {
        let (summary, f) = match m {
            SloMetric::Ttft => (r.ttft_ms, f_ttft),
            SloMetric::Tpot => (r.open.tpot_ms, f),
            SloMetric::Itl => (r.open.itl_ms.or(r.tbt_ms), f),
            SloMetric::E2e => (r.open.e2e_ms, f),
        };
        match (summary, f) {
            (Some(s), Some(f)) => at(&s, p) * (1.0 - f).max(0.0) <= limit.as_secs_f64() * 1e3,
            _ => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twin::model::Predicted;

    /// A predicted m8 cell at 16 streams: 10,000 tok/s, SLO met, the scraped mean 4.0 running.
    fn record(status: &str, reasons: &[&str], running_max: f64) -> Record {
        let v = serde_json::json!({"schema": "benchspec.result.v1", "cell": "m8/decode/1K/c16",
            "phase": "decode", "context": 1024, "concurrency": 16, "status": status,
            "reasons": reasons, "started_at": "2026-01-01T00:00:00Z", "prompt_tokens": 1024,
            "requests_started": 16, "completed": 16, "errors": 0, "error_kinds": {},
            "labels": {}, "total_tok_s": 10000.0, "slo_met": true,
            "server": {"running_mean": 4.0, "running_max": running_max, "source": "vllm"}});
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_predicted_cell_counts_by_the_most_its_engine_ran_as_a_measured_one_does() {
        let ran = format!("{SERVER_RAN}4.0 of 16 requests at once (2.0 waiting)");
        // min_active_fraction 0.4 × 16 streams = 6.4 (worked by hand).
        let table: [(&str, &[&str], f64, bool); 5] = [
            ("valid", &[], 8.0, true),
            ("invalid", &[&ran], 8.0, true), // only the scraped mean said 4.0
            ("invalid", &[&ran], 4.0, false), // capped at 4 < 6.4
            ("valid", &[], 6.0, false),
            ("invalid", &["3 of 16 requests failed"], 16.0, false),
        ];
        for (status, reasons, most, want) in table {
            let got = counts(&record(status, reasons, most), 0.4);
            assert_eq!(got, want, "{status} {reasons:?} running_max {most}");
        }
    }

    #[test]
    fn the_interval_is_never_narrower_than_the_familys_miss() {
        let slo = Slo::default();
        let cell = PredictedCell {
            cell: "m8/decode/1K/c16".into(),
            phase: "decode".into(),
            context: 1024,
            concurrency: 16,
            total_tok_s: Some(10000.0),
            per_request_tok_s: None,
            ttft_ms_p50: None,
            tbt_ms_p50: None,
            interval: Predicted {
                total_tok_s: Some(50.0),
                ..Predicted::default()
            },
            extrapolated: false,
            phase_fitted: true,
            method: "simulated",
            unknown: Vec::new(),
        };
        let r = [record("valid", &[], 8.0)];
        let at = |tok_s| {
            let rules = PredictionRules {
                slo: &slo,
                gpus: 1.0,
                min_active: 0.4,
                missed: Missed {
                    tok_s,
                    ttft: Some(0.0),
                },
            };
            let e =
                TuneObjective::TokSPerGpu.predicted(r.iter(), std::slice::from_ref(&cell), &rules);
            let round = |x: Option<f64>| x.map(|v| (v * 1e6).round() / 1e6);
            (round(e.value), round(e.low), round(e.high))
        };
        // The cell's own ±0.5% (50 of 10,000): 9,950 – 10,050; a family that missed its
        // measured configurations by 20%: 8,000 – 12,000; by an unknown amount: unbounded.
        assert_eq!(at(Some(0.0)), (Some(10000.0), Some(9950.0), Some(10050.0)));
        assert_eq!(at(Some(0.2)), (Some(10000.0), Some(8000.0), Some(12000.0)));
        assert_eq!(at(None), (Some(10000.0), None, None));
    }
}
