//! The twin's 90% intervals, earned from held-out error rather than from the residuals of
//! the fit: each fitted cell is left out in turn, the others fitted, and the left-out cell
//! predicted. Its |error| divided by how far it lay outside the others' range ([`widen`]: 1
//! inside, once more per doubling of context or concurrency beyond) is its score; the interval
//! is their conformal 90% quantile ([`conformal`]), per metric (tok/s and TTFT), and a cell's interval
//! is that times its own [`widen`]. The basis — how many cells, how many of them were
//! extrapolated when left out, which phases — is kept with the twin, and `predict` doubles
//! the interval of a phase no fitted cell was of.

use super::fit::{Obs, fit_designed};
use super::identify::{Designs, unknown};
use super::model::Params;
use super::{Range, Residual, residuals};
use crate::plan::Phase;
use serde::{Deserialize, Serialize};

/// What one metric's interval rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Basis {
    /// The half-width inside the fitted range, percent of the value (absent: no left-out cell
    /// earned one, and there is no interval).
    pub pct: Option<f64>,
    /// Left-out cells whose error it is the 90th percentile of.
    pub cells: usize,
    /// Of those, the cells that lay outside the others' range when left out.
    pub extrapolated: usize,
    /// The coverage the interval is earned for: 0.9 from 9 left-out cells on, the largest
    /// error n/(n + 1) below that ([`conformal`]).
    #[serde(default = "ninety")]
    pub level: f64,
    /// Of `cells`, those the others could not predict (a metric they leave unidentified):
    /// scored by the whole fit's own error, which their held-out error is at least.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_sample: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn ninety() -> f64 {
    0.9
}

impl Basis {
    /// For people: `tok/s ±12.0% from 8 left-out cell(s) (0 extrapolated; the largest: an
    /// 89% interval, 9 cells earn 90%)`, or that there is none.
    pub fn describe(&self, name: &str) -> String {
        match self.pct {
            None => format!("{name}: no interval (no fitted cell could be left out to earn one)"),
            Some(p) => {
                let level = if self.level < 0.9 {
                    format!(
                        "; the largest: a {:.0}% interval, 9 cells earn 90%",
                        self.level * 100.0
                    )
                } else {
                    String::new()
                };
                let own = if self.in_sample > 0 {
                    format!(
                        "; {} scored by the fit's own error, the others could not predict them",
                        self.in_sample
                    )
                } else {
                    String::new()
                };
                format!(
                    "{name} ±{p:.1}% from {} left-out cell(s) ({} extrapolated{own}{level})",
                    self.cells, self.extrapolated
                )
            }
        }
    }
}

/// The conformal quantile of `scores` for 90% coverage: the ⌈(n + 1) · 0.9⌉-th smallest
/// (what covers a new cell exchangeable with these at least 90% of the time), and the level
/// it is earned for. Fewer than 9 scores cannot earn 90%: the largest is taken, which covers
/// at least n/(n + 1) of such cells, and that level is said. (The plain 90th percentile of
/// 8 scores is their second largest, and covered 4 of 8 held-out cells on a real vLLM.)
pub fn conformal(mut scores: Vec<f64>) -> Option<(f64, f64)> {
    if scores.is_empty() {
        return None;
    }
    scores.sort_by(f64::total_cmp);
    let n = scores.len();
    let k = ((n + 1) as f64 * 0.9).ceil() as usize;
    Some(if k <= n {
        (scores[k - 1], 0.9)
    } else {
        (scores[n - 1], n as f64 / (n + 1) as f64)
    })
}

/// The intervals of a twin, and what they rest on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// How they were earned.
    pub method: String,
    /// Per-request and total tok/s, TBT.
    pub tok_s: Basis,
    /// TTFT p50 of decode (and other) cells.
    pub ttft: Basis,
    /// TTFT of prefill cells (a cold prompt's: earned on prefill cells alone).
    pub prefill_ttft: Basis,
    /// The phases of the fitted cells (a predicted cell of another phase gets twice the
    /// interval, marked).
    pub phases: Vec<String>,
}

/// The range of `obs`.
pub fn range_of(obs: &[&Obs]) -> Range {
    let span = |f: &dyn Fn(&Obs) -> f64| {
        let v = obs.iter().map(|o| f(o));
        [
            v.clone().fold(f64::INFINITY, f64::min),
            v.fold(f64::NEG_INFINITY, f64::max),
        ]
    };
    Range {
        contexts: span(&|o| o.context),
        concurrency: span(&|o| o.n),
    }
}

/// One left-out cell's scores: (metric, |error| / widen, extrapolated); a prefill cell's TTFT
/// as `prefill_ttft`.
fn scores(obs: &[Obs], i: usize, b: Params) -> Vec<(String, f64, bool)> {
    let others: Vec<Obs> = obs
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, o)| o.clone())
        .collect();
    if others.is_empty() {
        return Vec::new();
    }
    let o = &obs[i];
    let (p, designs) = fit_designed(&others, b);
    let w = widen(range_of(&others.iter().collect::<Vec<_>>()), o.context, o.n);
    known_residuals(&p, &designs, o)
        .into_iter()
        .map(|r| (metric_of(&r.metric, o), r.error_pct.abs() / w, w > 1.0))
        .collect()
}

/// The interval `metric` of `o` falls under: a prefill cell's TTFT apart.
pub fn metric_of(metric: &str, o: &Obs) -> String {
    if metric == "ttft_ms_p50" && o.phase == Phase::Prefill {
        "prefill_ttft".into()
    } else {
        metric.into()
    }
}

/// `o`'s residuals under `p`, of the metrics the fitted cells (`designs`) fix: what
/// `predict` would give a value for.
pub fn known_residuals(p: &Params, designs: &Designs, o: &Obs) -> Vec<Residual> {
    let running = p.running(o.n, o.context, o.output);
    let burst = p.burst_at(o.n, o.context, o.output, o.window_s);
    let lost = unknown(
        designs,
        (true, o.phase == Phase::Prefill),
        o.context,
        (running, o.output),
        burst,
    );
    residuals(p, o)
        .into_iter()
        .filter(|r| !lost.contains(&r.metric.as_str()))
        .collect()
}

/// Every fitted cell's scores: (metric, score, extrapolated, in sample). A metric of a cell
/// the others leave unknown is scored by the whole fit's own |error| (its held-out error is at
/// least that): left out, such cells once set the interval below the fit's own misses (a known
/// server's TTFT ±19.7% beside fitted cells missed by 41.5% and 25.1%).
fn all_scores(obs: &[Obs], b: Params) -> Vec<(String, f64, bool, bool)> {
    let (full, designs) = fit_designed(obs, b);
    let mut all = Vec::new();
    for (i, o) in obs.iter().enumerate() {
        let held = scores(obs, i, b);
        for r in known_residuals(&full, &designs, o) {
            let metric = metric_of(&r.metric, o);
            if !held.iter().any(|h| h.0 == metric) {
                all.push((metric, r.error_pct.abs(), false, true));
            }
        }
        all.extend(held.into_iter().map(|(m, s, x)| (m, s, x, false)));
    }
    all
}

/// The intervals of a twin fitted on `obs` (from `b`): none for a metric no cell could be
/// left out of.
pub fn leave_one_out(obs: &[Obs], b: Params) -> Intervals {
    let all = all_scores(obs, b);
    let basis = |metric: &str| {
        let mine: Vec<_> = all.iter().filter(|s| s.0 == metric).collect();
        // Without a left-out cell there is no interval (the fit's own residuals claim too
        // much).
        let held_out = mine.iter().any(|s| !s.3);
        let earned = conformal(mine.iter().map(|s| s.1).collect()).filter(|_| held_out);
        Basis {
            pct: earned.map(|(p, _)| (p.max(0.5) * 100.0).round() / 100.0),
            cells: if held_out { mine.len() } else { 0 },
            extrapolated: mine.iter().filter(|s| s.2).count(),
            level: earned.map_or(0.9, |(_, l)| l),
            in_sample: if held_out {
                mine.iter().filter(|s| s.3).count()
            } else {
                0
            },
        }
    };
    Intervals {
        method: "leave-one-out: each fitted cell predicted by the others; the conformal 90% quantile of |error| / widen (the ⌈(n + 1) · 0.9⌉-th smallest; the largest, at level n/(n + 1), below 9 cells)".into(),
        tok_s: basis("per_request_tok_s"),
        ttft: basis("ttft_ms_p50"),
        prefill_ttft: basis("prefill_ttft"),
        phases: phases(obs),
    }
}

/// The phases `obs` were measured in, sorted.
pub fn phases(obs: &[Obs]) -> Vec<String> {
    let mut v: Vec<String> = obs.iter().map(|o| o.source.as_str().to_string()).collect();
    v.sort();
    v.dedup();
    v
}

/// How much wider an interval is at (`context`, `n`) than inside `r`: once more per doubling
/// out (an assumption, not earned: left-out cells rarely lie outside the others' range; on a
/// server with a known timing model, ½ per doubling covered 2 of 4 extrapolated cells).
pub fn widen(r: Range, context: f64, n: f64) -> f64 {
    let out = |v: f64, [lo, hi]: [f64; 2]| {
        if v > hi && hi > 0.0 {
            (v / hi).log2()
        } else if v < lo && v > 0.0 {
            (lo / v).log2()
        } else {
            0.0
        }
    };
    1.0 + out(context, r.contexts) + out(n, r.concurrency)
}

/// Whether a held-out residual of `metric` at `o` lies inside `pct` widened for `r`.
pub fn covers(error_pct: f64, pct: f64, r: Range, o: &Obs) -> bool {
    error_pct.abs() <= pct * widen(r, o.context, o.n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conformal_quantile_and_the_level_it_earns() {
        let scores = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        // (n, the score taken, the level): ⌈(n + 1) · 0.9⌉-th smallest from 9 on.
        for (n, pct, level) in [
            (1usize, 1.0f64, 0.5f64),
            (4, 4.0, 0.8),
            (8, 8.0, 8.0 / 9.0),
            (9, 9.0, 0.9),
            (10, 10.0, 0.9),
            (19, 18.0, 0.9),
            (20, 19.0, 0.9),
            (100, 91.0, 0.9),
        ] {
            let (p, l) = conformal(scores(n)).unwrap_or_default();
            assert_eq!(
                (p, (l * 1e6).round()),
                (pct, (level * 1e6).round()),
                "n = {n}"
            );
        }
        assert_eq!(conformal(Vec::new()), None);
        // Order does not matter.
        assert_eq!(conformal(vec![3.0, 1.0, 2.0]), Some((3.0, 0.75)));
        let b = Basis {
            pct: Some(12.0),
            cells: 8,
            extrapolated: 1,
            level: 8.0 / 9.0,
            in_sample: 0,
        };
        assert_eq!(
            b.describe("tok/s"),
            "tok/s ±12.0% from 8 left-out cell(s) (1 extrapolated; the largest: a 89% interval, 9 cells earn 90%)"
        );
    }

    /// Cells the others leave a metric unknown for are scored by the whole fit's own error,
    /// so the interval is never narrower than a miss the fit itself makes (a known server's
    /// TTFT: ±19.7% from the cells that could be left out, fitted cells missed by 41.5%).
    #[test]
    fn cells_the_others_cannot_predict_are_scored_by_the_fits_own_error() {
        let mut obs = Vec::new();
        // Two contexts × two concurrencies: the first-token costs (1, C, C², …) are fixed by
        // none of the 3-cell subsets, so no decode TTFT can be left out... and some noise.
        for (i, (c, n)) in [
            (256.0, 2.0),
            (256.0, 4.0),
            (1024.0, 2.0),
            (1024.0, 4.0),
            (2048.0, 3.0),
        ]
        .into_iter()
        .enumerate()
        {
            let step = 0.01 + 0.002 * n;
            let ttft = (0.02 + 1e-5 * c) * [1.0, 1.4, 0.8, 1.1, 1.0][i];
            obs.push(Obs {
                cell: format!("decode/{c}/c{n}"),
                phase: Phase::Decode,
                source: Phase::Decode,
                context: c,
                n,
                output: 64.0,
                ttft_s: Some(ttft),
                tbt_s: Some(step),
                per_request_tok_s: Some(1.0 / step),
                total_tok_s: Some(n / step),
                window_s: Some(10.0),
                finished: n,
            });
        }
        let base: Params = toml::from_str(
            "step_s = 0.0\nper_seq_s = 0.0\nper_kv_token_s = 0.0\nprefill_token_s = 0.0\n\
             prefill_quadratic_s = 0.0\napi_s = 0.0\napi_stream_s = 0.0\ncached_request_s = 0.0\n\
             cached_token_s = 0.0\nmax_batched_tokens = 8192\nmax_num_seqs = 256\n\
             kv_tokens = 1073741824\nmax_model_len = 131072\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let all = all_scores(&obs, base);
        let own: Vec<f64> = all
            .iter()
            .filter(|s| s.0 == "ttft_ms_p50" && s.3)
            .map(|s| s.1)
            .collect();
        let b = leave_one_out(&obs, base).ttft;
        assert!(!own.is_empty(), "{all:?}");
        assert_eq!(b.in_sample, own.len(), "{b:?}");
        let widest = own.iter().copied().fold(0.0, f64::max);
        assert!(b.pct.is_some_and(|p| p + 0.01 >= widest), "{b:?} {own:?}");
    }
}
