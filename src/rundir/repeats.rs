//! `repeats.jsonl`: each repeat of a repeated cell, written whole as it ends, numbered
//! (`repeat`, 1..N) and stamped with the run attempt it came from (`attempt`: 1 for the run,
//! 2 for its first `--resume`, …). A cell's combined record in `results.jsonl` is made from
//! exactly N unsuperseded lines, so its `per_repeat` values can be traced line by line.
//!
//! `--resume` keeps the repeats of an unfinished cell that were written whole and measures
//! only the missing ones (`resume_repeats: keep`, the default), or measures them all again
//! (`fresh`). A line that will not count — fresh mode, a repeat index beyond the cell's N, a
//! second line for the same repeat, an unnumbered line of an older run — stays in the file,
//! marked `"superseded": true`: nothing measured is lost, nothing is silently counted.

use super::{REPEATS, Result, RunDir, jsonl};
use crate::results::Record;
use crate::spec::ResumeRepeats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One line of `repeats.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(title = "benchspec repeats.jsonl line v1")]
pub struct RepeatLine {
    /// Which repeat of the cell, from 1 (absent in runs made before lines were numbered).
    #[serde(default)]
    pub repeat: Option<u32>,
    /// The run attempt it was measured in: 1, then one more for each `--resume`.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// A line that counts for no record (see the module's doc).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// The repeat's record.
    #[serde(flatten)]
    pub record: Record,
}

/// The JSON Schema of a `repeats.jsonl` line, as committed in
/// `schemas/repeat-line-v1.schema.json`.
pub fn repeat_line_schema_text() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<RepeatLine>().to_value();
    if let serde_json::Value::Object(map) = &mut schema {
        map.insert(
            "description".into(),
            "One line of repeats.jsonl: one repeat of a repeated cell, numbered, with the run attempt it was measured in; a cell's record in results.jsonl combines exactly its N unsuperseded lines.".into(),
        );
    }
    format!("{schema:#}\n")
}

impl RunDir {
    /// Append repeat `repeat` of `record`'s cell, measured in run attempt `attempt`.
    pub fn append_repeat(&self, record: &Record, repeat: u32, attempt: u32) -> Result<()> {
        let line = RepeatLine {
            repeat: Some(repeat),
            attempt: Some(attempt),
            superseded: false,
            record: record.clone(),
        };
        jsonl::append(&self.file(REPEATS), std::slice::from_ref(&line))
    }

    /// Every line of `repeats.jsonl` (a torn last line, of a killed run, left out).
    pub fn repeat_lines(&self) -> Result<Vec<RepeatLine>> {
        jsonl::read_lines(&self.file(REPEATS))
    }

    /// The repeats kept for `cell`, by repeat index: its unsuperseded numbered lines.
    pub fn kept_repeats(&self, cell: &str) -> Result<BTreeMap<u32, Record>> {
        let lines = self.repeat_lines()?;
        Ok(lines
            .into_iter()
            .filter(|l| !l.superseded && l.record.cell == cell)
            .filter_map(|l| Some((l.repeat?, l.record)))
            .collect())
    }

    /// At `--resume`: mark the lines of the cells about to run (`todo`: cell → its N) that
    /// will not count as superseded (a torn last line is cut off first). Returns how many
    /// repeats are kept and how many lines were superseded.
    pub fn sort_out_repeats(
        &self,
        todo: &HashMap<String, u32>,
        mode: ResumeRepeats,
    ) -> Result<(usize, usize)> {
        let path = self.file(REPEATS);
        if !path.is_file() {
            return Ok((0, 0));
        }
        jsonl::repair(&path)?;
        let mut lines = self.repeat_lines()?;
        let (kept, superseded) = sort_out(&mut lines, todo, mode);
        if superseded > 0 {
            jsonl::rewrite(&path, &lines)?;
        }
        Ok((kept, superseded))
    }
}

/// Mark as superseded the lines of `todo`'s cells that will not count; the kept and the
/// newly superseded counts. For a repeat written twice the later line counts.
pub fn sort_out(
    lines: &mut [RepeatLine],
    todo: &HashMap<String, u32>,
    mode: ResumeRepeats,
) -> (usize, usize) {
    let mut last: HashMap<(&str, u32), usize> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        if let (false, Some(r)) = (l.superseded, l.repeat) {
            last.insert((l.record.cell.as_str(), r), i);
        }
    }
    let keep: Vec<bool> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let Some(&n) = todo.get(&l.record.cell) else {
                return true; // not run now: left as it is
            };
            match l.repeat {
                _ if l.superseded => true,
                Some(r) => {
                    mode == ResumeRepeats::Keep
                        && (1..=n).contains(&r)
                        && last.get(&(l.record.cell.as_str(), r)) == Some(&i)
                }
                None => false,
            }
        })
        .collect();
    let (mut kept, mut superseded) = (0, 0);
    for (l, keep) in lines.iter_mut().zip(keep) {
        let counted = todo.contains_key(&l.record.cell) && !l.superseded;
        if !keep {
            l.superseded = true;
            superseded += 1;
        } else if counted {
            kept += 1;
        }
    }
    (kept, superseded)
}

#[cfg(test)]
mod tests;
