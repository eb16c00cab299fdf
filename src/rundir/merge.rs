//! `benchspec merge`: join the run directories of the shards of one plan into one run
//! directory — the spec copy, one `plan.json` in run order, every record once, the requests
//! and engine logs one after another, and a manifest naming each shard — refusing shards of
//! different specs and cells measured twice. A load cell every shard measured a part of
//! (`--split-load`) becomes one record made from all the shards' requests, computed as one
//! client would have (`merge/combine.rs`).

use super::{ENGINE_LOG, Manifest, MergedPart, REQUESTS, Result, RunDir, RunDirError, SpecCopy};
use crate::plan::{Cell, Plan};
use crate::results::{Record, Status};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

mod combine;
mod order;
mod split;
pub use split::MIN_OVERLAP;
use split::is_split;

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
    /// Cells of the plan without a record (`--allow-missing` keeps them as not run).
    pub missing_cells: Vec<String>,
    /// Split load cells some shard did not measure, each with the shards missing
    /// (`--allow-missing` merges them marked invalid).
    pub partial_cells: Vec<String>,
    /// Split load cells whose shards' sending windows overlapped too little: marked
    /// invalid.
    pub not_together: Vec<String>,
}

/// The run directories in `path`: itself when it is one, else those found below it (as CI
/// artifacts and shared volumes deliver shards: `artifacts/shard-1/run/…`), in name order,
/// at most four levels down.
pub fn run_dirs(path: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
        if dir.join(super::MANIFEST).is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        if depth == 0 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        for sub in subs {
            walk(&sub, depth - 1, out);
        }
    }
    let mut out = Vec::new();
    walk(path, 4, &mut out);
    if out.is_empty() {
        out.push(path.to_path_buf());
    }
    out
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
        let why = if p.shard().1 != first.shard().1 {
            let n = |p: &Part| match p.shard().1 {
                0 => "not sharded".to_string(),
                n => format!("of {n} shards"),
            };
            Some(format!("one is {}, the other {}", n(first), n(p)))
        } else if p.plan.split != first.plan.split {
            Some("one split its load cells (`--split-load`), the other did not".into())
        } else {
            None
        };
        if let Some(why) = why {
            return Err(RunDirError::ShardsDiffer {
                a: first.dir.path().to_path_buf(),
                b: p.dir.path().to_path_buf(),
                why,
            });
        }
    }
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for p in parts {
        let measured = p.records.iter().filter(|r| r.status != Status::Skipped);
        for r in measured.filter(|r| !is_split(parts, &r.cell)) {
            if let Some(other) = seen.insert(&r.cell, p.dir.path()) {
                return Err(RunDirError::Overlap {
                    cell: r.cell.clone(),
                    a: other.to_path_buf(),
                    b: p.dir.path().to_path_buf(),
                });
            }
        }
    }
    for (i, p) in parts.iter().enumerate().skip(1) {
        let before = &parts[i - 1];
        if p.shard().1 > 0 && p.shard() == before.shard() {
            return Err(RunDirError::ShardTwice {
                shard: format!("{}/{}", p.shard().0, p.shard().1),
                a: before.dir.path().to_path_buf(),
                b: p.dir.path().to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Merge the run directories `dirs` (or the run directories below them) into `out` (which
/// must be new or empty). Cells of the plan without a record — a shard not given, or one
/// that stopped early — and split load cells without every shard's part are refused unless
/// `allow_missing`; then the first stay in the plan as not run, the second are merged from
/// the parts there are and marked invalid.
pub fn merge(dirs: &[PathBuf], out: &Path, allow_missing: bool) -> Result<Merged> {
    let mut parts = dirs
        .iter()
        .flat_map(|d| run_dirs(d))
        .map(|d| Part::load(&d))
        .collect::<Result<Vec<_>>>()?;
    if parts.is_empty() {
        return Err(RunDirError::NothingToMerge);
    }
    parts.sort_by_key(Part::shard);
    check(&parts)?;
    let n = parts[0].shard().1;
    let given: Vec<u32> = parts.iter().map(|p| p.shard().0).collect();
    let missing_shards: Vec<u32> = (1..=n).filter(|k| !given.contains(k)).collect();
    let whole = order::whole_plan(&parts[0]);
    let plan = joined_plan(&parts, whole.as_ref(), &missing_shards);
    let missing_cells = unrecorded(&plan, &parts);
    let partial = split::partial(&parts, &plan);
    if (!missing_cells.is_empty() || !partial.is_empty()) && !allow_missing {
        return Err(RunDirError::Incomplete {
            cells: missing_cells,
            partial: partial.iter().map(split::Partial::describe).collect(),
        });
    }
    let records = written_into(out, |dir| write_parts(dir, &parts, &plan))?;
    Ok(Merged {
        parts: parts.len(),
        records: records.len(),
        missing_shards,
        missing_cells,
        partial_cells: partial.iter().map(split::Partial::describe).collect(),
        not_together: records
            .iter()
            .filter(|r| r.reasons.iter().any(|w| w.contains(split::NOT_TOGETHER)))
            .map(|r| r.cell.clone())
            .collect(),
    })
}

/// Make the new or empty directory `out` with `write`: written beside it and renamed into
/// place whole, so that a merge stopped half-way (SIGTERM) leaves `out` empty, in nobody's
/// way.
fn written_into<T>(out: &Path, write: impl FnOnce(&RunDir) -> Result<T>) -> Result<T> {
    RunDir::create(Some(out.to_path_buf()), "").map_err(|e| match e {
        RunDirError::NotEmpty(path) => RunDirError::MergeOutNotEmpty(path),
        e => e,
    })?;
    let staging = out.with_file_name(format!(
        ".{}.merging-{}",
        out.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    let dir = RunDir::create(Some(staging.clone()), "")?;
    let written = write(&dir)?;
    let place = |source| RunDirError::Write {
        path: out.to_path_buf(),
        source,
    };
    std::fs::remove_dir(out).map_err(place)?;
    std::fs::rename(&staging, out).map_err(place)?;
    Ok(written)
}

/// Write the merged run directory of `parts` into `dir`; the records written, in the
/// plan's order.
fn write_parts(dir: &RunDir, parts: &[Part], plan: &Plan) -> Result<Vec<Record>> {
    let first = &parts[0];
    let spec_ext = first.spec.path.extension().and_then(|e| e.to_str());
    dir.write_spec_copy(
        &format!("spec.{}", spec_ext.unwrap_or("yaml")),
        &first.spec.text,
    )?;
    dir.write_plan(plan)?;
    let mut kept = HashSet::new();
    let records: Vec<Record> = order::records_in_order(parts, plan)
        .into_iter()
        .filter(|r| kept.insert(r.cell.clone()))
        .map(|r| match is_split(parts, &r.cell) {
            true => split::combined(parts, plan, r),
            false => Ok(r.clone()),
        })
        .collect::<Result<_>>()?;
    super::jsonl::append(&dir.file(super::RESULTS), &records)?;
    write_texts(dir, parts)?;
    for p in parts {
        p.dir.copy_kept_to(dir)?;
    }
    dir.write_manifest(&joined_manifest(parts))?;
    Ok(records)
}

/// The cells of `plan` that no part recorded (a split load cell some shard did not record
/// is [`split::partial`]'s).
fn unrecorded(plan: &Plan, parts: &[Part]) -> Vec<String> {
    let recorded: HashSet<&str> = parts
        .iter()
        .flat_map(|p| p.records.iter().map(|r| r.cell.as_str()))
        .collect();
    plan.cells
        .iter()
        .filter(|c| !recorded.contains(c.id.as_str()) && !is_split(parts, &c.id))
        .map(|c| c.id.clone())
        .collect()
}

/// The parts' requests and engine logs (each replica's apart), one after another.
fn write_texts(dir: &RunDir, parts: &[Part]) -> Result<()> {
    let mut requests = String::new();
    for p in parts {
        requests.push_str(&p.text(REQUESTS)?);
    }
    if !requests.is_empty() {
        dir.write(REQUESTS, requests.as_bytes())?;
    }
    let mut names: Vec<String> = parts
        .iter()
        .filter_map(|p| std::fs::read_dir(p.dir.path()).ok())
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| super::is_engine_log(n))
        .collect();
    names.push(ENGINE_LOG.to_string());
    names.sort();
    names.dedup();
    for name in names {
        let mut logs = String::new();
        for p in parts {
            let log = p.text(&name)?;
            if !log.is_empty() {
                let path = p.dir.path().display();
                logs.push_str(&format!("== benchspec merge: {name} of {path} ==\n"));
                logs.push_str(&log);
            }
        }
        if !logs.is_empty() {
            dir.write(&name, logs.as_bytes())?;
        }
    }
    Ok(())
}

/// The plan of the whole run, in the spec's order: every cell the parts planned once (a
/// split load cell with its whole load back), and the cells of the shards not given.
fn joined_plan(parts: &[Part], whole: Option<&Plan>, missing_shards: &[u32]) -> Plan {
    let mut seen = HashSet::new();
    let mut cells: Vec<Cell> = parts
        .iter()
        .flat_map(|p| &p.plan.cells)
        .filter(|c| seen.insert(c.id.clone()))
        .map(|c| match is_split(parts, &c.id) {
            true => split::whole_cell(parts, &c.id, whole).unwrap_or_else(|| c.clone()),
            false => c.clone(),
        })
        .collect();
    if let Some(whole) = whole {
        let n = parts[0].shard().1;
        let split = parts[0].plan.split;
        for cell in order::cells_of_shards(whole, missing_shards, n, split) {
            if seen.insert(cell.id.clone()) {
                cells.push(cell);
            }
        }
    }
    let cells = order::in_plan_order(cells, whole);
    Plan {
        shard: None,
        split: false,
        estimate_s: cells.iter().map(|c| c.estimate_s).sum(),
        cells,
        ..parts[0].plan.clone()
    }
}

/// The first part's manifest, spanning every part's times, naming each part and holding
/// every engine variant the parts launched.
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
    // The same parts merged again make the same run.
    let ids: Vec<String> = all().map(Manifest::identity).collect();
    m.run_id = Some(super::spec_sha256(&ids.join("|"))[..24].to_string());
    // Every variant any shard launched, once (the first shard's facts for one launched twice).
    m.variants.clear();
    for v in all().flat_map(|m| &m.variants) {
        if !m.variants.iter().any(|k| k.name == v.name) {
            m.variants.push(v.clone());
        }
    }
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
