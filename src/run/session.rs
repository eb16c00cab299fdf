//! One run's session: what every stage of it shares (the resolved settings, the options, the run
//! directory, the client's CPU probe, the interrupt, the event sink, the local tokenizer),
//! and the run of a spec without engine variants — the engine up, its limits read, the plan
//! expanded for them and cut to `--only`/`--shard`/`--resume`, every cell measured, the
//! engine down. Variants go through [`Session::variants`].

use super::engine::{EngineSide, manifest};
use super::error::RunError;
use super::event::Event;
use super::interrupt::Interrupt;
use super::options::{RunOptions, RunSummary};
use super::select::select;
use super::start::{Start, dataset, keep_twin, shard_flags, trace};
use super::start_at::StartAt;
use super::{cell, cells};
use crate::client::local::LocalTokenizer;
use crate::plan::{Plan, RunConfig};
use crate::rundir::{Manifest, Resumed, RunDir};
use crate::telemetry::Observer;
use std::sync::Arc;

/// What every part of a run shares.
pub(super) struct Session<'a> {
    pub(super) config: &'a RunConfig,
    pub(super) opts: &'a RunOptions,
    pub(super) probe: crate::footprint::Probe,
    pub(super) interrupt: &'a Interrupt,
    pub(super) on: &'a (dyn Fn(Event) + Sync),
    pub(super) dir: &'a RunDir,
    /// The spec's local tokenizer, shared by every engine (variant) of the run.
    pub(super) tokenizer: Option<&'a Arc<LocalTokenizer>>,
    /// Every engine is the simulator answering in this process ([`super::run_in_process`]).
    pub(super) in_process: bool,
}

impl Session<'_> {
    /// Measure a spec without engine variants.
    pub(super) async fn single(&self, earlier: Option<Resumed>) -> Result<RunSummary, RunError> {
        let Session {
            config,
            opts,
            interrupt,
            on,
            dir,
            ..
        } = *self;
        let spec_engine = config.engine();
        // The plan before the server is asked sizes the connection pool; the cells that will
        // run after `--only`/`--shard` are what count.
        let pool = select(config.sizing_plan(), opts).max_concurrency();
        let mut engine = EngineSide::up(
            &spec_engine,
            dir.path(),
            pool as usize,
            (interrupt, self.tokenizer, self.in_process),
            on,
        )
        .await?;
        let server = manifest::ServerInfo::read(&engine.client, &spec_engine.served_name).await?;
        if let Err(e) = super::engine::adapters_served(&engine.client, &server, config, None) {
            engine.down().await;
            return Err(e);
        }
        let plan = spec_engine.plan(server.limits());
        let mut summary = RunSummary {
            out: dir.path().to_path_buf(),
            ..RunSummary::default()
        };
        let (observer, gpu_warnings) =
            Observer::start(&spec_engine.watch, &engine.client, &|n| on(Event::Note(n))).await;
        let start = Start {
            gpu_warnings,
            client_threads: self.probe.threads() as u32,
            config,
            engine: &spec_engine,
            dir,
            server: &server,
            on,
        };
        let (manifest, todo) = start.begin(select(plan, opts), earlier, &mut summary)?;
        on(Event::Started {
            out: dir.path().to_path_buf(),
            base_url: engine.client.base.clone(),
            cells: todo.runnable().count(),
        });
        let measured = (&todo, &manifest, (0, None));
        let result = self
            .measure(&mut engine, measured, observer, &mut summary)
            .await;
        if result.is_ok() {
            manifest::write_end(dir, &manifest)?;
        }
        engine.down().await;
        result.map(|()| summary)
    }

    /// Measure the cells of `plan` on `engine`, recorded under `manifest` (`numbering`: the
    /// progress count across variants), with the observer watching the engine.
    pub(super) async fn measure(
        &self,
        engine: &mut EngineSide,
        (plan, manifest, numbering): (&Plan, &Manifest, (usize, Option<usize>)),
        observer: Observer,
        summary: &mut RunSummary,
    ) -> Result<(), RunError> {
        keep_twin(self.config, self.dir)?;
        let first_arrival_at = self.start_at(plan, numbering.0 == 0).await?;
        let cells = cells::Cells {
            config: self.config,
            dir: self.dir,
            manifest,
            cx: Arc::new(cell::Ctx {
                dataset: dataset(self.config, self.dir)?,
                trace: trace(self.config, self.dir)?,
                out: Some(self.dir.path().to_path_buf()),
                observer,
                first_arrival_at: std::sync::Mutex::new(first_arrival_at),
                ..cell::Ctx::new(
                    engine.client.clone(),
                    &plan.workload,
                    self.opts.save_requests,
                    self.probe.clone(),
                )
            }),
            interrupt: self.interrupt,
            on: self.on,
            numbering,
            shard_flags: shard_flags(plan),
        };
        cells.all(plan, engine, summary).await
    }

    /// `--start-at` before the run's `first` cells: waited for here, or, when the first cell
    /// is a load cell, returned for that cell to send its first request at.
    async fn start_at(&self, plan: &Plan, first: bool) -> Result<Option<StartAt>, RunError> {
        let Some(at) = self.opts.start_at.as_ref().filter(|_| first) else {
            return Ok(None);
        };
        let first_cell = plan.runnable().next();
        if first_cell.is_some_and(|c| matches!(c.measure, crate::plan::Measure::Load(_))) {
            (self.on)(Event::Note(format!(
                "the first load cell sends its first request at --start-at {}",
                at.text
            )));
            return Ok(Some(at.clone()));
        }
        super::start_at::wait(Some(at), self.interrupt, self.on).await?;
        Ok(None)
    }
}
