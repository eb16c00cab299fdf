//! Open-loop cells of the plan (docs/spec.md): a load cell's arrival process and bound, the
//! capacity search's bracket, and their ids (`load/8K/r4`, `capacity/16K`, and the probes
//! `capacity/16K/c24` or `capacity/16K/r2.5` the search records as it goes).

use super::{Cell, Decode, Measure};
use crate::spec::{Arrivals, DEFAULT_LOAD_DURATION, Rate, SearchAxis, Spec, Spread, Tokens};
use std::time::Duration;

/// How long an open-loop cell keeps requests arriving.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Arrivals are drawn until this much time has passed.
    Duration(Duration),
    /// This many requests arrive.
    Requests(u32),
}

/// The load of an open-loop cell: requests arriving at a rate, at most a cap in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoad {
    /// Requests per second offered.
    pub rate: Rate,
    /// How arrival gaps are drawn.
    pub arrivals: Arrivals,
    /// Gamma shape (gamma arrivals only).
    pub burstiness: f64,
    /// Client-side cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// How long arrivals go on.
    pub bound: Bound,
    /// How prompt lengths vary around the context.
    pub input: Option<Spread>,
    /// How output lengths vary around `max_output_tokens`.
    pub output: Option<Spread>,
}

impl OpenLoad {
    /// The number of requests the bound gives at the rate (an estimate for a duration).
    pub fn expected_requests(&self) -> f64 {
        match self.bound {
            Bound::Requests(n) => f64::from(n),
            Bound::Duration(_) if self.rate.is_inf() => 0.0,
            Bound::Duration(d) => self.rate.0 * d.as_secs_f64(),
        }
    }
}

/// A capacity search: bisection between `min` and `max` until the bracket is `precision`
/// wide, each probe measured for `window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// Concurrency or rate.
    pub axis: SearchAxis,
    /// The lowest value tried.
    pub min: f64,
    /// The highest value tried.
    pub max: f64,
    /// The bracket width that ends the search.
    pub precision: f64,
    /// Each probe's window.
    pub window: Duration,
    /// Rate probes' arrivals (from `phases.load`, else Poisson).
    pub arrivals: Arrivals,
    /// Rate probes' gamma shape.
    pub burstiness: f64,
}

impl Search {
    /// Probes the bisection takes at most: both bounds, then one per halving.
    pub fn max_probes(&self) -> u32 {
        let span = (self.max - self.min).max(0.0) / self.precision.max(f64::MIN_POSITIVE);
        2 + span.log2().ceil().max(0.0) as u32
    }

    /// The cell measuring one probe at `value` of the axis, for the search cell `of`.
    pub fn probe(&self, of: &Cell, value: f64) -> Cell {
        let (id, concurrency, measure) = match self.axis {
            SearchAxis::Concurrency => {
                let c = value.round().max(1.0) as u32;
                let id = format!("capacity/{}/c{c}", Tokens(of.context));
                (id, c, Measure::Decode(Decode::FixedDuration(self.window)))
            }
            SearchAxis::Rate => {
                let rate = Rate(value);
                let id = format!("capacity/{}/r{rate}", Tokens(of.context));
                let load = OpenLoad {
                    rate,
                    arrivals: self.arrivals,
                    burstiness: self.burstiness,
                    max_concurrency: None,
                    bound: Bound::Duration(self.window),
                    input: None,
                    output: None,
                };
                (id, 0, Measure::Load(load))
            }
        };
        let id = match &of.variant {
            Some(v) => format!("{v}/{id}"),
            None => id,
        };
        Cell {
            id,
            concurrency,
            measure,
            skip: None,
            estimate_s: 0.0,
            ..of.clone()
        }
    }
}

/// The id of a load cell.
pub fn load_id(context: u64, rate: Rate) -> String {
    format!("load/{}/r{rate}", Tokens(context))
}

/// The id of a capacity search cell.
pub fn capacity_id(context: u64) -> String {
    format!("capacity/{}", Tokens(context))
}

/// The load cells of `ctx`, one per rate of `phases.load`.
pub(super) fn load_cells(spec: &Spec, ctx: u64, too_long: Option<String>) -> Vec<Cell> {
    let Some(l) = &spec.phases.load else {
        return Vec::new();
    };
    if !l.contexts.as_ref().is_none_or(|c| c.contains(&Tokens(ctx))) {
        return Vec::new();
    }
    l.rates
        .iter()
        .map(|&rate| {
            let bound = match (l.requests, l.duration) {
                (Some(n), _) => Bound::Requests(n),
                (None, d) => Bound::Duration(d.map_or(DEFAULT_LOAD_DURATION, |d| d.0)),
            };
            let skip = if !l.enabled {
                Some("`phases.load.enabled` is false".to_string())
            } else if rate.is_inf() && matches!(bound, Bound::Duration(_)) {
                Some("rate `inf` needs `phases.load.requests`".to_string())
            } else {
                too_long.clone()
            };
            Cell {
                id: load_id(ctx, rate),
                variant: None,
                context: ctx,
                concurrency: l.max_concurrency.unwrap_or(0),
                prompt_tokens: ctx,
                clamped: false,
                measure: Measure::Load(OpenLoad {
                    rate,
                    arrivals: l.arrivals,
                    burstiness: l.burstiness,
                    max_concurrency: l.max_concurrency,
                    bound,
                    input: l.input,
                    output: l.output,
                }),
                skip,
                estimate_s: 0.0,
                repeats: l.repeats.unwrap_or(spec.repeats).max(1),
            }
        })
        .collect()
}

/// The capacity search cell of `ctx`, when `phases.capacity` names it.
pub(super) fn capacity_cell(spec: &Spec, ctx: u64, too_long: Option<String>) -> Option<Cell> {
    let c = spec.phases.capacity.as_ref()?;
    if !c.contexts.as_ref().is_none_or(|l| l.contains(&Tokens(ctx))) {
        return None;
    }
    let load = spec.phases.load.as_ref();
    let search = Search {
        axis: c.search,
        min: c.min,
        max: c.max,
        precision: c.precision,
        window: c.duration.0,
        arrivals: load.map_or(Arrivals::Poisson, |l| l.arrivals),
        burstiness: load.map_or(1.0, |l| l.burstiness),
    };
    let skip = if !c.enabled {
        Some("`phases.capacity.enabled` is false".to_string())
    } else if spec.slo.is_empty() {
        Some("a capacity search needs an `slo`".to_string())
    } else {
        too_long
    };
    Some(Cell {
        id: capacity_id(ctx),
        variant: None,
        context: ctx,
        concurrency: 0,
        prompt_tokens: ctx,
        clamped: false,
        measure: Measure::Capacity(search),
        skip,
        estimate_s: 0.0,
        repeats: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_documented() {
        assert_eq!(load_id(8192, Rate(4.0)), "load/8K/r4");
        assert_eq!(load_id(8192, Rate(0.5)), "load/8K/r0.5");
        assert_eq!(load_id(16384, Rate::INF), "load/16K/rinf");
        assert_eq!(capacity_id(16384), "capacity/16K");
    }

    #[test]
    fn probes_are_bounded_by_the_bisection() {
        let s = Search {
            axis: SearchAxis::Concurrency,
            min: 1.0,
            max: 256.0,
            precision: 1.0,
            window: Duration::from_secs(1),
            arrivals: Arrivals::Poisson,
            burstiness: 1.0,
        };
        // 255 wide, halved to 1: 8 halvings after both bounds.
        assert_eq!(s.max_probes(), 10);
        let rate = Search {
            axis: SearchAxis::Rate,
            min: 0.5,
            max: 8.0,
            precision: 0.25,
            ..s
        };
        assert_eq!(rate.max_probes(), 2 + 5);
    }
}
