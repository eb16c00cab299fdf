//! Where the files a spec names are found: a local tokenizer (`workload.tokenizer`), the load
//! phase's dataset (`phases.load.dataset`) and report templates (`report.templates`).
//!
//! A spec is read from its own folder ([`Files::BesideSpec`], names relative to the spec), or
//! back from a run directory ([`Files::Kept`]) by `report`, `compare`, `merge` and `run
//! --resume`: a run keeps a copy of each file it used under a fixed name, so that the run
//! directory can be moved anywhere and its sources deleted. A spec-relative path is never
//! resolved again once a copy exists.

use std::path::{Path, PathBuf};

/// The files a spec can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRef {
    /// `workload.tokenizer`: a `tokenizer.json`, or a folder holding one.
    Tokenizer,
    /// `phases.load.dataset`.
    Dataset,
    /// `phases.replay.trace`.
    Trace,
    /// `engine.sim.twin`.
    Twin,
}

impl FileRef {
    /// The copy's name inside a run directory.
    pub fn kept_name(self) -> &'static str {
        match self {
            FileRef::Tokenizer => KEPT_TOKENIZER,
            FileRef::Dataset => KEPT_DATASET,
            FileRef::Trace => KEPT_TRACE,
            FileRef::Twin => KEPT_TWIN,
        }
    }
}

/// The run directory's copy of the simulated engine's twin.
pub const KEPT_TWIN: &str = "twin.toml";
/// The run directory's copy of the replayed trace.
pub const KEPT_TRACE: &str = "trace.jsonl";
/// The run directory's copy of the dataset.
pub const KEPT_DATASET: &str = "dataset.jsonl";
/// The run directory's folder holding the tokenizer's `tokenizer.json` (and its
/// `tokenizer_config.json`, when it has one).
pub const KEPT_TOKENIZER: &str = "tokenizer";
/// The run directory's folder holding copies of the spec's report templates.
pub const KEPT_TEMPLATES: &str = "templates";

/// How the meaning checks find a file the spec names.
pub type Resolve<'a> = dyn Fn(FileRef, &str) -> PathBuf + 'a;

/// Where the files named by a spec are looked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Files {
    /// Relative to the spec's own folder.
    #[default]
    BesideSpec,
    /// The copies kept in this run directory, where they exist (a run made before copies
    /// were kept falls back to the spec's folder).
    Kept(PathBuf),
}

impl Files {
    /// The path of `name` (as the spec writes it) for the spec at `spec_path`.
    pub fn resolve(&self, spec_path: &str, what: FileRef, name: &str) -> PathBuf {
        if let Files::Kept(dir) = self {
            let copy = dir.join(what.kept_name());
            if copy.exists() {
                return copy;
            }
        }
        beside(spec_path, name)
    }

    /// The path of the report template `name` (as the spec writes it).
    pub fn template(&self, spec_path: &str, name: &str) -> PathBuf {
        if let Files::Kept(dir) = self {
            let copy = Path::new(name)
                .file_name()
                .map(|f| dir.join(KEPT_TEMPLATES).join(f));
            if let Some(copy) = copy.filter(|c| c.is_file()) {
                return copy;
            }
        }
        beside(spec_path, name)
    }
}

/// The report templates of a spec: those `report.templates` lists, then a `report.md.j2`
/// or `report.html.j2` found where the spec's files are (beside the spec, or kept in the run
/// directory), which override the built-in ones.
pub fn templates(files: &Files, spec_path: &str, listed: &[String]) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = listed
        .iter()
        .map(|t| files.template(spec_path, t))
        .collect();
    for name in ["report.md.j2", "report.html.j2"] {
        let found = files.template(spec_path, name);
        let listed = all.iter().any(|t| t.file_name() == found.file_name());
        if found.is_file() && !listed {
            all.push(found);
        }
    }
    all
}

/// `name` relative to the folder of the spec at `spec_path`.
pub fn beside(spec_path: &str, name: &str) -> PathBuf {
    let base = Path::new(spec_path).parent().unwrap_or(Path::new(""));
    base.join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_copies_win_where_they_exist() {
        let dir = std::env::temp_dir().join(format!("benchspec-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(KEPT_TOKENIZER)).unwrap();
        let kept = Files::Kept(dir.clone());
        let spec = "/src/specs/a.yaml";
        let cases = [
            (Files::BesideSpec, FileRef::Tokenizer, "/src/specs/tok"),
            (Files::BesideSpec, FileRef::Dataset, "/src/specs/tok"),
            (kept.clone(), FileRef::Tokenizer, "KEPT/tokenizer"),
            // No copy of the dataset: the spec's folder, as before copies were kept.
            (kept, FileRef::Dataset, "/src/specs/tok"),
        ];
        for (files, what, want) in cases {
            let got = files.resolve(spec, what, "tok");
            let want = want.replace("KEPT", &dir.display().to_string());
            assert_eq!(got, PathBuf::from(want), "{files:?} {what:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
