//! The cell loop of a run: each cell of the plan in order — measured, or recorded as skipped —
//! its requests and record appended as it ends, a stop request answered between and within
//! cells, and a launched engine that died failing the cell it died in.

use super::engine::EngineSide;
use super::{Event, Interrupt, RunError, Summary, cell, dir, measure};
use crate::plan::{Cell, Plan};
use crate::results::{Record, Status, record::utc_now};
use crate::rundir::{Manifest, RunDir};
use crate::spec::Loaded;
use crate::spec::telemetry::KvOverflow;
use std::sync::Arc;

/// What the cell loop needs.
pub(super) struct Cells<'a> {
    pub(super) loaded: &'a Loaded,
    pub(super) dir: &'a RunDir,
    pub(super) manifest: &'a Manifest,
    pub(super) cx: Arc<cell::Ctx>,
    pub(super) interrupt: &'a Interrupt,
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
        let total = plan.runnable().count();
        let mut index = 0;
        for c in &plan.cells {
            let rec = Record::new(c, utc_now(), &plan.workload.labels);
            if !c.runs() {
                let rec = Record {
                    status: Status::Skipped,
                    reasons: c.skip.iter().cloned().collect(),
                    ..rec
                };
                self.finish(rec, engine)?;
                summary.count(Status::Skipped);
                continue;
            }
            index += 1;
            let mut rec = rec;
            if plan.workload.kv_overflow == KvOverflow::Warn {
                rec.warnings
                    .extend(crate::plan::kv_overflow(c, &plan.workload));
            }
            if let crate::plan::Measure::Capacity(search) = c.measure {
                self.search(c, search, engine, summary, (index, total))
                    .await?;
                continue;
            }
            (self.on)(Event::Cell {
                index,
                total,
                id: c.id.clone(),
            });
            let rec = self.measure_or_stop(c, rec, summary).await?;
            self.after(c, rec, engine, summary, (index, total)).await?;
        }
        Ok(())
    }

    /// Measure `c`, unless a stop is asked for first: then the cell in flight is dropped (its
    /// requests cancelled), the cells already on disk stay, and the engine is stopped by the
    /// caller.
    pub(super) async fn measure_or_stop(
        &self,
        c: &Cell,
        rec: Record,
        summary: &Summary,
    ) -> Result<Record, RunError> {
        tokio::select! {
            rec = measure(&self.cx, c, rec, self.on) => Ok(rec),
            () = self.interrupt.requested() => {
                dir::write_end(self.dir, self.manifest)?;
                Err(RunError::Interrupted {
                    cell: c.id.clone(),
                    out: self.dir.path().to_path_buf(),
                    kept: summary.recorded(),
                    resume: self.resume_command(),
                })
            }
        }
    }

    /// Record a measured cell and return its record as written; an engine that stopped
    /// answering fails it and ends the run, one that died is relaunched or ends the run.
    pub(super) async fn after(
        &self,
        c: &Cell,
        mut rec: Record,
        engine: &mut EngineSide,
        summary: &mut Summary,
        (index, total): (usize, usize),
    ) -> Result<Record, RunError> {
        let gone = engine.gone(&rec).await;
        if let Some(why) = &gone {
            rec.status = Status::Failed;
            rec.reasons.push(why.clone());
        }
        let rec = self.finish(rec, engine)?;
        summary.count(rec.status);
        (self.on)(Event::Done {
            index,
            total,
            record: Box::new(rec.clone()),
        });
        if let Some(why) = gone {
            return Err(RunError::EngineLost {
                why,
                cell: c.id.clone(),
                out: self.dir.path().to_path_buf(),
                resume: format!(
                    "once it answers again, go on with `{}`",
                    self.resume_command()
                ),
            });
        }
        engine.after_cell(&c.id, self.on).await?;
        Ok(rec)
    }

    fn resume_command(&self) -> String {
        format!(
            "benchspec run {} --out {} --resume",
            self.loaded.path,
            self.dir.path().display()
        )
    }

    /// Write a cell's requests and record; a launched engine that died during the cell fails
    /// it, whatever was measured.
    fn finish(&self, mut rec: Record, engine: &mut EngineSide) -> Result<Record, RunError> {
        if let Some(lines) = &self.cx.requests {
            let lines: Vec<serde_json::Value> = lines
                .lock()
                .map(|mut l| std::mem::take(&mut *l))
                .unwrap_or_default();
            self.dir.append_requests(&lines)?;
        }
        if let Some(status) = engine.exit_status() {
            rec.status = Status::Failed;
            rec.reasons
                .push(format!("the engine exited ({status}) during the cell"));
        }
        self.dir.append(&rec)?;
        Ok(rec)
    }
}
