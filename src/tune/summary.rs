//! `tune`'s answer: `tune.json` from the search's state — every configuration ranked,
//! measured or predicted, the winner, the engine seconds spent and what the full grid would
//! have cost — and the same for people: a ranking table and the winner's launch command.

use super::objective::TuneObjective;
use super::state::State;
use super::{ConfigResult, Interval, TUNE_VERSION, TuneFile, TuneFrontier, Winner};

/// `tune.json` of `st`: configurations best first (those without a value last, in the
/// spec's order).
pub fn file(obj: TuneObjective, st: &State) -> TuneFile {
    let mut configs: Vec<ConfigResult> = st
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let m = st.measured[i].as_ref();
            let p = st.predicted[i].filter(|_| m.is_none());
            ConfigResult {
                name: c.name.clone(),
                args: c.changes.clone(),
                family: c.family.clone(),
                measured: m.is_some(),
                objective: if m.is_some() {
                    st.values[i]
                } else {
                    p.and_then(|e| e.value)
                },
                interval: p.map(|e| Interval {
                    low: e.low,
                    high: e.high,
                }),
                why: m.map(|m| m.why.clone()),
                engine_seconds: m.map(|m| m.seconds),
            }
        })
        .collect();
    rank(obj, &mut configs);
    let winner = configs
        .iter()
        .find(|c| c.measured && c.objective.is_some())
        .and_then(|w| {
            let c = st.configs.iter().find(|c| c.name == w.name)?;
            Some(Winner {
                name: w.name.clone(),
                objective: w.objective?,
                launch: c.launch(),
            })
        });
    let secs: Vec<f64> = st.measured.iter().flatten().map(|m| m.seconds).collect();
    let spent: f64 = secs.iter().sum();
    let mean = if secs.is_empty() {
        0.0
    } else {
        spent / secs.len() as f64
    };
    TuneFile {
        version: TUNE_VERSION,
        objective: obj.as_str().into(),
        configs,
        winner,
        engine_seconds: round(spent),
        grid_engine_seconds: round(mean * st.configs.len() as f64),
        stopped: st.stopped.clone(),
        frontier: st.frontier.clone(),
    }
}

/// An objective's value for people: dollars to the cent (four decimals below 10¢), else
/// one decimal.
fn show(objective: &str, x: f64) -> String {
    if objective == TuneObjective::UsdPerMtok.as_str() {
        crate::report::format::usd(x)
    } else {
        format!("{x:.1}")
    }
}

/// `configs` best first by `obj` (those without a value last, in their order).
fn rank(obj: TuneObjective, configs: &mut [ConfigResult]) {
    configs.sort_by(|a, b| match (a.objective, b.objective) {
        (Some(x), Some(y)) if obj.beats(x, y) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) if obj.beats(y, x) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
}

/// The frontiers of the measured cells of `run` (the tune directory), as the report computes
/// them ([`crate::report::frontier::of_run`]); contexts without a point left out.
pub fn frontier(run: &crate::rundir::Run) -> Vec<TuneFrontier> {
    crate::report::frontier::of_run(run)
        .into_iter()
        .filter(|f| !f.points.is_empty())
        .map(|f| TuneFrontier {
            context: f.context,
            context_label: f.context_label,
            points: f.points,
            cost_points: f.cost_points,
        })
        .collect()
}

/// The frontier of the measured cells, per context, as a Markdown table (or a line saying
/// there is none).
fn frontier_text(f: &TuneFile) -> String {
    if f.frontier.is_empty() {
        return "frontier: none — no measured cell has tok/s per GPU and per user\n".into();
    }
    let mut s = String::from(
        "frontier (tok/s per GPU against tok/s per user, measured cells):\n| context | configuration | load | tok/s per GPU | tok/s per user |\n|---|---|---|---|---|\n",
    );
    for fr in &f.frontier {
        for p in &fr.points {
            s.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.1} |\n",
                fr.context_label,
                p.variant.as_deref().unwrap_or("—"),
                p.load,
                p.tok_s_per_gpu,
                p.per_user_tok_s
            ));
        }
    }
    s
}

fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The ranking as a Markdown table, then the winner and the engine time, for people.
pub fn text(f: &TuneFile) -> String {
    let num = |v: Option<f64>| v.map_or("—".to_string(), |x| show(&f.objective, x));
    let mut s = format!(
        "| rank | configuration | {} | how | 90% interval |\n|---|---|---|---|---|\n",
        f.objective
    );
    for (k, c) in f.configs.iter().enumerate() {
        let how = if c.measured {
            format!("measured ({})", c.why.as_deref().unwrap_or(""))
        } else if c.interval.is_some() {
            "predicted".into()
        } else {
            "not predicted".into()
        };
        let iv = c.interval.map_or(String::new(), |i| {
            format!(
                "{} – {}",
                num(i.low),
                i.high.map_or("unbounded".into(), |h| show(&f.objective, h))
            )
        });
        s.push_str(&format!(
            "| {} | {} | {} | {how} | {iv} |\n",
            k + 1,
            c.name,
            num(c.objective)
        ));
    }
    let measured = f.configs.iter().filter(|c| c.measured).count();
    s.push_str(&format!("\nstopped: {}\n", f.stopped));
    match &f.winner {
        Some(w) => s.push_str(&format!(
            "winner: {} ({} {})\n  {}\n",
            w.name,
            f.objective,
            show(&f.objective, w.objective),
            w.launch
        )),
        None => s.push_str("winner: none — no measured configuration met the SLO\n"),
    }
    s.push_str(&frontier_text(f));
    s.push_str(&format!(
        "measured {measured} of {} configurations: {:.1} engine seconds, against {:.1} for the full grid (the measured configurations' mean × {})\n",
        f.configs.len(),
        f.engine_seconds,
        f.grid_engine_seconds,
        f.configs.len()
    ));
    s
}
