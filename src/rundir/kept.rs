//! The copies a run keeps of the files its spec names — the local tokenizer and the report
//! templates here (the dataset and the trace are copied as their phase first reads them) — so that
//! `report`, `compare`, `merge` and `run --resume` work from the run directory alone,
//! wherever it was moved and whether or not the sources still exist.

use super::{Result, RunDir, RunDirError};
use crate::spec::files::{KEPT_DATASET, KEPT_TEMPLATES, KEPT_TOKENIZER, KEPT_TRACE, KEPT_TWIN};
use std::path::{Path, PathBuf};

impl RunDir {
    /// Keep copies of the local tokenizer (a `tokenizer.json` or a folder holding one) and
    /// the report templates (at a new run's start; files already kept, as on `--resume`,
    /// stay as they are).
    pub fn keep_files(&self, tokenizer: Option<&Path>, templates: &[PathBuf]) -> Result<()> {
        if let Some(path) = tokenizer {
            // As the local tokenizer reads them: `tokenizer.json` (the file named, or the one
            // in the folder named) and the `tokenizer_config.json` beside it.
            let file = if path.is_dir() {
                path.join("tokenizer.json")
            } else {
                path.to_path_buf()
            };
            let config = file.with_file_name("tokenizer_config.json");
            let kept = Path::new(KEPT_TOKENIZER);
            self.keep(&file, &kept.join("tokenizer.json"))?;
            self.keep(&config, &kept.join("tokenizer_config.json"))?;
        }
        for t in templates {
            if let Some(name) = t.file_name() {
                self.keep(t, &Path::new(KEPT_TEMPLATES).join(name))?;
            }
        }
        Ok(())
    }

    /// Copy every file this run directory keeps into `other` (a merge's output).
    pub fn copy_kept_to(&self, other: &RunDir) -> Result<()> {
        for file in [KEPT_DATASET, KEPT_TRACE, KEPT_TWIN] {
            other.keep(&self.file(file), Path::new(file))?;
        }
        for folder in [KEPT_TOKENIZER, KEPT_TEMPLATES] {
            let Ok(entries) = std::fs::read_dir(self.file(folder)) else {
                continue;
            };
            for entry in entries.flatten() {
                other.keep(&entry.path(), &Path::new(folder).join(entry.file_name()))?;
            }
        }
        Ok(())
    }

    /// Copy `from` (when it is a file) to `rel` inside the run directory, unless a copy is
    /// there already.
    fn keep(&self, from: &Path, rel: &Path) -> Result<()> {
        let to = self.path().join(rel);
        if !from.is_file() || to.exists() {
            return Ok(());
        }
        let write = |source| RunDirError::Write {
            path: to.clone(),
            source,
        };
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(write)?;
        }
        std::fs::copy(from, &to).map_err(write)?;
        Ok(())
    }
}
