//! `benchspec export RUN_DIR --format benchmark-report`: llm-d's Benchmark Report v0.2.1 (the
//! newest 0.2.x schema of the llm-d-benchmark repository), one YAML file per measured cell —
//! `run` (uid = run id + cell, eid = run id, the cell's time), `scenario` (the engine as an
//! `inference_engine` stack component when the spec says how many accelerators it used; the
//! load generator — benchspec, or the peer an imported run came from — with the lengths,
//! rate and concurrency it was configured with; the cell's plan entry as its native config)
//! and `results` ([`results`]). Each field means what the schema's description says; a value
//! benchspec does not know is left out where the schema allows (a decode cell's output
//! lengths, a prefill cell's request rate), never made up. Units as the schema lists them.

mod results;
mod scenario;

use super::{InteropError, PeerBenchmark};
use crate::results::{Record, Status, Summary};
use crate::rundir::Run;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The version written.
pub const VERSION: &str = "0.2.1";

/// A latency or length distribution as the schema's `Statistics`. A p95 outside p50…p99 is
/// left out: the peers' readers fill a p95 their file lacks with 0.
fn stats(s: &Summary, units: &str) -> Value {
    let mut v = json!({"units": units, "mean": s.mean, "min": s.min, "p50": s.p50,
                       "p90": s.p90, "p99": s.p99, "max": s.max});
    if s.p95 >= s.p50 && s.p95 <= s.p99 {
        v["p95"] = json!(s.p95);
    }
    v
}

/// A mean alone.
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

/// Who made the load: `benchspec`, or the peer of an imported run (`AIPerf 0.13.0, imported
/// by benchspec`).
fn who(run: &Run) -> String {
    match super::measured_by(&run.manifest) {
        Some(peer) => format!("{peer}, imported by benchspec"),
        None => "benchspec".into(),
    }
}

/// The Benchmark Report of cell `r` of `run`; `peer` is the peer's own benchmark of an
/// imported cell, read again from the kept file.
pub fn report(run: &Run, r: &Record, peer: Option<&PeerBenchmark>) -> Value {
    let id = run.manifest.identity();
    let mut time = json!({"start": r.started_at});
    // A prefill cell's `measured_s` is its median TTFT, not how long it ran.
    if let Some(s) = r
        .measured_s
        .filter(|_| r.phase != crate::plan::Phase::Prefill)
    {
        time["duration"] = json!(duration(s));
    }
    let mut keywords = vec!["benchspec".to_string(), r.phase.as_str().to_string()];
    keywords.extend(run.manifest.imported_from.as_ref().map(|i| i.tool.clone()));
    json!({
        "version": VERSION,
        "run": {"uid": format!("{id}/{}", r.cell), "eid": id,
                "description": format!("{} · {} · {} · {}", who(run), run.spec.name, r.cell, r.status.as_str()),
                "keywords": keywords, "time": time},
        "scenario": scenario::scenario(run, r, peer),
        "results": results::results(r, peer),
    })
}

/// A cell's file name: its id with `/` as `_`.
fn file_name(cell: &str) -> String {
    format!("{}.yaml", cell.replace('/', "_"))
}

/// The peer's benchmark of imported cell `cell` (`import/<tool>/<n>`: the `n`-th).
fn peer_of<'a>(peers: Option<&'a [PeerBenchmark]>, cell: &str) -> Option<&'a PeerBenchmark> {
    let n: usize = cell
        .strip_prefix("import/")?
        .rsplit('/')
        .next()?
        .parse()
        .ok()?;
    peers?.get(n.checked_sub(1)?)
}

/// Write one report per measured cell of `run` into `out`; returns the files.
pub fn export(run: &Run, out: &Path) -> Result<Vec<PathBuf>, InteropError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| InteropError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(err(out))?;
    let peers = super::kept::benchmarks(&run.path, &run.manifest);
    let mut written = Vec::new();
    for r in run
        .records
        .iter()
        .filter(|r| matches!(r.status, Status::Valid | Status::Invalid))
    {
        let doc = report(run, r, peer_of(peers.as_deref(), &r.cell));
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
