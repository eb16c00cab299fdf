//! How `run` prints a capacity search: each probe numbered within its search (`[probe  3]`)
//! with whether it met the SLO (`meets SLO`, `misses: TTFT p90 307 ms > 40 ms`), the search's
//! end as the capacity found, and those findings again as the run's last lines.

use crate::plan::Phase;
use crate::results::{Record, Status};
use crate::run::Event;
use crate::spec::Slo;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The probe lines of a run's capacity searches, and the findings to close the run with.
pub struct Probes {
    slo: Slo,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The search the last probe belonged to, and how many probes it has had.
    search: Option<(String, usize)>,
    /// `capacity at 1K: 34 concurrent (SLO: …)`, one per finished search.
    found: Vec<String>,
}

/// The search a probe id belongs to (`capacity/1K/c24` → `capacity/1K`); `None` for other
/// cells.
fn search_of(id: &str) -> Option<&str> {
    let (search, value) = id.rsplit_once('/')?;
    let is_probe = search.split('/').any(|s| s == "capacity")
        && value.len() > 1
        && (value.starts_with('c') || value.starts_with('r'));
    is_probe.then_some(search)
}

impl Probes {
    /// Probe lines judged against `slo`.
    pub fn new(slo: &Slo) -> Probes {
        Probes {
            slo: slo.clone(),
            state: Mutex::new(State::default()),
        }
    }

    /// The line for `ev` when it is about a capacity search; `None` for other events.
    pub fn line(&self, ev: &Event) -> Option<String> {
        match ev {
            Event::Cell { id, .. } => {
                let n = self.count(search_of(id)?, true);
                Some(format!("[probe {n:>2}] {id} ..."))
            }
            Event::Done {
                index,
                total,
                record,
            } if record.phase == Phase::Capacity => {
                let line = crate::report::capacity_summary(record, &self.slo);
                let mut state = self.state();
                let probes = state
                    .search
                    .as_ref()
                    .filter(|(s, _)| *s == record.cell)
                    .map_or(0, |(_, n)| *n);
                state.found.push(line.clone());
                let plural = if probes == 1 { "" } else { "s" };
                Some(format!(
                    "[{index:>3}/{total}] {line}, after {probes} probe{plural}"
                ))
            }
            Event::Done { record, .. } => {
                let n = self.count(search_of(&record.cell)?, false);
                Some(format!("[probe {n:>2}] {}", self.probe(record)))
            }
            _ => None,
        }
    }

    /// The probe number in `search`, counting one more when a probe `begins`.
    fn count(&self, search: &str, begins: bool) -> usize {
        let mut state = self.state();
        match &mut state.search {
            Some((s, n)) if s == search => {
                *n += usize::from(begins);
                *n
            }
            _ => {
                state.search = Some((search.to_string(), 1));
                1
            }
        }
    }

    /// `capacity/1K/c48 misses: TTFT p90 88.7 ms > 40 ms  22594.3 tok/s  TTFT p50 26 ms`.
    fn probe(&self, r: &Record) -> String {
        let verdict = match r.status {
            Status::Failed => format!("FAILED ({})", r.reasons.join("; ")),
            _ => crate::report::slo_verdict(r, &self.slo),
        };
        let mut s = format!("{} {verdict}", r.cell);
        if let Some(t) = r.total_tok_s {
            s.push_str(&format!("  {t:.1} tok/s"));
        }
        if let Some(t) = r.ttft_ms {
            s.push_str(&format!("  TTFT p50 {:.0} ms", t.p50));
        }
        if r.status == Status::Invalid {
            s.push_str(&format!("  (invalid: {})", r.reasons.join("; ")));
        }
        s
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the run's capacity searches found, in the order they ended.
    pub fn found(&self) -> Vec<String> {
        self.state().found.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::search_of;

    #[test]
    fn probes_are_told_from_other_cells() {
        assert_eq!(search_of("capacity/1K/c24"), Some("capacity/1K"));
        assert_eq!(search_of("fast/capacity/8K/r2.5"), Some("fast/capacity/8K"));
        assert_eq!(search_of("capacity/1K"), None);
        assert_eq!(search_of("decode/1K/c4"), None);
        assert_eq!(search_of("load/8K/r2"), None);
    }
}
