//! The search: measure the first picks, then, round by round, fit each family's twin on what
//! was measured, predict the rest, and measure the most promising and the most uncertain of
//! the configurations whose optimistic end beats the best measured one — until none does, or
//! the budget is spent. Measuring is `run`'s (the caller's [`MeasureFn`]: `run::run`, or
//! `run::run_in_process` on a paused clock), into one run directory, resumed cell by cell.

use super::objective::{Estimate, TuneObjective};
use super::space::{Config, families, first_picks, space};
pub use super::state::{Ask, Budget};
use super::state::{Measured, State};
use super::{TUNE_FILE, TuneError, TuneFile};
use crate::plan::RunConfig;
use crate::run::{RunError, RunOptions};
use std::path::{Path, PathBuf};

/// Measure the cells `RunOptions::only` picks of the run, into `RunOptions::out`: the engine
/// seconds it took.
pub type MeasureFn<'a> = &'a dyn Fn(&RunConfig, &RunOptions) -> Result<f64, RunError>;

/// Run the search; `on` hears each step. The state it ended in (also in `tune.json`).
pub fn tune(ask: &Ask, measure: MeasureFn, on: &dyn Fn(&str)) -> Result<State, TuneError> {
    let configs = space(&ask.loaded.spec)?;
    let n = configs.len();
    let mut st = State {
        measured: earlier(ask.out, &configs)?,
        configs,
        values: vec![None; n],
        predicted: vec![None; n],
        stopped: String::new(),
        frontier: Vec::new(),
    };
    let mut queue: Vec<(usize, &str)> = first_picks(&st.configs)
        .into_iter()
        .map(|i| (i, "extreme"))
        .collect();
    // Measured since the last refresh: its value and the frontier are not in the state yet.
    let mut stale = false;
    loop {
        for (i, why) in std::mem::take(&mut queue) {
            if st.measured[i].is_some() {
                continue;
            }
            if let Some(why_not) = spent(&st, ask.budget) {
                st.stopped = why_not;
                return finish(ask, st, stale);
            }
            on(&format!("measuring {} ({why})", st.configs[i].name));
            let seconds = measure_one(ask, &st.configs[i], measure)?;
            st.measured[i] = Some(Measured {
                why: why.into(),
                seconds,
            });
            stale = true;
            // Written at once: a search stopped here resumes without measuring it again.
            write(ask, &st)?;
        }
        refresh(ask, &mut st, on)?;
        stale = false;
        write(ask, &st)?;
        queue = next(ask.objective, &st);
        if queue.is_empty() {
            st.stopped = if st.measured.iter().all(Option::is_some) {
                "every configuration was measured".into()
            } else {
                "no unmeasured configuration's optimistic end beats the best measured one".into()
            };
            return finish(ask, st, false);
        }
    }
}

/// The state written, then returned; refreshed first when a configuration was measured since
/// the last refresh (a budget spent mid-round), so that its value counts for the winner, or
/// when nothing was refreshed yet (a resumed search whose budget was already spent).
fn finish(ask: &Ask, mut st: State, stale: bool) -> Result<State, TuneError> {
    let never = st.values.iter().all(Option::is_none) && st.measured.iter().any(Option::is_some);
    if stale || never {
        refresh(ask, &mut st, &|_| {})?;
    }
    write(ask, &st)?;
    Ok(st)
}

/// Why no more may be measured, if so.
fn spent(st: &State, b: Budget) -> Option<String> {
    let count = st.measured.iter().flatten().count();
    let secs: f64 = st.measured.iter().flatten().map(|m| m.seconds).sum();
    if b.configs.is_some_and(|c| count >= c) {
        return Some(format!("the budget of {count} configuration(s) is spent"));
    }
    b.engine_s
        .filter(|s| secs >= *s)
        .map(|s| format!("the budget of {s:.0} engine seconds is spent ({secs:.0} s)"))
}

/// The configurations a resumed `tune.json` says were measured.
fn earlier(out: &Path, configs: &[Config]) -> Result<Vec<Option<Measured>>, TuneError> {
    let path = out.join(TUNE_FILE);
    let mut got = vec![None; configs.len()];
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(got);
    };
    let file: TuneFile = serde_json::from_str(&text).map_err(|e| TuneError::File {
        path: path.clone(),
        message: format!("cannot be read ({e}): remove it, or tune into another --out"),
    })?;
    for c in file.configs.iter().filter(|c| c.measured) {
        if let Some(i) = configs.iter().position(|x| x.name == c.name) {
            got[i] = Some(Measured {
                why: "earlier".into(),
                seconds: c.engine_seconds.unwrap_or(0.0),
            });
        }
    }
    Ok(got)
}

/// Measure one configuration's cells into the run directory (resumed once it exists).
fn measure_one(ask: &Ask, c: &Config, measure: MeasureFn) -> Result<f64, TuneError> {
    let opts = RunOptions {
        out: Some(ask.out.to_path_buf()),
        only: Some(format!("{}/*", c.name)),
        resume: ask.out.join(crate::rundir::MANIFEST).is_file(),
        ..RunOptions::default()
    };
    measure(&RunConfig::new(ask.loaded), &opts).map_err(|source| TuneError::Run {
        config: c.name.clone(),
        source: Box::new(source),
    })
}

/// The measured values from the run directory, and every unmeasured configuration of a
/// family with a measured one predicted by the family's twin.
fn refresh(ask: &Ask, st: &mut State, on: &dyn Fn(&str)) -> Result<(), TuneError> {
    let run = crate::rundir::RunDir::open(ask.out)?.load()?;
    st.frontier = super::summary::frontier(&run);
    let gpus = f64::from(ask.loaded.spec.hardware.gpu_count.unwrap_or(1).max(1));
    for (i, c) in st.configs.iter().enumerate() {
        st.values[i] = st.measured[i].as_ref().and_then(|_| {
            ask.objective.measured(
                run.records
                    .iter()
                    .filter(|r| r.variant.as_deref() == Some(&c.name)),
                gpus,
            )
        });
        st.predicted[i] = None;
    }
    for (k, fam) in families(&st.configs).into_iter().enumerate() {
        let (done, todo): (Vec<usize>, Vec<usize>) =
            fam.into_iter().partition(|i| st.measured[*i].is_some());
        if done.is_empty() || todo.is_empty() {
            continue;
        }
        let members: Vec<&Config> = done.iter().map(|i| &st.configs[*i]).collect();
        let path = twin_path(ask.out, k)?;
        let twin = match super::family::fit(&run, &members, &path) {
            Ok(t) => t,
            Err(e) => {
                on(&format!(
                    "family {}: no twin ({e}); its configurations stay unpredicted",
                    k + 1
                ));
                continue;
            }
        };
        // The measured configurations too: how far the twin misses them bounds its intervals.
        let names: Vec<&str> = todo
            .iter()
            .chain(&done)
            .map(|i| st.configs[*i].name.as_str())
            .collect();
        let (records, cells) =
            super::family::predict_configs(ask.loaded, (&path, &twin), &names, &scratch())?;
        let rules = super::family::rules(ask, gpus, (&run, &records), &members);
        on(&format!(
            "family {}: {}",
            k + 1,
            rules.missed.said(done.len())
        ));
        for i in todo {
            let name = &st.configs[i].name;
            let e = ask.objective.predicted(
                records
                    .iter()
                    .filter(|r| r.variant.as_deref() == Some(name)),
                &cells,
                &rules,
            );
            on(&format!("predicted {name}: {}", e.describe()));
            st.predicted[i] = Some(e);
        }
    }
    Ok(())
}

/// `DIR/twins/family-K.toml` (K from 1), its directory made.
fn twin_path(out: &Path, k: usize) -> Result<PathBuf, TuneError> {
    let dir = out.join("twins");
    std::fs::create_dir_all(&dir).map_err(|e| TuneError::File {
        path: dir.clone(),
        message: e.to_string(),
    })?;
    Ok(dir.join(format!("family-{}.toml", k + 1)))
}

/// The configurations to measure next: the most promising and the most uncertain of those
/// whose optimistic end beats the best measured value (an unpredicted one, or one without an
/// interval, always could).
pub fn next(obj: TuneObjective, st: &State) -> Vec<(usize, &'static str)> {
    let best = st.values.iter().fold(None, |a, v| obj.best(a, *v));
    let open: Vec<(usize, Option<Estimate>)> = st
        .predicted
        .iter()
        .enumerate()
        .filter(|(i, _)| st.measured[*i].is_none())
        .map(|(i, e)| (i, *e))
        .filter(|(_, e)| match e {
            None => true,
            Some(e) if !e.possible => false,
            Some(e) => match (e.high, best) {
                (None, _) | (_, None) => true,
                (Some(h), Some(b)) => obj.beats(h, b),
            },
        })
        .collect();
    let score = |e: &Option<Estimate>| e.and_then(|e| e.value);
    let promising = open
        .iter()
        .filter(|(_, e)| score(e).is_some())
        .fold(None::<(usize, f64)>, |acc, (i, e)| {
            let v = score(e).unwrap_or_default();
            match acc {
                Some((_, b)) if !obj.beats(v, b) => acc,
                _ => Some((*i, v)),
            }
        })
        .map(|(i, _)| i);
    let width = |e: &Option<Estimate>| match e {
        Some(Estimate {
            value: Some(v),
            low: Some(l),
            high: Some(h),
            ..
        }) if *v != 0.0 => (h - l).abs() / v.abs(),
        _ => f64::INFINITY,
    };
    let uncertain = open
        .iter()
        .filter(|(i, _)| Some(*i) != promising)
        .max_by(|a, b| width(&a.1).total_cmp(&width(&b.1)))
        .map(|(i, _)| *i);
    [(promising, "promising"), (uncertain, "uncertain")]
        .into_iter()
        .filter_map(|(i, why)| Some((i?, why)))
        .collect()
}

/// `tune.json` written from the state.
fn write(ask: &Ask, st: &State) -> Result<(), TuneError> {
    let file = super::summary::file(ask.objective, st);
    let path = ask.out.join(TUNE_FILE);
    let text = serde_json::to_string_pretty(&file).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|e| TuneError::File {
        path,
        message: e.to_string(),
    })
}

/// A directory of its own under the system's temporary directory, for a predicted run.
fn scratch() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("benchspec-tune-{}-{nanos}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(measured: &[Option<f64>]) -> State {
        State {
            configs: Vec::new(),
            measured: measured
                .iter()
                .map(|s| {
                    s.map(|seconds| Measured {
                        why: "extreme".into(),
                        seconds,
                    })
                })
                .collect(),
            values: vec![None; measured.len()],
            predicted: vec![None; measured.len()],
            stopped: String::new(),
            frontier: Vec::new(),
        }
    }

    #[test]
    fn the_budget_stops_at_its_count_or_its_engine_seconds() {
        let st = state(&[Some(40.0), None, Some(30.0)]);
        let b = |configs, engine_s| Budget { configs, engine_s };
        // Two measured, 70 s spent (40 + 30, worked by hand).
        assert_eq!(spent(&st, b(None, None)), None);
        assert_eq!(spent(&st, b(Some(3), Some(71.0))), None);
        let count = spent(&st, b(Some(2), None)).unwrap_or_default();
        assert!(count.contains("2 configuration"), "{count}");
        let secs = spent(&st, b(None, Some(70.0))).unwrap_or_default();
        assert!(secs.contains("70 engine seconds"), "{secs}");
    }

    #[test]
    fn next_measures_only_what_could_beat_the_best_measured() {
        let est = |value, low, high| Estimate {
            value: Some(value),
            low: Some(low),
            high: Some(high),
            possible: true,
        };
        let mut st = state(&[Some(1.0), None, None, None, None]);
        st.values[0] = Some(100.0);
        st.predicted[1] = Some(est(95.0, 90.0, 99.0)); // cannot beat 100
        st.predicted[2] = Some(est(98.0, 90.0, 106.0)); // could, widest
        st.predicted[3] = Some(est(103.0, 101.0, 105.0)); // most promising
        st.predicted[4] = Some(Estimate::default()); // no cell can meet the SLO
        assert_eq!(
            next(TuneObjective::TokSPerGpu, &st),
            [(3, "promising"), (2, "uncertain")]
        );
        st.predicted[2] = Some(est(98.0, 90.0, 100.0));
        st.predicted[3] = Some(est(99.0, 95.0, 100.0));
        assert!(next(TuneObjective::TokSPerGpu, &st).is_empty());
    }

    #[test]
    fn a_resumed_search_does_not_measure_again_what_tune_json_lists_as_measured() {
        let text = "version: 1\nname: s\nengine:\n  kind: sim\n  variants:\n    - {name: a, sim: {max_num_seqs: 2}}\n    - {name: b, sim: {max_num_seqs: 8}}\nmodel: {served_name: m}\nmatrix: {contexts: [1K], concurrency: [1]}\n";
        let spec = crate::spec::parse("s.yaml", text, crate::spec::Stage::Validate, &|_| None)
            .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()))
            .spec;
        let configs = space(&spec).unwrap();
        let path = scratch();
        std::fs::create_dir_all(&path).unwrap();
        let dir = path.as_path();
        assert_eq!(earlier(dir, &configs).unwrap(), [None, None]);
        let entry = |name: &str, measured: bool| {
            serde_json::json!({"name": name, "args": [], "family": "", "measured": measured,
                "objective": null, "interval": null, "why": null,
                "engine_seconds": if measured { Some(12.5) } else { None }})
        };
        let file = serde_json::json!({"version": 1, "objective": "tok-s-per-gpu",
            "configs": [entry("a", false), entry("b", true), entry("gone", true)],
            "winner": null, "engine_seconds": 12.5, "grid_engine_seconds": 25.0, "stopped": ""});
        std::fs::write(dir.join(TUNE_FILE), file.to_string()).unwrap();
        let got = earlier(dir, &configs).unwrap();
        let b = Measured {
            why: "earlier".into(),
            seconds: 12.5,
        };
        assert_eq!(got, [None, Some(b)]);
        std::fs::write(dir.join(TUNE_FILE), "{").unwrap();
        assert!(matches!(
            earlier(dir, &configs),
            Err(TuneError::File { .. })
        ));
        let _ = std::fs::remove_dir_all(&path);
    }
}
