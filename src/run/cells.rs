//! The cell loop of a run: each cell of the plan in order — measured, or recorded as skipped —
//! its requests and record appended as it ends, Ctrl-C answered between and within cells, and
//! a launched engine that died failing the cell it died in.

use super::engine::EngineSide;
use super::{Event, RunError, Summary, cell, dir, interrupt, measure};
use crate::plan::Plan;
use crate::results::{self, Record, Status};
use crate::spec::Loaded;
use std::sync::Arc;

/// What the cell loop needs.
pub(super) struct Cells<'a> {
    pub(super) loaded: &'a Loaded,
    pub(super) spec: &'a crate::spec::Spec,
    pub(super) out: &'a std::path::Path,
    pub(super) server: &'a dir::ServerInfo,
    pub(super) cx: Arc<cell::Ctx>,
    pub(super) on: &'a (dyn Fn(Event) + Sync),
}

impl Cells<'_> {
    /// Measure the cells of `plan` in order, appending each record as it ends.
    pub(super) async fn all(
        &self,
        plan: &Plan,
        engine: &mut EngineSide,
        summary: &mut Summary,
    ) -> Result<(), RunError> {
        let (on, out) = (self.on, self.out);
        let total = plan.runnable().count();
        let mut index = 0;
        for c in &plan.cells {
            let rec = Record::new(c, results::record::utc_now(), &self.spec.labels);
            let rec = if c.runs() {
                index += 1;
                on(Event::Cell {
                    index,
                    total,
                    id: c.id.clone(),
                });
                tokio::select! {
                    rec = measure(&self.cx, c, rec, on) => rec,
                    () = interrupt::requested() => {
                        // The cell in flight is dropped (its requests cancelled); the cells
                        // already on disk stay; the engine is stopped by the caller.
                        dir::write_end(out, self.loaded, self.server)?;
                        return Err(RunError::Interrupted {
                            cell: c.id.clone(),
                            results: out.join("results.jsonl").display().to_string(),
                            kept: summary.recorded(),
                            resume: format!("benchspec run {} --out {} --resume", self.loaded.path, out.display()),
                        });
                    }
                }
            } else {
                Record {
                    status: Status::Skipped,
                    reasons: c.skip.iter().cloned().collect(),
                    ..rec
                }
            };
            let gone = match c.runs() {
                true => engine.gone(&rec).await,
                false => None,
            };
            let mut rec = rec;
            if let Some(why) = &gone {
                rec.status = Status::Failed;
                rec.reasons.push(why.clone());
            }
            let rec = self.finish(rec, engine)?;
            summary.count(rec.status);
            if let Some(why) = gone {
                on(Event::Done {
                    index,
                    total,
                    record: Box::new(rec),
                });
                return Err(RunError::Engine(format!(
                    "{why} ({}); the finished cells are kept in {}; once it answers again, go on with `benchspec run {} --out {} --resume`",
                    c.id,
                    out.join("results.jsonl").display(),
                    self.loaded.path,
                    out.display()
                )));
            }
            if c.runs() {
                on(Event::Done {
                    index,
                    total,
                    record: Box::new(rec),
                });
                engine.after_cell(&c.id, self.spec, on).await?;
            }
        }
        Ok(())
    }

    /// Write a cell's requests and record; a launched engine that died during the cell fails
    /// it, whatever was measured.
    fn finish(&self, mut rec: Record, engine: &mut EngineSide) -> Result<Record, RunError> {
        if let Some(lines) = &self.cx.requests {
            let lines: Vec<serde_json::Value> = lines
                .lock()
                .map(|mut l| std::mem::take(&mut *l))
                .unwrap_or_default();
            dir::append_lines(&self.out.join("requests.jsonl"), &lines)?;
        }
        if let Some(status) = engine.exit_status() {
            rec.status = Status::Failed;
            rec.reasons
                .push(format!("the engine exited ({status}) during the cell"));
        }
        let path = self.out.join("results.jsonl");
        results::append(&path, &rec).map_err(|source| RunError::Dir {
            path: path.display().to_string(),
            source,
        })?;
        Ok(rec)
    }
}
