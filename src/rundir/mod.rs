//! The run directory (docs/run-directory.md), owned here and nowhere else: the spec copy byte
//! for byte, `plan.json` (the real [`Plan`]), `manifest.json` (a typed [`Manifest`]),
//! `results.jsonl` (one [`Record`] a line, each appended whole — write, flush, fsync — as its
//! cell ends), `requests.jsonl` and `engine.log`. `run`, `--resume`, `report`, `compare` and
//! `merge` read and write these files through [`RunDir`]; a corrupt line that is not the last
//! is an error naming the file and line, and only a torn last line (a killed run) is repaired.

mod error;
pub mod git;
mod jsonl;
mod kept;
mod leftovers;
mod repeats;
pub use repeats::{RepeatLine, repeat_line_schema_text};
mod requests;
pub use requests::{
    OpenRequest, Request, RequestLine, TurnRequest, WindowRequest, request_line_schema_text,
};
mod manifest;
mod merge;
pub use error::RunDirError;

pub use jsonl::read_records;
pub use manifest::{EngineFacts, Imported, Manifest, MergedPart, PredictedBy, VariantFacts};
pub use merge::{MIN_OVERLAP, Merged, merge, run_dirs};

use crate::plan::Plan;
use crate::results::Record;
use crate::spec::{Spec, Stage};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The plan's file name.
pub const PLAN: &str = "plan.json";
/// The results' file name.
pub const RESULTS: &str = "results.jsonl";
/// The per-request detail's file name.
pub const REQUESTS: &str = "requests.jsonl";
/// Each repeat's record of a repeated cell, as it ends (its combined record goes to
/// `results.jsonl` after the last repeat).
pub const REPEATS: &str = "repeats.jsonl";
/// A copy of the load phase's dataset, so that the run directory holds every prompt source
/// and `--resume` sends the same prompts.
pub const DATASET: &str = crate::spec::files::KEPT_DATASET;
/// A launched engine's output.
pub const ENGINE_LOG: &str = "engine.log";

/// The log of replica `index` of `replicas` launched: `engine.log` for a lone engine,
/// `engine-<index>.log` for each of several.
pub fn engine_log(index: u32, replicas: u32) -> String {
    if replicas > 1 {
        format!("engine-{index}.log")
    } else {
        ENGINE_LOG.to_string()
    }
}

/// Whether `name` is an engine's log (`engine.log`, or a replica's `engine-<i>.log`).
pub fn is_engine_log(name: &str) -> bool {
    name == ENGINE_LOG
        || name
            .strip_prefix("engine-")
            .and_then(|n| n.strip_suffix(".log"))
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}
/// The names the spec copy may have, by the spec's own extension.
const SPEC_COPIES: [&str; 4] = ["spec.yaml", "spec.yml", "spec.toml", "spec.json"];

type Result<T> = std::result::Result<T, RunDirError>;

/// A run directory on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
}

/// The spec copy of a run directory.
#[derive(Debug, Clone)]
pub struct SpecCopy {
    /// Its path.
    pub path: PathBuf,
    /// Its bytes.
    pub text: String,
}

/// What `--resume` finds in a run directory.
#[derive(Debug)]
pub struct Resumed {
    /// The manifest as the earlier run left it.
    pub manifest: Manifest,
    /// The whole records of `results.jsonl`.
    pub records: Vec<Record>,
    /// Bytes of a torn last line cut off `results.jsonl` (0: none).
    pub repaired_bytes: u64,
}

/// Everything a run directory holds that reports show.
#[derive(Debug, Clone)]
pub struct Run {
    /// The directory.
    pub path: PathBuf,
    /// `manifest.json`.
    pub manifest: Manifest,
    /// The spec copy, checked again.
    pub spec: Spec,
    /// The plan.
    pub plan: Plan,
    /// The records of `results.jsonl`; for a cell recorded twice, the last.
    pub records: Vec<Record>,
}

impl Run {
    /// The record of cell `id`.
    pub fn record(&self, id: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.cell == id)
    }
}

/// The hex sha256 of a spec's bytes.
pub fn spec_sha256(source: &str) -> String {
    Sha256::digest(source.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl RunDir {
    /// Make a new run directory at `out` (refusing a non-empty one), or under `runs/` named
    /// after the spec and the time.
    pub fn create(out: Option<PathBuf>, spec_path: &str) -> Result<RunDir> {
        let path = out.unwrap_or_else(|| default_dir(spec_path));
        let err = |source| RunDirError::Write {
            path: path.clone(),
            source,
        };
        if path.exists() && std::fs::read_dir(&path).map_err(err)?.next().is_some() {
            if !leftovers::measured_nothing(&path) {
                return Err(RunDirError::NotEmpty(path));
            }
            // What a run that measured nothing left (a failed launch): out of the way of this
            // one, but for the engine's log, which the new engine's output follows.
            leftovers::clear(&path).map_err(err)?;
        }
        std::fs::create_dir_all(&path).map_err(err)?;
        Ok(RunDir { path })
    }

    /// Whether `path` is a folder left by a run that measured nothing (a failed launch): a
    /// new run, or `--resume`, may start there afresh. An empty or missing folder is not one
    /// (`--resume` there is a mistyped path, said as such).
    pub fn is_leftover(path: &Path) -> bool {
        let holds_files = std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some());
        holds_files && leftovers::measured_nothing(path)
    }

    /// An existing run directory (it has a manifest).
    pub fn open(path: &Path) -> Result<RunDir> {
        if !path.join(MANIFEST).is_file() {
            return Err(RunDirError::NotARun(path.to_path_buf()));
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of one of its files.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write the spec copy, named by the spec's own extension.
    pub fn write_spec_copy(&self, spec_path: &str, source: &str) -> Result<()> {
        let ext = Path::new(spec_path)
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| SPEC_COPIES.contains(&format!("spec.{e}").as_str()))
            .unwrap_or("yaml");
        self.write(&format!("spec.{ext}"), source.as_bytes())
    }

    /// Write `plan.json`.
    pub fn write_plan(&self, plan: &Plan) -> Result<()> {
        self.write_json(PLAN, plan)
    }

    /// Write `manifest.json`.
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<()> {
        self.write_json(MANIFEST, manifest)
    }

    /// Read `manifest.json`.
    pub fn manifest(&self) -> Result<Manifest> {
        self.read_json(MANIFEST)
    }

    /// Read `plan.json`.
    pub fn plan(&self) -> Result<Plan> {
        self.read_json(PLAN)
    }

    /// The spec copy.
    pub fn spec_copy(&self) -> Result<SpecCopy> {
        let Some(path) = SPEC_COPIES
            .iter()
            .map(|n| self.file(n))
            .find(|p| p.is_file())
        else {
            return Err(RunDirError::Damaged {
                path: self.file(SPEC_COPIES[0]),
                line: None,
                message: "the spec copy is missing".into(),
            });
        };
        let text = read_text(&path)?;
        Ok(SpecCopy { path, text })
    }

    /// The spec copy, checked as `validate` checks a spec.
    pub fn spec(&self) -> Result<Spec> {
        let copy = self.spec_copy()?;
        let name = copy.path.display().to_string();
        let files = crate::spec::files::Files::Kept(self.path.clone());
        crate::spec::parse_in(&name, &copy.text, Stage::Validate, &|_| None, files)
            .map(|l| l.spec)
            .map_err(|e| {
                let first = e
                    .diagnostics()
                    .first()
                    .map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.column, d.message))
                    .unwrap_or_else(|| e.to_string());
                RunDirError::Damaged {
                    path: copy.path.clone(),
                    line: None,
                    message: first,
                }
            })
    }

    /// Append `record` to `results.jsonl` and make it durable before returning.
    pub fn append(&self, record: &Record) -> Result<()> {
        jsonl::append(&self.file(RESULTS), std::slice::from_ref(record))
    }

    /// Keep a copy of a file the spec names (`bytes`) under its kept `name`.
    pub fn write_kept(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.write(name, bytes)
    }

    /// Keep a copy of the dataset's `bytes` as `dataset.jsonl`.
    pub fn write_dataset(&self, bytes: &[u8]) -> Result<()> {
        self.write(DATASET, bytes)
    }

    /// Append per-request detail to `requests.jsonl`.
    pub fn append_requests(&self, lines: &[RequestLine]) -> Result<()> {
        jsonl::append(&self.file(REQUESTS), lines)
    }

    /// Replace `results.jsonl` with `records` (written beside it, then renamed over it): for
    /// a run made in this process and amended before anyone reads it (`predict --out`).
    pub fn rewrite_records(&self, records: &[Record]) -> Result<()> {
        let (path, tmp) = (self.file(RESULTS), self.file("results.jsonl.tmp"));
        let _ = std::fs::remove_file(&tmp);
        jsonl::append(&tmp, records)?;
        std::fs::rename(&tmp, &path).map_err(|source| RunDirError::Write { path, source })
    }

    /// The records of `results.jsonl`, in the order written (none when it does not exist).
    pub fn records(&self) -> Result<Vec<Record>> {
        read_records(&self.file(RESULTS))
    }

    /// Open this run directory to go on with it: it must have been run from a spec with the
    /// bytes `spec_source`. A torn last line of `results.jsonl` is cut off first.
    pub fn resume(&self, spec_source: &str) -> Result<Resumed> {
        let manifest = self.manifest()?;
        let now = spec_sha256(spec_source);
        if manifest.spec_sha256 != now {
            return Err(RunDirError::SpecChanged {
                dir: self.path.clone(),
                was: manifest.spec_sha256,
                now,
            });
        }
        let repaired_bytes = jsonl::repair(&self.file(RESULTS))?;
        Ok(Resumed {
            manifest,
            records: self.records()?,
            repaired_bytes,
        })
    }

    /// Everything a report shows: manifest, checked spec copy, plan, and the last record of
    /// each cell.
    pub fn load(&self) -> Result<Run> {
        let manifest = self.manifest()?;
        let spec = self.spec()?;
        let plan = self.plan()?;
        let mut records = self.records()?;
        // The last record of a cell wins (a cell measured again after a crash).
        let mut seen = std::collections::HashSet::new();
        records.reverse();
        records.retain(|r| seen.insert(r.cell.clone()));
        records.reverse();
        Ok(Run {
            path: self.path.clone(),
            manifest,
            spec,
            plan,
            records,
        })
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.file(name);
        std::fs::write(&path, bytes).map_err(|source| RunDirError::Write { path, source })
    }

    fn write_json<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(|e| RunDirError::Write {
            path: self.file(name),
            source: std::io::Error::other(e),
        })?;
        self.write(name, (text + "\n").as_bytes())
    }

    fn read_json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T> {
        let path = self.file(name);
        let text = read_text(&path)?;
        serde_json::from_str(&text).map_err(|e| RunDirError::Damaged {
            path,
            line: None,
            message: e.to_string(),
        })
    }
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| RunDirError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// `runs/<spec>-<date>-<time>`, with `-2`, `-3`, … when runs start within the same second.
fn default_dir(spec_path: &str) -> PathBuf {
    let stem = Path::new(spec_path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("run");
    let stamp: String = crate::results::record::utc_now()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let (date, time) = stamp.split_at(8.min(stamp.len()));
    let base = PathBuf::from("runs").join(format!("{stem}-{date}-{time}"));
    let mut candidate = base.clone();
    let mut n = 2;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    #[test]
    fn engine_logs_are_named_by_replica_and_recognised() {
        assert_eq!(super::engine_log(0, 1), "engine.log");
        for index in 0..3 {
            let name = super::engine_log(index, 3);
            assert_eq!(name, format!("engine-{index}.log"));
            assert!(super::is_engine_log(&name), "{name}");
        }
        assert!(super::is_engine_log(&super::engine_log(0, 1)));
        for other in ["engine-.log", "engine-x.log", "engine.txt", "results.jsonl"] {
            assert!(!super::is_engine_log(other), "{other}");
        }
    }
}
