//! A twin from run directories: observations, the fit, residuals, the held-out cells, the
//! interval; and the twin file — TOML, commented (what each parameter is, in which unit, the
//! cells fitted and each residual), versioned.

use super::describe::Identity;
use super::fit::{Obs, fit_designed};
use super::interval::{
    Intervals, covers, known_residuals, leave_one_out as leave_one_out_intervals, phases, range_of,
};
use super::model::Params;
use super::{Holdout, Range, Residual, TWIN_VERSION, Twin, TwinError, residuals};
use crate::rundir::Run;
use std::path::Path;

/// The limits the costs are fitted under: what the engine reported or the spec set (its
/// launch flags, its simulator's options), else vLLM's defaults.
fn base(run: &Run) -> Params {
    let e = &run.manifest.engine;
    let set = super::settings::TwinSettings::of(&run.spec);
    costless(
        set.max_batched_tokens.unwrap_or(8192),
        set.max_num_seqs.unwrap_or(256),
        e.kv_tokens.unwrap_or(1 << 30),
        e.max_model_len
            .or(run.plan.max_model_len)
            .unwrap_or(131_072),
    )
}

/// The twin's parameters with no cost and these limits: tokens per step, requests at once,
/// KV-cache tokens, longest sequence — what a fit starts from (`base`), or, with no limits,
/// what a configuration's settings are applied to for its cap (`tune::family`).
pub(crate) fn costless(
    max_batched_tokens: u64,
    max_num_seqs: u64,
    kv_tokens: u64,
    max_model_len: u64,
) -> Params {
    Params {
        step_s: 0.0,
        per_seq_s: 0.0,
        per_kv_token_s: 0.0,
        prefill_token_s: 0.0,
        prefill_quadratic_s: 0.0,
        api_s: 0.0,
        api_stream_s: 0.0,
        cached_request_s: 0.0,
        cached_token_s: 0.0,
        cached_quadratic_s: 0.0,
        tokenizer_token_s: 0.0,
        max_batched_tokens,
        max_num_seqs,
        kv_tokens,
        max_model_len,
    }
}

fn abs_errors(r: &[Residual], metric: &str) -> Vec<f64> {
    r.iter()
        .filter(|x| x.metric == metric)
        .map(|x| x.error_pct.abs())
        .collect()
}

/// Fit on the cells `keep` says, predict the others: their residuals.
fn held_out(obs: &[Obs], b: Params, keep: &dyn Fn(usize) -> bool) -> (Vec<Residual>, usize) {
    let fitted: Vec<Obs> = obs
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(_, o)| o.clone())
        .collect();
    let (p, designs) = fit_designed(&fitted, b);
    let held: Vec<&Obs> = obs
        .iter()
        .enumerate()
        .filter(|(i, _)| !keep(*i))
        .map(|(_, o)| o)
        .collect();
    let known: Vec<Residual> = held
        .iter()
        .flat_map(|o| known_residuals(&p, &designs, o))
        .collect();
    let all: usize = held.iter().map(|o| residuals(&p, o).len()).sum();
    let unknown = all.saturating_sub(known.len());
    (known, unknown)
}

/// The measured cells of `runs` the model describes (prefill, decode, load, sessions) with a
/// TTFT, a TBT or a per-request tok/s.
fn observations(runs: &[Run]) -> Vec<Obs> {
    runs.iter()
        .flat_map(|r| {
            r.records
                .iter()
                .filter_map(|rec| Obs::of(rec, r.plan.max_output_tokens))
        })
        .filter(|o| o.tbt_s.is_some() || o.ttft_s.is_some() || o.per_request_tok_s.is_some())
        .collect()
}

/// The held-out cells: each left out in turn, or those `keep` leaves out; each judged
/// against the intervals `iv` (earned on the fitted cells alone).
fn holdout_of(
    f: f64,
    leave_one_out: bool,
    obs: &[Obs],
    b: Params,
    iv: &Intervals,
    r: Range,
) -> Holdout {
    if leave_one_out {
        let (mut cells, mut unknown) = (Vec::new(), 0);
        for j in 0..obs.len() {
            let (c, u) = held_out(obs, b, &|i| i != j);
            cells.extend(c);
            unknown += u;
        }
        let h = summary(0.0, "leave-one-out", cells, iv, obs, r);
        return Holdout { unknown, ..h };
    }
    let keep = |i: usize| ((i + 1) as f64 * f).floor() == (i as f64 * f).floor();
    let method = "every cell not fitted: the fit keeps one cell in round(1 / (1 - F)), evenly through the run";
    let (cells, unknown) = held_out(obs, b, &keep);
    Holdout {
        unknown,
        ..summary(f, method, cells, iv, obs, r)
    }
}

/// The twin of `runs` (one engine's, `id`: see [`super::describe::select`]), holding out
/// `holdout` of the cells when given.
pub fn fit_runs(runs: &[Run], holdout: Option<f64>, id: &Identity) -> Result<Twin, TwinError> {
    let first = runs
        .first()
        .ok_or_else(|| TwinError::Usage("no run directory given".into()))?;
    let obs = observations(runs);
    if obs.is_empty() {
        return Err(TwinError::Nothing(first.path.display().to_string()));
    }
    let b = base(first);
    let f = holdout.unwrap_or(0.0);
    if !(0.0..1.0).contains(&f) {
        return Err(TwinError::Usage(format!(
            "--holdout takes a fraction in [0, 1), not {f}"
        )));
    }
    let leave_one_out = holdout.is_some() && obs.len() < 8;
    let keep = |i: usize| ((i + 1) as f64 * f).floor() == (i as f64 * f).floor();
    let fitted: Vec<Obs> = obs
        .iter()
        .enumerate()
        .filter(|(i, _)| leave_one_out || keep(*i))
        .map(|(_, o)| o.clone())
        .collect();
    let (params, designs) = fit_designed(&fitted, b);
    let fit_residuals: Vec<Residual> = fitted.iter().flat_map(|o| residuals(&params, o)).collect();
    let r = range_of(&fitted.iter().collect::<Vec<_>>());
    let iv = if leave_one_out {
        // Each cell is held out below; the intervals rest on those.
        Intervals::default()
    } else {
        leave_one_out_intervals(&fitted, b)
    };
    let holdout = holdout.map(|f| holdout_of(f, leave_one_out, &obs, b, &iv, r));
    let iv = match (&holdout, leave_one_out) {
        (Some(h), true) => held_out_intervals(h, &obs),
        _ => iv,
    };
    let engine = format!("{} {}", id.kind, id.version.clone().unwrap_or_default());
    Ok(Twin {
        version: TWIN_VERSION,
        fitted_by: format!("benchspec {}", env!("CARGO_PKG_VERSION")),
        engine: engine.trim().to_string(),
        engine_kind: id.kind.clone(),
        engine_version: id.version.clone(),
        model: id.model.clone(),
        hardware: id.hardware.clone(),
        variant: id.variant.clone(),
        runs: runs.iter().map(|r| r.path.display().to_string()).collect(),
        params,
        not_identified: designs.not_identified(),
        designs,
        interval_pct: iv.tok_s.pct,
        ttft_interval_pct: iv.ttft.pct,
        intervals: iv,
        range: r,
        fitted_on: fitted.iter().map(|o| o.cell.clone()).collect(),
        residuals: fit_residuals,
        holdout,
    })
}

/// The intervals of a run of fewer than 8 cells, from its leave-one-out residuals `h`.
fn held_out_intervals(h: &Holdout, obs: &[Obs]) -> Intervals {
    Intervals {
        method: "leave-one-out: each cell predicted by the others; the 90th percentile of |error|"
            .into(),
        tok_s: basis_of(&h.cells, "per_request_tok_s", obs),
        ttft: basis_of(&h.cells, "ttft_ms_p50", obs),
        prefill_ttft: basis_of(&h.cells, "prefill_ttft", obs),
        phases: phases(obs),
    }
}

/// One metric's basis from held-out residuals (leave-one-out over a run of fewer than 8
/// cells).
fn basis_of(cells: &[Residual], metric: &str, obs: &[Obs]) -> super::interval::Basis {
    let e: Vec<f64> = cells
        .iter()
        .filter(|c| under(c, obs) == metric)
        .map(|c| c.error_pct.abs())
        .collect();
    let earned = super::interval::conformal(e.clone());
    super::interval::Basis {
        pct: earned.map(|(p, _)| (p.max(0.5) * 100.0).round() / 100.0),
        cells: e.len(),
        extrapolated: 0,
        level: earned.map_or(0.9, |(_, l)| l),
        in_sample: 0,
    }
}

/// The median of `v` (the mean of the two middle values of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The interval a residual falls under ([`super::interval::metric_of`]).
fn under(c: &Residual, obs: &[Obs]) -> String {
    obs.iter()
        .find(|o| o.cell == c.cell)
        .map_or(c.metric.clone(), |o| {
            super::interval::metric_of(&c.metric, o)
        })
}

/// The held-out figures, each cell judged against the twin's intervals `iv`.
fn summary(
    fraction: f64,
    method: &str,
    cells: Vec<Residual>,
    iv: &Intervals,
    obs: &[Obs],
    r: Range,
) -> Holdout {
    let tok = abs_errors(&cells, "per_request_tok_s");
    let ttft = abs_errors(&cells, "ttft_ms_p50");
    let loo = method == "leave-one-out";
    // Each held-out value against its own interval (a prefill TTFT's apart); a value without
    // an interval (none rests on a left-out cell) is not judged: the share is of those with
    // one, `None` when none has.
    let judged = |c: &Residual| {
        loo || match under(c, obs).as_str() {
            "prefill_ttft" => iv.prefill_ttft.cells > 0,
            "ttft_ms_p50" => iv.ttft.cells > 0,
            _ => iv.tok_s.cells > 0,
        }
    };
    let share = |metric: &str| {
        let mine: Vec<&Residual> = cells
            .iter()
            .filter(|c| c.metric == metric && judged(c))
            .collect();
        let inside = mine
            .iter()
            .filter(|c| {
                let kind = under(c, obs);
                let b = match kind.as_str() {
                    "prefill_ttft" => &iv.prefill_ttft,
                    "ttft_ms_p50" => &iv.ttft,
                    _ => &iv.tok_s,
                };
                // Leave-one-out intervals are earned on these very cells: their coverage is
                // 90% by construction.
                let pct = if loo {
                    basis_of(&cells, &kind, obs).pct
                } else {
                    b.pct
                };
                let Some(pct) = pct else { return false };
                obs.iter()
                    .find(|o| o.cell == c.cell)
                    .is_none_or(|o| covers(c.error_pct, pct, r, o))
            })
            .count();
        (!mine.is_empty()).then(|| inside as f64 / mine.len() as f64)
    };
    Holdout {
        fraction,
        method: method.into(),
        median_pct: median(tok.clone()),
        max_pct: tok.iter().copied().fold(0.0, f64::max),
        ttft_median_pct: (!ttft.is_empty()).then(|| median(ttft)),
        covered: share("per_request_tok_s"),
        unknown: 0,
        predicted: None,
        ttft_covered: share("ttft_ms_p50"),
        cells,
    }
}

const UNITS: [(&str, &str); 15] = [
    ("step_s", "seconds: fixed cost of every engine step"),
    ("per_seq_s", "seconds per running request per decode step"),
    (
        "per_kv_token_s",
        "seconds per KV token read per decode step (attention over context)",
    ),
    ("prefill_token_s", "seconds per prompt token of prefill"),
    (
        "prefill_quadratic_s",
        "seconds: a prompt token at position p costs p × this more",
    ),
    (
        "api_s",
        "seconds of API server before a request reaches the engine",
    ),
    (
        "api_stream_s",
        "seconds of API-server wait per ((running + 1)^1/4 - 1)",
    ),
    (
        "cached_request_s",
        "seconds: a decode cell's first token beyond api_s, fixed (a prefix-cached prompt's admission)",
    ),
    (
        "cached_token_s",
        "seconds per prompt token of a decode cell's first token beyond api_s",
    ),
    (
        "cached_quadratic_s",
        "seconds per squared prompt token of a decode cell's first token beyond api_s",
    ),
    (
        "tokenizer_token_s",
        "seconds per prompt token on the API server's one tokenizer (requests sent together queue for it)",
    ),
    (
        "max_batched_tokens",
        "tokens per engine step; prefills are chunked to it (the spec's launch flag, else vLLM's default)",
    ),
    (
        "max_num_seqs",
        "requests scheduled at once (the spec's launch flag or simulator, else vLLM's default)",
    ),
    (
        "kv_tokens",
        "KV-cache capacity in tokens (as the engine reported it, else unbounded)",
    ),
    ("max_model_len", "longest prompt + output, tokens"),
];

/// Write `twin` to `path` as commented TOML.
pub fn write_twin(twin: &Twin, path: &Path) -> Result<(), TwinError> {
    let body = toml::to_string_pretty(twin).map_err(|e| TwinError::Usage(e.to_string()))?;
    let mut out = String::from(
        "# A benchspec twin: the simulator's step-cost model fitted to measured cells.\n\
         # `benchspec predict SPEC --twin THIS` predicts a spec's cells with 90% intervals.\n\
         # interval_pct (tok/s, TBT) and ttft_interval_pct: half-widths of 90% intervals inside\n\
         # the fitted range, percent of the value (wider outside it).\n\
         # residuals: each fitted cell's error; holdout: cells predicted without being fitted.\n",
    );
    let mut in_params = false;
    for line in body.lines() {
        if line.starts_with('[') {
            in_params = line == "[params]";
        }
        let key = line.split(" = ").next().unwrap_or_default();
        if let Some((_, unit)) = UNITS.iter().find(|(k, _)| *k == key && in_params) {
            out.push_str(&format!("# {unit}\n"));
        }
        if let Some(n) = twin
            .not_identified
            .iter()
            .find(|n| n.param == key && in_params)
        {
            out.push_str(&format!(
                "# NOT IDENTIFIED: the fitted cells do not fix it (needs {}); its value is one of many they allow, and predict gives nothing that depends on it alone\n",
                n.needs
            ));
        }
        out.push_str(&format!("{line}\n"));
    }
    std::fs::write(path, out).map_err(|source| TwinError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a twin file.
pub fn read_twin(path: &Path) -> Result<Twin, TwinError> {
    let read = |message: String| TwinError::Read {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| read(e.to_string()))?;
    #[derive(serde::Deserialize)]
    struct Version {
        version: u32,
    }
    let v: Version = toml::from_str(&text).map_err(|e| read(e.to_string()))?;
    if v.version != TWIN_VERSION {
        return Err(read(format!(
            "version {} (this benchspec reads {TWIN_VERSION}; fit it again with `benchspec fit`)",
            v.version
        )));
    }
    // The check `validate` makes of a spec's `engine.sim.twin`, and the simulator of its file.
    crate::sim::profile::from_twin(&text).map_err(|e| read(e.to_string()))?;
    let twin: Twin = toml::from_str(&text).map_err(|e| read(e.to_string()))?;
    let iv = &twin.intervals;
    let pcts = [
        ("interval_pct", twin.interval_pct),
        ("ttft_interval_pct", twin.ttft_interval_pct),
        ("intervals.tok_s.pct", iv.tok_s.pct),
        ("intervals.ttft.pct", iv.ttft.pct),
        ("intervals.prefill_ttft.pct", iv.prefill_ttft.pct),
    ];
    if let Some((name, Some(v))) = pcts
        .iter()
        .find(|(_, v)| v.is_some_and(|v| !v.is_finite() || v < 0.0))
    {
        return Err(read(format!(
            "{name} = {v}: an interval's half-width is a percentage ≥ 0; fit the twin again (`benchspec fit`) or correct that line"
        )));
    }
    Ok(twin)
}
