//! The peer's own files, kept in the imported run directory as `peer/<n>-<file name>`
//! (`n` the file's place on the `import` command line, from 1): the run stays checkable
//! against what the peer wrote, and `export` reads from them what a record does not hold
//! (the spread of the request lengths).

use super::{InteropError, PeerBenchmark, Tool};
use crate::rundir::Manifest;
use std::path::{Path, PathBuf};

/// The folder of the kept files inside a run directory.
pub const FOLDER: &str = "peer";

/// Where the `index`-th (from 0) file given as `file` is kept in `run_dir`.
fn kept_path(run_dir: &Path, index: usize, file: &str) -> PathBuf {
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| "file.json".into(), |n| n.to_string_lossy().into_owned());
    run_dir.join(FOLDER).join(format!("{}-{name}", index + 1))
}

/// Copy each of `files` into `run_dir`.
pub fn keep(run_dir: &Path, files: &[String]) -> Result<(), InteropError> {
    let folder = run_dir.join(FOLDER);
    std::fs::create_dir_all(&folder).map_err(|source| InteropError::Write {
        path: folder.clone(),
        source,
    })?;
    for (i, f) in files.iter().enumerate() {
        let to = kept_path(run_dir, i, f);
        std::fs::copy(f, &to).map_err(|source| InteropError::Write { path: to, source })?;
    }
    Ok(())
}

/// The benchmarks of an imported run's kept files, in cell order (`import/<tool>/<n>` is
/// the `n`-th); `None` for a run benchspec measured, or one imported before files were kept.
pub fn benchmarks(run_dir: &Path, m: &Manifest) -> Option<Vec<PeerBenchmark>> {
    let imported = m.imported_from.as_ref()?;
    let tool = Tool::named(&imported.tool)?;
    let mut all = Vec::new();
    for (i, f) in imported.files.iter().enumerate() {
        let run = super::read(tool, &kept_path(run_dir, i, f)).ok()?;
        all.extend(run.benchmarks);
    }
    Some(all)
}
