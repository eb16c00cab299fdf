//! The capacity search (docs/results.md): bisection over measured probes for the highest
//! concurrency or rate that meets the SLO. The lower bound is probed first (if it fails,
//! there is no capacity), then the upper (if it passes, the capacity is at least that), then
//! the middle of the bracket until it is `precision` wide. Each probe is a cell of its own,
//! recorded as it ends (a resumed run reuses the probes already on disk); the search ends
//! with one summary record of phase `capacity`.

use super::cells::Cells;
use super::engine::EngineSide;
use super::error::RunError;
use super::event::Event;
use super::options::RunSummary;
use crate::plan::vocab::SearchAxis;
use crate::plan::{Cell, Search};
use crate::results::{CapacityBound, Record, Status, record::utc_now};
use std::collections::HashMap;

/// Where a bisection stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bisect {
    search: Search,
    /// The highest value that passed.
    pub lo: Option<f64>,
    /// The lowest value that failed.
    pub hi: Option<f64>,
}

impl Bisect {
    /// A search not yet started.
    pub fn new(search: Search) -> Bisect {
        Bisect {
            search,
            lo: None,
            hi: None,
        }
    }

    /// The next value to probe; `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        let s = &self.search;
        match (self.lo, self.hi) {
            (None, None) => Some(s.min),
            (None, Some(_)) => None,
            (Some(lo), None) if lo >= s.max => None,
            (Some(_), None) => Some(s.max),
            (Some(lo), Some(hi)) if hi - lo <= s.precision => None,
            (Some(lo), Some(hi)) => {
                let mid = match s.axis {
                    SearchAxis::Concurrency => ((lo + hi) / 2.0).floor(),
                    SearchAxis::Rate => ((lo + hi) / 2.0 * 1000.0).round() / 1000.0,
                };
                (mid > lo && mid < hi).then_some(mid)
            }
        }
    }

    /// Record the verdict of the probe at `value`.
    pub fn saw(&mut self, value: f64, passed: bool) {
        if passed {
            self.lo = Some(self.lo.map_or(value, |l| l.max(value)));
        } else {
            self.hi = Some(self.hi.map_or(value, |h| h.min(value)));
        }
    }

    /// The capacity found: the highest value that passed.
    pub fn capacity(&self) -> Option<f64> {
        self.lo
    }

    /// How [`Bisect::capacity`] bounds the truth: below `min` when nothing passed, at least
    /// `max` when `max` passed, else exact (to `precision`).
    pub fn bound(&self) -> CapacityBound {
        match self.lo {
            None => CapacityBound::BelowMin,
            Some(lo) if lo >= self.search.max && self.hi.is_none() => CapacityBound::AtLeast,
            Some(_) => CapacityBound::Exact,
        }
    }
}

/// Whether a probe's record counts as meeting the SLO: measured validly, every objective
/// held, and (a probe by rate) the server not saturated.
pub fn passed(rec: &Record) -> bool {
    rec.status == Status::Valid && rec.open.slo_met == Some(true) && rec.open.saturated.is_none()
}

impl Cells<'_> {
    /// Search the capacity of cell `c`, recording every probe and then the summary.
    pub(super) async fn search(
        &self,
        c: &Cell,
        search: Search,
        engine: &mut EngineSide,
        summary: &mut RunSummary,
        at: (usize, usize),
    ) -> Result<(), RunError> {
        let mut earlier: HashMap<String, Record> = self
            .dir
            .records()
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.cell.clone(), r))
            .collect();
        let mut b = Bisect::new(search);
        let mut measured = 0.0;
        while let Some(v) = b.next() {
            let probe = search.probe(c, v);
            let rec = match earlier.remove(&probe.id) {
                Some(rec) => rec,
                None => {
                    (self.on)(Event::Cell {
                        index: at.0,
                        total: at.1,
                        id: probe.id.clone(),
                    });
                    let rec = Record::new(&probe, utc_now(), &self.cx.workload.labels);
                    let rec = self.measure_or_stop(&probe, rec, summary).await?;
                    self.after(&probe, rec, engine, summary, at).await?
                }
            };
            measured += rec.measured_s.unwrap_or(0.0);
            b.saw(v, passed(&rec));
        }
        let mut rec = Record::new(c, utc_now(), &self.cx.workload.labels);
        rec.status = Status::Valid;
        rec.measured_s = Some(measured);
        rec.open.search = Some(search.axis.as_str().to_string());
        rec.open.capacity = b.capacity();
        rec.open.capacity_bound = Some(b.bound());
        if b.capacity().is_none() {
            rec.reasons.push(format!(
                "no probe met the SLO, not even {} {}",
                search.axis.as_str(),
                search.min
            ));
        }
        self.after(c, rec, engine, summary, at).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::vocab::Arrivals;
    use std::time::Duration;

    fn search(axis: SearchAxis, min: f64, max: f64, precision: f64) -> Search {
        Search {
            axis,
            min,
            max,
            precision,
            window: Duration::from_secs(1),
            arrivals: Arrivals::Poisson,
            burstiness: 1.0,
        }
    }

    /// Run the bisection against a server whose true capacity is `truth`.
    fn run(s: Search, truth: f64) -> (Option<f64>, Vec<f64>) {
        let (b, probes) = bisect(s, truth);
        (b.capacity(), probes)
    }

    fn bisect(s: Search, truth: f64) -> (Bisect, Vec<f64>) {
        let mut b = Bisect::new(s);
        let mut probes = Vec::new();
        while let Some(v) = b.next() {
            assert!(probes.len() < 64, "the search does not end: {probes:?}");
            probes.push(v);
            b.saw(v, v <= truth);
        }
        (b, probes)
    }

    #[test]
    fn the_bound_says_whether_max_or_min_cut_the_search_short() {
        // (min, max, truth, capacity, bound): max 4 passing says "at least 4"; min 1 failing
        // "below 1"; a failure above the capacity makes it exact.
        let cases = [
            (1.0, 4.0, 100.0, Some(4.0), CapacityBound::AtLeast),
            (1.0, 4.0, 0.5, None, CapacityBound::BelowMin),
            (1.0, 4.0, 3.0, Some(3.0), CapacityBound::Exact),
            (1.0, 4.0, 4.0, Some(4.0), CapacityBound::AtLeast),
        ];
        for (min, max, truth, want, bound) in cases {
            let (b, probes) = bisect(search(SearchAxis::Concurrency, min, max, 1.0), truth);
            assert_eq!((b.capacity(), b.bound()), (want, bound), "{probes:?}");
        }
    }

    #[test]
    fn bisection_lands_within_one_precision_step() {
        // (axis, min, max, precision, truth, expected capacity)
        let cases = [
            (SearchAxis::Concurrency, 1.0, 256.0, 1.0, 24.0, Some(24.0)),
            (
                SearchAxis::Concurrency,
                1.0,
                256.0,
                1.0,
                1000.0,
                Some(256.0),
            ),
            (SearchAxis::Concurrency, 4.0, 256.0, 1.0, 2.0, None),
            (SearchAxis::Concurrency, 1.0, 64.0, 4.0, 37.0, None),
            (SearchAxis::Rate, 0.5, 16.0, 0.25, 5.3, None),
        ];
        for (axis, min, max, precision, truth, want) in cases {
            let s = search(axis, min, max, precision);
            let (got, probes) = run(s, truth);
            assert!(probes.len() as u32 <= s.max_probes(), "{probes:?}");
            match want {
                Some(w) => assert_eq!(got, Some(w), "{axis:?} truth {truth}: {probes:?}"),
                None if truth < min => assert_eq!(got, None),
                None => {
                    let got = got.unwrap_or(f64::NAN);
                    assert!(
                        got <= truth && truth - got <= precision,
                        "{got} vs {truth}: {probes:?}"
                    );
                }
            }
        }
    }
}
