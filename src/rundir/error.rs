//! Why a run directory could not be created, read, resumed or merged, with the exit code of
//! each (docs/cli.md, exit codes).

use std::path::PathBuf;

/// What is wrong with a run directory.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The directory has no manifest.
    #[error(
        "`{}` is not a run directory (it has no manifest.json); give the `--out` of a `benchspec run`",
        .0.display()
    )]
    NotARun(PathBuf),
    /// A new run directory exists and holds files.
    #[error(
        "`{}` exists and is not empty; choose another `--out`, or add `--resume` to go on with the run there",
        .0.display()
    )]
    NotEmpty(PathBuf),
    /// A file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write the run directory `{}`: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not what benchspec writes there.
    #[error("`{}`{}: {message}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The line, for a JSON-lines file.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// `--resume` with a spec other than the run's.
    #[error(
        "`{}` was run from a different spec (sha256 {was}, this one is {now}); resume with the spec the run began with, or choose another `--out`",
        dir.display()
    )]
    SpecChanged {
        /// The run directory.
        dir: PathBuf,
        /// The run's spec sha256.
        was: String,
        /// This spec's sha256.
        now: String,
    },
    /// Run directories of different specs given to merge.
    #[error(
        "`{}` and `{}` were run from different specs (sha256 {sha_a} and {sha_b}); merge only the shards of one spec",
        a.display(), b.display()
    )]
    Mixed {
        /// One directory.
        a: PathBuf,
        /// Its spec's sha256.
        sha_a: String,
        /// The other.
        b: PathBuf,
        /// Its spec's sha256.
        sha_b: String,
    },
    /// A cell recorded in two directories given to merge.
    #[error("`{cell}` is recorded in both `{}` and `{}`; merge each shard once", a.display(), b.display())]
    Overlap {
        /// The cell.
        cell: String,
        /// One directory.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
    /// Merge's `--out` exists and holds files.
    #[error(
        "`{}` exists and is not empty; give `merge` a new or empty `--out`",
        .0.display()
    )]
    MergeOutNotEmpty(PathBuf),
    /// Merge was given nothing.
    #[error("merge needs at least one run directory")]
    NothingToMerge,
    /// Cells of the plan have no record in the directories given, or split load cells lack
    /// a shard's part.
    #[error("{}", incomplete(cells, partial))]
    Incomplete {
        /// The cells without a record.
        cells: Vec<String>,
        /// The split load cells some shard did not measure, each with the shards missing
        /// (`` `load/1K/r4` (shard 2 of 2) ``).
        partial: Vec<String>,
    },
    /// Directories given to merge that are not shards of one run.
    #[error(
        "`{}` and `{}` are not shards of one run: {why}; merge the shards of one `run --shard K/N` (all with `--split-load`, or none)",
        a.display(), b.display()
    )]
    ShardsDiffer {
        /// One directory.
        a: PathBuf,
        /// The other.
        b: PathBuf,
        /// How they differ.
        why: String,
    },
    /// `--resume` of a run directory with other `--shard`/`--split-load` than it was run with.
    #[error(
        "`{}` was run as {was}, not {now}: a shard resumed otherwise would measure other cells at other rates; go on with `benchspec run SPEC --out {}{flags} --resume`",
        dir.display(), dir.display()
    )]
    ShardChanged {
        /// The run directory.
        dir: PathBuf,
        /// How it was run (`--shard 2/2 --split-load`, or `the whole plan`).
        was: String,
        /// How it is resumed now, said the same way.
        now: String,
        /// The flags to repeat (` --shard 2/2 --split-load`, or nothing).
        flags: String,
    },
    /// The same shard given twice to merge.
    #[error("shard {shard} is given twice (`{}` and `{}`); merge each shard once", a.display(), b.display())]
    ShardTwice {
        /// The shard, `K/N`.
        shard: String,
        /// One directory.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
}

/// The message of [`RunDirError::Incomplete`].
fn incomplete(cells: &[String], partial: &[String]) -> String {
    let list = |items: &[String], quote: bool| {
        let mut s: Vec<String> = items
            .iter()
            .take(12)
            .map(|c| if quote { format!("`{c}`") } else { c.clone() })
            .collect();
        if items.len() > 12 {
            s.push("…".into());
        }
        s.join(", ")
    };
    let mut parts = Vec::new();
    if !cells.is_empty() {
        parts.push(format!(
            "{} cell(s) of the plan have no record: {}",
            cells.len(),
            list(cells, true)
        ));
    }
    if !partial.is_empty() {
        parts.push(format!(
            "{} load cell(s) split over the shards lack a shard's part: {} (merged, each would be part of its load, not the whole cell)",
            partial.len(),
            list(partial, false)
        ));
    }
    format!(
        "{}; give every shard's run directory, or merge with `--allow-missing` to keep what was measured (split cells marked invalid)",
        parts.join("; ")
    )
}
