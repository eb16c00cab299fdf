//! The cell loop of a run: each cell of the plan in order — measured, or recorded as skipped —
//! its requests and record appended as it ends, a stop request answered between and within
//! cells, and a launched engine that died failing the cell it died in.

use super::cell;
use super::engine::EngineSide;
use super::engine::manifest;
use super::error::RunError;
use super::event::Event;
use super::interrupt::Interrupt;
use super::measure::measure;
use super::options::RunSummary;
use crate::plan::RunConfig;
use crate::plan::vocab::KvOverflow;
use crate::plan::{Cell, Plan};
use crate::results::{Record, Status, record::utc_now};
use crate::rundir::{Manifest, RunDir};
use std::sync::Arc;

/// What the cell loop needs.
pub(super) struct Cells<'a> {
    pub(super) config: &'a RunConfig,
    pub(super) dir: &'a RunDir,
    pub(super) manifest: &'a Manifest,
    pub(super) cx: Arc<cell::Ctx>,
    pub(super) interrupt: &'a Interrupt,
    pub(super) on: &'a (dyn Fn(Event) + Sync),
    /// Cells of the run counted before this plan's (earlier variants'), and the run's total
    /// when it is more than this plan's: the progress numbering goes on across variants.
    pub(super) numbering: (usize, Option<usize>),
    /// The shard flags a `--resume` must repeat (` --shard 2/3 --split-load`), or nothing.
    pub(super) shard_flags: String,
}

impl Cells<'_> {
    /// Measure the cells of `plan` in order, appending each record as it ends; the cells of a
    /// context measured several times (`repeats`) go round by round, interleaved.
    pub(super) async fn all(
        &self,
        plan: &Plan,
        engine: &mut EngineSide,
        summary: &mut RunSummary,
    ) -> Result<(), RunError> {
        let total = self.numbering.1.unwrap_or_else(|| plan.runnable().count());
        let mut index = self.numbering.0;
        let mut saturated = Saturated::default();
        let mut i = 0;
        while i < plan.cells.len() {
            let c = &plan.cells[i];
            i += 1;
            let past = saturated.past(plan, c);
            if !c.runs() || past.is_some() {
                index += usize::from(c.runs());
                self.skip(plan, c, past, engine, summary, (index, total))?;
                continue;
            }
            if c.repeats > 1 {
                let group: Vec<&Cell> = std::iter::once(c)
                    .chain(plan.cells[i..].iter().take_while(|o| {
                        o.runs()
                            && o.context == c.context
                            && o.phase() == c.phase()
                            && o.repeats == c.repeats
                    }))
                    .collect();
                i += group.len() - 1;
                self.rounds(plan, &group, engine, summary, (&mut index, total))
                    .await?;
                continue;
            }
            index += 1;
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
            let rec = self.fresh(plan, c);
            let rec = self.measure_or_stop(c, rec, summary).await?;
            let rec = self.after(c, rec, engine, summary, (index, total)).await?;
            saturated.note(c, &rec);
        }
        Ok(())
    }

    /// The record of a cell the plan skips, or of a load rate `past` a saturated one (which
    /// the progress counts, as `index` of `total`).
    fn skip(
        &self,
        plan: &Plan,
        c: &Cell,
        past: Option<String>,
        engine: &mut EngineSide,
        summary: &mut RunSummary,
        (index, total): (usize, usize),
    ) -> Result<(), RunError> {
        let rec = Record {
            status: Status::Skipped,
            reasons: c.skip.iter().cloned().chain(past).collect(),
            ..Record::new(c, utc_now(), &plan.workload.labels)
        };
        let record = Box::new(self.finish(rec, engine)?);
        summary.count(Status::Skipped);
        if c.runs() {
            (self.on)(Event::Done {
                index,
                total,
                record,
            });
        }
        Ok(())
    }

    /// A new record of `c`, with the KV warning when the spec asks for one.
    fn fresh(&self, plan: &Plan, c: &Cell) -> Record {
        let mut rec = Record::new(c, utc_now(), &plan.workload.labels);
        if plan.workload.kv_overflow == KvOverflow::Warn {
            rec.warnings
                .extend(crate::plan::kv_overflow(c, &plan.workload));
        }
        rec
    }

    /// The cells of `group` (one context, one phase) measured `repeats` times, round by
    /// round so that slow drift does not look like a difference between them; each repeat's
    /// record goes to `repeats.jsonl` as it ends, each cell's combined record to
    /// `results.jsonl` after the last round.
    async fn rounds(
        &self,
        plan: &Plan,
        group: &[&Cell],
        engine: &mut EngineSide,
        summary: &mut RunSummary,
        (index, total): (&mut usize, usize),
    ) -> Result<(), RunError> {
        let n = group[0].repeats;
        // Repeats an earlier attempt wrote whole (`--resume`) are kept, not measured again.
        let mut kept = group
            .iter()
            .map(|c| self.dir.kept_repeats(&c.id))
            .collect::<Result<Vec<_>, _>>()?;
        let mut reps: Vec<Vec<Record>> = vec![Vec::new(); group.len()];
        for round in 1..=n {
            for (k, c) in group.iter().enumerate() {
                if let Some(rec) = kept[k].remove(&round) {
                    reps[k].push(rec);
                    continue;
                }
                (self.on)(Event::Cell {
                    index: *index + k + 1,
                    total,
                    id: format!("{} (repeat {round}/{n})", c.id),
                });
                let rec = self
                    .measure_or_stop(c, self.fresh(plan, c), summary)
                    .await?;
                self.write_requests(round)?;
                self.dir.append_repeat(&rec, round, self.attempt())?;
                reps[k].push(rec);
            }
        }
        for (c, reps) in group.iter().zip(reps) {
            *index += 1;
            if let Some(rec) = crate::results::repeats::combine(reps) {
                self.after(c, rec, engine, summary, (*index, total)).await?;
            }
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
        summary: &RunSummary,
    ) -> Result<Record, RunError> {
        tokio::select! {
            rec = measure(&self.cx, c, rec, self.on) => Ok(rec),
            () = self.interrupt.requested() => {
                manifest::write_end(self.dir, self.manifest)?;
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
        summary: &mut RunSummary,
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
            "benchspec run {} --out {}{} --resume",
            self.config.spec_path,
            self.dir.path().display(),
            self.shard_flags
        )
    }

    /// This run's attempt: 1, then one more for each `--resume`.
    fn attempt(&self) -> u32 {
        u32::try_from(self.manifest.resumed_at.len()).map_or(u32::MAX, |n| n.saturating_add(1))
    }

    /// Append the requests measured since the last call (`--save-requests`) to
    /// `requests.jsonl`, each line naming its cell (already), `repeat` and `attempt`.
    fn write_requests(&self, repeat: u32) -> Result<(), RunError> {
        let Some(lines) = &self.cx.requests else {
            return Ok(());
        };
        let mut lines: Vec<crate::rundir::RequestLine> = lines.lock().map_or_else(
            |p| std::mem::take(&mut *p.into_inner()),
            |mut l| std::mem::take(&mut *l),
        );
        for l in &mut lines {
            l.repeat = repeat;
            l.attempt = self.attempt();
        }
        Ok(self.dir.append_requests(&lines)?)
    }

    /// Write a cell's requests and record; a launched engine that died during the cell fails
    /// it, whatever was measured.
    fn finish(&self, mut rec: Record, engine: &mut EngineSide) -> Result<Record, RunError> {
        // A repeated cell's requests went out with each repeat; a cell measured once is its
        // repeat 1.
        self.write_requests(1)?;
        if let Some(status) = engine.exit_status() {
            rec.status = Status::Failed;
            rec.reasons
                .push(format!("the engine exited ({status}) during the cell"));
        }
        if let Some(w) = crate::results::bursts::burst_warning(&rec) {
            rec.warnings.push(w);
        }
        if let Some(cost) = self.cx.workload.cost_per_hour {
            rec.usd_per_mtok = rec
                .total_tok_s
                .and_then(|t| crate::results::stats::usd_per_mtok(cost, t));
        }
        self.dir.append(&rec)?;
        Ok(rec)
    }
}

/// The load rates that saturated the server, by context: a sweep skips the rates above
/// (`phases.load.stop_when_saturated`).
#[derive(Default)]
struct Saturated(Vec<(u64, f64, String)>);

impl Saturated {
    /// `rec` of `c`, when it is a load cell whose rate saturated the server.
    fn note(&mut self, c: &Cell, rec: &Record) {
        if let (crate::plan::Measure::Load(l), Some(_)) = (&c.measure, &rec.open.saturated) {
            let label = c.id.rsplit('/').next().unwrap_or_default().to_string();
            self.0.push((c.context, l.rate.0, label));
        }
    }

    /// Why `c` is skipped: a load cell of a context whose lower rate saturated the server.
    fn past(&self, plan: &Plan, c: &Cell) -> Option<String> {
        let crate::plan::Measure::Load(l) = &c.measure else {
            return None;
        };
        if !plan.workload.stop_when_saturated || !c.runs() {
            return None;
        }
        self.0
            .iter()
            .find(|(ctx, rate, _)| *ctx == c.context && *rate < l.rate.0)
            .map(|(_, _, label)| format!("saturated at {label}"))
    }
}
