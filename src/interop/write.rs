//! A peer's benchmarks written as a run directory: a spec that describes them (the engine
//! kind `--engine` names, at the peer's target, its model, its prompt length and rates), a plan of one load
//! cell per benchmark (`import/<tool>/<n>`), a manifest naming the peer, and one record per
//! cell holding the peer's own figures; the peer's files are kept beside them ([`super::kept`]).

use super::{InteropError, PeerBenchmark, PeerRun, Tool};
use crate::plan::{Cell, Measure, Plan};
use crate::results::record::{rfc3339, utc_now};
use crate::results::{Record, Status, TokenSource};
use crate::rundir::{Imported, Manifest, RunDir, spec_sha256};
use crate::spec::{self, Stage};
use std::path::{Path, PathBuf};

/// The spec text describing the imported run (`engine` the kind the user says the peer
/// measured: the peers' files do not say).
fn spec_text(
    name: &str,
    engine: &str,
    tool: Tool,
    run: &PeerRun,
    first: &PeerBenchmark,
    files: &str,
) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let ctx = first
        .input_tokens_mean
        .map_or(1, |x| x.round().max(1.0) as u64);
    let out = first
        .output_tokens_mean
        .map_or(1, |x| x.round().max(1.0) as u64);
    let duration = first.duration_s.map_or(1, |d| d.round().max(1.0) as u64);
    let target = run
        .target
        .clone()
        .filter(|t| t.starts_with("http://") || t.starts_with("https://"))
        .unwrap_or_else(|| "http://127.0.0.1:8000".into());
    let model = run.model.clone().unwrap_or_else(|| "unknown".into());
    format!(
        "# Written by `benchspec import {tool}`: it describes the peer's run, it is not run.\n\
         version: 1\nname: {name}\ndescription: {desc}\nlabels: {{imported_from: {tool}}}\n\
         engine: {{kind: {engine}, base_url: {target}}}\nmodel: {{served_name: {model}}}\n\
         workload: {{max_output_tokens: {out}}}\nmatrix: {{contexts: [{ctx}], concurrency: [1]}}\n\
         phases: {{prefill: {{enabled: false}}, decode: {{enabled: false}}, load: {{rates: [1], duration: {duration}s}}}}\n",
        tool = tool.as_str(),
        engine = engine,
        name = q(name),
        desc = q(&format!(
            "Imported from {} {} ({files}).",
            tool.as_str(),
            run.version.as_deref().unwrap_or("(version not stated)")
        )),
        target = q(&target),
        model = q(&model),
    )
}

/// The cell of benchmark `b`, made from the plan's one load cell.
fn cell(template: &Cell, id: String, b: &PeerBenchmark) -> Cell {
    let mut c = template.clone();
    c.id = id;
    let ctx = b.input_tokens_mean.map_or(0, |x| x.round().max(0.0) as u64);
    c.context = ctx;
    c.prompt_tokens = ctx;
    c.concurrency = b.max_concurrency.unwrap_or(0);
    c.estimate_s = b.duration_s.unwrap_or_default();
    if let Measure::Load(load) = &mut c.measure {
        load.rate = crate::plan::vocab::Rate(b.rate.unwrap_or(f64::INFINITY));
        load.max_concurrency = b.max_concurrency;
        load.arrivals = match b.arrivals.as_deref() {
            Some("constant") => crate::plan::vocab::Arrivals::Constant,
            _ => crate::plan::vocab::Arrivals::Poisson,
        };
    }
    c
}

/// The record of benchmark `b` in cell `c`.
fn record(
    c: &Cell,
    b: &PeerBenchmark,
    plan_labels: &std::collections::BTreeMap<String, String>,
    note: String,
) -> Record {
    let started = b
        .started_at
        .map_or_else(utc_now, |s| rfc3339(s.max(0.0) as u64));
    let mut r = Record::new(c, started, plan_labels);
    r.status = if b.completed > 0 {
        Status::Valid
    } else {
        Status::Failed
    };
    if b.completed == 0 {
        r.reasons
            .push("the peer recorded no successful request".into());
    }
    r.measured_s = b.duration_s;
    r.output_tokens = b.output_tokens;
    r.token_source = Some(TokenSource::Imported);
    r.total_tok_s = b.output_tok_s.map(|x| (x * 10.0).round() / 10.0);
    r.per_request_tok_s = b.tpot.filter(|t| t.p50 > 0.0).map(|t| 1000.0 / t.p50);
    r.requests_started = b.completed + b.errors + b.incomplete;
    r.completed = b.completed;
    r.errors = b.errors;
    if b.errors > 0 {
        r.error_kinds.insert("peer_error".into(), b.errors);
    }
    r.ttft_ms = b.ttft;
    r.tbt_ms = b.itl;
    // No rate where the peer offered none (a concurrency benchmark): shown as "—".
    r.open.rate_offered = b.rate.map(crate::plan::vocab::Rate);
    r.open.rate_achieved = b.request_rate;
    r.open.arrivals = b.arrivals.clone();
    r.open.input_tokens_mean = b.input_tokens_mean;
    r.open.output_tokens_mean = b.output_tokens_mean;
    r.open.tpot_ms = b.tpot;
    r.open.itl_ms = b.itl;
    r.open.e2e_ms = b.e2e;
    r.warnings.push(note);
    r.warnings.extend(b.notes.iter().cloned());
    r
}

/// The spec text describing the import, parsed.
fn described(text: &str, out: &Path) -> Result<spec::Loaded, InteropError> {
    spec::parse("spec.yaml", text, Stage::Validate, &|_| None).map_err(|e| InteropError::Format {
        path: out.to_path_buf(),
        message: format!(
            "the spec describing the import is invalid: {}",
            e.diagnostics().first().map_or_else(
                || e.to_string(),
                |d| format!("{}:{}: {}", d.line, d.column, d.message)
            )
        ),
    })
}

/// The plan's cells and records: one per benchmark of every file, in order.
fn cells_and_records(
    tool: Tool,
    runs: &[(String, PeerRun)],
    template: &Cell,
    labels: &std::collections::BTreeMap<String, String>,
) -> (Vec<Cell>, Vec<Record>) {
    let mut cells = Vec::new();
    let mut records = Vec::new();
    for (file, run) in runs {
        for b in &run.benchmarks {
            let id = format!("import/{}/{}", tool.as_str(), cells.len() + 1);
            let c = cell(template, id, b);
            let note = format!(
                "imported from {} {}: {file} (benchmark {}); the peer's own statistics",
                tool.as_str(),
                run.version.as_deref().unwrap_or(""),
                b.label
            );
            records.push(record(&c, b, labels, note.replace("  ", " ")));
            cells.push(c);
        }
    }
    (cells, records)
}

/// The manifest: the benchmarks' span, the peer, and an id from the peer's figures (the same
/// files imported again are the same run).
fn manifest(
    tool: Tool,
    engine: &str,
    runs: &[(String, PeerRun)],
    text: &str,
    records: &[Record],
) -> Manifest {
    let benchmarks = || runs.iter().flat_map(|(_, r)| r.benchmarks.iter());
    let start = benchmarks()
        .filter_map(|b| b.started_at)
        .fold(f64::INFINITY, f64::min);
    let end = benchmarks()
        .filter_map(|b| Some(b.started_at? + b.duration_s?))
        .fold(f64::NEG_INFINITY, f64::max);
    let started_at = if start.is_finite() {
        rfc3339(start as u64)
    } else {
        utc_now()
    };
    let mut m = Manifest::new("spec.yaml", spec_sha256(text), engine, started_at);
    m.ended_at = end.is_finite().then(|| rfc3339(end.ceil() as u64));
    let first = runs.first().map(|(_, r)| r);
    m.engine.models = first.and_then(|r| r.model.clone()).into_iter().collect();
    let figures: Vec<_> = records
        .iter()
        .map(|r| (&r.cell, r.total_tok_s, r.completed))
        .collect();
    let seed = format!(
        "{}|{}|{}",
        tool.as_str(),
        m.started_at,
        serde_json::to_string(&figures).unwrap_or_default()
    );
    m.run_id = Some(spec_sha256(&seed)[..24].to_string());
    m.imported_from = Some(Imported {
        tool: tool.as_str().into(),
        version: first.and_then(|r| r.version.clone()),
        files: runs.iter().map(|(f, _)| f.clone()).collect(),
    });
    m
}

/// Write the runs read from `files` (each `tool`'s) as the run directory `out`, the spec
/// named `name`; returns its path.
pub fn write_run(
    tool: Tool,
    engine: &str,
    runs: &[(String, PeerRun)],
    out: &Path,
    name: Option<&str>,
) -> Result<PathBuf, InteropError> {
    let format_error = |message: &str| InteropError::Format {
        path: out.to_path_buf(),
        message: message.into(),
    };
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(InteropError::NotEmpty(out.to_path_buf()));
    }
    let first_run = &runs
        .first()
        .ok_or_else(|| format_error("no file to import"))?
        .1;
    let first = first_run.benchmarks.first().cloned().unwrap_or_default();
    let files: Vec<String> = runs.iter().map(|(f, _)| f.clone()).collect();
    let default_name = format!(
        "{} {}",
        tool.as_str(),
        first_run.model.as_deref().unwrap_or("import")
    );
    let name = name.map_or(default_name, str::to_string);
    let text = spec_text(&name, engine, tool, first_run, &first, &files.join(", "));
    let loaded = described(&text, out)?;
    let mut plan: Plan = crate::plan::expand(&loaded.spec, &crate::plan::sim::rates_for);
    let template = plan
        .cells
        .iter()
        .find(|c| matches!(c.measure, Measure::Load(_)))
        .cloned()
        .ok_or_else(|| format_error("the spec describing the import has no load cell"))?;
    let (cells, records) = cells_and_records(tool, runs, &template, &loaded.spec.labels);
    plan.cells = cells;
    plan.estimate_s = plan.cells.iter().map(|c| c.estimate_s).sum();
    let m = manifest(tool, engine, runs, &text, &records);
    let dir = RunDir::create(Some(out.to_path_buf()), "spec.yaml")?;
    dir.write_spec_copy("spec.yaml", &text)?;
    dir.write_plan(&plan)?;
    dir.write_manifest(&m)?;
    for r in &records {
        dir.append(r)?;
    }
    super::kept::keep(dir.path(), &files)?;
    Ok(dir.path().to_path_buf())
}
