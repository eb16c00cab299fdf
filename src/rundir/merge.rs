//! `benchspec merge`: join the run directories of the shards of one plan into one run
//! directory — the spec copy, one `plan.json` in run order, every record once, the requests
//! and engine logs one after another, and a manifest naming each shard — refusing shards of
//! different specs and cells measured twice.

use super::{ENGINE_LOG, Manifest, MergedPart, REQUESTS, Result, RunDir, RunDirError, SpecCopy};
use crate::plan::Plan;
use crate::results::{Record, Status};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One shard's run directory, as read.
struct Part {
    dir: RunDir,
    manifest: Manifest,
    plan: Plan,
    spec: SpecCopy,
    records: Vec<Record>,
}

impl Part {
    fn load(path: &Path) -> Result<Part> {
        let dir = RunDir::open(path)?;
        Ok(Part {
            manifest: dir.manifest()?,
            plan: dir.plan()?,
            spec: dir.spec_copy()?,
            records: dir.records()?,
            dir,
        })
    }

    fn shard(&self) -> (u32, u32) {
        self.plan.shard.map_or((0, 0), |s| (s.k, s.n))
    }

    /// The text of one of its optional files (requests, engine log).
    fn text(&self, name: &str) -> Result<String> {
        match std::fs::read_to_string(self.dir.file(name)) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(RunDirError::Read {
                path: self.dir.file(name),
                source,
            }),
        }
    }
}

/// What a merge did.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Directories merged.
    pub parts: usize,
    /// Records written.
    pub records: usize,
    /// Shards of the plan that were not given (`k` of `n`), when the parts are shards.
    pub missing_shards: Vec<u32>,
}

fn check(parts: &[Part]) -> Result<()> {
    let first = &parts[0];
    for p in &parts[1..] {
        if p.manifest.spec_sha256 != first.manifest.spec_sha256 {
            return Err(RunDirError::Mixed {
                a: first.dir.path().to_path_buf(),
                sha_a: first.manifest.spec_sha256.clone(),
                b: p.dir.path().to_path_buf(),
                sha_b: p.manifest.spec_sha256.clone(),
            });
        }
    }
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for p in parts {
        for r in p.records.iter().filter(|r| r.status != Status::Skipped) {
            if let Some(other) = seen.insert(&r.cell, p.dir.path()) {
                return Err(RunDirError::Overlap {
                    cell: r.cell.clone(),
                    a: other.to_path_buf(),
                    b: p.dir.path().to_path_buf(),
                });
            }
        }
    }
    Ok(())
}

/// Merge the run directories `dirs` into `out` (which must be new or empty).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged> {
    let mut parts = dirs
        .iter()
        .map(|d| Part::load(d))
        .collect::<Result<Vec<_>>>()?;
    if parts.is_empty() {
        return Err(RunDirError::NothingToMerge);
    }
    parts.sort_by_key(Part::shard);
    check(&parts)?;
    let dir = RunDir::create(Some(out.to_path_buf()), "")?;
    let first = &parts[0];
    let spec_ext = first.spec.path.extension().and_then(|e| e.to_str());
    dir.write_spec_copy(
        &format!("spec.{}", spec_ext.unwrap_or("yaml")),
        &first.spec.text,
    )?;
    dir.write_plan(&joined_plan(&parts))?;
    let mut kept = HashSet::new();
    let records: Vec<&Record> = parts
        .iter()
        .flat_map(|p| &p.records)
        .filter(|r| kept.insert(r.cell.clone()))
        .collect();
    super::jsonl::append(&dir.file(super::RESULTS), &records)?;
    let mut requests = String::new();
    let mut logs = String::new();
    for p in &parts {
        requests.push_str(&p.text(REQUESTS)?);
        let log = p.text(ENGINE_LOG)?;
        if !log.is_empty() {
            let head = format!(
                "== benchspec merge: engine.log of {} ==\n",
                p.dir.path().display()
            );
            logs.push_str(&head);
            logs.push_str(&log);
        }
    }
    if !requests.is_empty() {
        dir.write(REQUESTS, requests.as_bytes())?;
    }
    if !logs.is_empty() {
        dir.write(ENGINE_LOG, logs.as_bytes())?;
    }
    dir.write_manifest(&joined_manifest(&parts))?;
    let n = first.shard().1;
    let given: Vec<u32> = parts.iter().map(|p| p.shard().0).collect();
    Ok(Merged {
        parts: parts.len(),
        records: records.len(),
        missing_shards: (1..=n).filter(|k| !given.contains(k)).collect(),
    })
}

/// Shards are contiguous runs of the plan: their cells one after another are its order.
fn joined_plan(parts: &[Part]) -> Plan {
    let mut seen = HashSet::new();
    let cells = parts
        .iter()
        .flat_map(|p| &p.plan.cells)
        .filter(|c| seen.insert(c.id.clone()))
        .cloned()
        .collect();
    Plan {
        shard: None,
        estimate_s: parts.iter().map(|p| p.plan.estimate_s).sum(),
        cells,
        ..parts[0].plan.clone()
    }
}

/// The first part's manifest, spanning every part's times and naming each part.
fn joined_manifest(parts: &[Part]) -> Manifest {
    let mut m = parts[0].manifest.clone();
    let all = || parts.iter().map(|p| &p.manifest);
    m.started_at = all()
        .map(|m| m.started_at.clone())
        .min()
        .unwrap_or_default();
    m.ended_at = all()
        .map(|m| m.ended_at.clone())
        .collect::<Option<Vec<_>>>()
        .and_then(|ends| ends.into_iter().max());
    let mut hosts: Vec<String> = all().map(|m| m.host.clone()).collect();
    hosts.dedup();
    m.host = hosts.join(", ");
    m.merged_from = Some(
        parts
            .iter()
            .map(|p| {
                let (k, n) = p.shard();
                MergedPart {
                    dir: p.dir.path().display().to_string(),
                    shard: (n > 0).then(|| format!("{k}/{n}")),
                    host: Some(p.manifest.host.clone()),
                    started_at: Some(p.manifest.started_at.clone()),
                    ended_at: p.manifest.ended_at.clone(),
                    engine_reported_version: p.manifest.engine.reported_version.clone(),
                }
            })
            .collect(),
    );
    m
}
