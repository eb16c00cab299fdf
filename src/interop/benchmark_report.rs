//! `benchspec export RUN_DIR --format benchmark-report`: llm-d's Benchmark Report v0.2.1 (the
//! newest 0.2.x schema of the llm-d-benchmark repository), one YAML file per measured cell —
//! `run` (uid = run id + cell, eid = run id, the cell's time), `scenario` (the engine as an
//! `inference_engine` stack component, benchspec as the load with the cell's prompt and output
//! lengths, rate and concurrency, the cell's plan entry as its native config) and `results`
//! (requests, TTFT in ms, TPOT/ITL in ms/token, request latency in ms, output-token and request
//! rates). Statistics keep their own names (`p50`, `p90`, `p95`, `p99`); units as the schema
//! lists them.

use super::InteropError;
use crate::results::{Record, Status, Summary};
use crate::rundir::{Run, spec_sha256};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The version written.
pub const VERSION: &str = "0.2.1";

fn stats(s: &Summary, units: &str) -> Value {
    json!({"units": units, "mean": s.mean, "min": s.min, "p50": s.p50, "p90": s.p90,
           "p95": s.p95, "p99": s.p99, "max": s.max})
}

fn scalar(v: f64, units: &str) -> Value {
    json!({"units": units, "mean": v})
}

/// Insert `value` at `key` when there is one.
fn put(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(key.into(), v);
    }
}

/// `PT12.5S`.
fn duration(s: f64) -> String {
    format!("PT{}S", (s * 1000.0).round() / 1000.0)
}

fn results(r: &Record) -> Value {
    let mut requests = Map::new();
    requests.insert("total".into(), json!(r.requests_started));
    requests.insert("failures".into(), json!(r.errors));
    let incomplete = r.requests_started.saturating_sub(r.completed + r.errors);
    requests.insert("incomplete".into(), json!(incomplete));
    requests.insert(
        "input_length".into(),
        scalar(
            r.open.input_tokens_mean.unwrap_or(r.prompt_tokens as f64),
            "count",
        ),
    );
    let out_mean = r.open.output_tokens_mean.or_else(|| {
        let n = r.completed.max(1) as f64;
        r.output_tokens.map(|t| t as f64 / n)
    });
    put(
        &mut requests,
        "output_length",
        out_mean.map(|m| scalar(m, "count")),
    );
    let mut latency = Map::new();
    put(
        &mut latency,
        "time_to_first_token",
        r.ttft_ms.map(|s| stats(&s, "ms")),
    );
    put(
        &mut latency,
        "time_per_output_token",
        r.open.tpot_ms.map(|s| stats(&s, "ms/token")),
    );
    put(
        &mut latency,
        "inter_token_latency",
        r.open.itl_ms.or(r.tbt_ms).map(|s| stats(&s, "ms/token")),
    );
    put(
        &mut latency,
        "request_latency",
        r.open.e2e_ms.map(|s| stats(&s, "ms")),
    );
    let mut throughput = Map::new();
    put(
        &mut throughput,
        "output_token_rate",
        r.total_tok_s.map(|v| scalar(v, "tokens/s")),
    );
    let rate = r.open.rate_achieved.or_else(|| {
        r.measured_s
            .filter(|s| *s > 0.0)
            .map(|s| r.completed as f64 / s)
    });
    put(
        &mut throughput,
        "request_rate",
        rate.map(|v| scalar(v, "queries/s")),
    );
    json!({"request_performance": {"aggregate": {
        "requests": requests, "latency": latency, "throughput": throughput}}})
}

fn scenario(run: &Run, r: &Record) -> Value {
    let m = &run.manifest;
    let hw = &run.spec.hardware;
    let engine = json!({
        "metadata": {"label": format!("{}-0", m.engine.kind),
                     "cfg_id": spec_sha256(m.launch_command.as_deref().unwrap_or(&m.engine.kind))},
        "standardized": {
            "kind": "inference_engine",
            "tool": m.engine.kind,
            "tool_version": m.engine.reported_version.clone().unwrap_or_else(|| "unknown".into()),
            "role": "replica",
            "replicas": 1,
            "model": {"name": run.spec.model.source.clone().unwrap_or_else(|| run.spec.model.served_name.clone())},
            "accelerator": {"model": hw.gpu.clone().unwrap_or_else(|| "unknown".into()),
                            "count": hw.gpu_count.unwrap_or(1).max(1), "parallelism": {}},
        },
        "native": {"args": {"launch_command": m.launch_command}},
    });
    let cell = run.plan.cells.iter().find(|c| c.id == r.cell);
    let cell_json = cell
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null);
    let mut load = json!({
        "tool": "benchspec",
        "tool_version": m.tool_version,
        "source": "random",
        "input_seq_len": {"distribution": "fixed", "value": r.prompt_tokens},
    });
    if let Some(o) = r.open.output_tokens_mean {
        load["output_seq_len"] = json!({"distribution": "fixed", "value": o.round()});
    }
    if let Some(rate) = r
        .open
        .rate_offered
        .map(|x| x.0)
        .filter(|x| x.is_finite() && *x > 0.0)
    {
        load["rate_qps"] = json!(rate);
    }
    if r.concurrency >= 1 {
        load["concurrency"] = json!(r.concurrency);
    }
    json!({
        "stack": [engine],
        "load": {"metadata": {"cfg_id": spec_sha256(&cell_json.to_string()), "description": r.cell},
                 "standardized": load,
                 "native": {"config": {"cell": cell_json, "phase": r.phase.as_str()}}},
    })
}

/// The Benchmark Report of cell `r` of `run`.
pub fn report(run: &Run, r: &Record) -> Value {
    let id = run.manifest.identity();
    let mut time = json!({"start": r.started_at});
    if let Some(s) = r.measured_s {
        time["duration"] = json!(duration(s));
    }
    json!({
        "version": VERSION,
        "run": {"uid": format!("{id}/{}", r.cell), "eid": id,
                "description": format!("benchspec {} · {} · {}", run.spec.name, r.cell, r.status.as_str()),
                "keywords": ["benchspec", r.phase.as_str()], "time": time},
        "scenario": scenario(run, r),
        "results": results(r),
    })
}

/// A cell's file name: its id with `/` as `_`.
fn file_name(cell: &str) -> String {
    format!("{}.yaml", cell.replace('/', "_"))
}

/// Write one report per measured cell of `run` into `out`; returns the files.
pub fn export(run: &Run, out: &Path) -> Result<Vec<PathBuf>, InteropError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| InteropError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(err(out))?;
    let mut written = Vec::new();
    for r in run
        .records
        .iter()
        .filter(|r| matches!(r.status, Status::Valid | Status::Invalid))
    {
        let doc = report(run, r);
        let text = serde_saphyr::to_string(&doc).map_err(|e| InteropError::Write {
            path: out.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let path = out.join(file_name(&r.cell));
        std::fs::write(&path, text).map_err(err(&path))?;
        written.push(path);
    }
    Ok(written)
}
