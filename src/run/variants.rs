//! A run of engine variants (docs/spec.md): the plan of every variant is written first, then
//! each variant in turn is launched (or attached to), checked, measured over its cells and
//! stopped. A variant whose engine does not start, or is lost during a cell (and not
//! relaunched), fails its cells left with the reason, and the run goes on with the next;
//! `--only`, `--shard` and `--resume` work on the whole plan.

use super::engine::EngineSide;
use super::engine::manifest;
use super::error::EngineError;
use super::error::RunError;
use super::event::Event;
use super::options::RunSummary;
use super::session::Session;
use super::start::Start;
use crate::plan::{self, Cell, EngineConfig, Plan};
use crate::results::{Record, Status, record::utc_now};
use crate::rundir::{Manifest, Resumed, RunDir};
use std::collections::HashSet;

impl Session<'_> {
    /// Measure every variant's cells that the plan, `--only`, `--shard` and `--resume` leave.
    pub(super) async fn variants(
        &self,
        variants: &[EngineConfig],
        earlier: Option<Resumed>,
    ) -> Result<RunSummary, RunError> {
        let full = super::select::select(self.config.plan(), self.opts);
        let mut summary = RunSummary {
            out: self.dir.path().to_path_buf(),
            ..RunSummary::default()
        };
        let server = manifest::ServerInfo::unasked();
        let start = Start {
            gpu_warnings: Vec::new(),
            client_threads: self.probe.threads() as u32,
            config: self.config,
            engine: &self.config.engine(),
            dir: self.dir,
            server: &server,
            on: self.on,
        };
        let (mut manifest, todo) = start.begin(full, earlier, &mut summary)?;
        let total = todo.runnable().count();
        (self.on)(Event::Started {
            out: self.dir.path().to_path_buf(),
            base_url: self.config.base_url(),
            cells: total,
        });
        let mut before = 0;
        for (v, name) in variants
            .iter()
            .filter_map(|v| Some((v, v.variant.as_deref()?)))
        {
            let mine: Vec<Cell> = todo
                .cells
                .iter()
                .filter(|c| c.variant.as_deref() == Some(name))
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            let runs = mine.iter().filter(|c| c.runs()).count();
            let mut one = One {
                up: self,
                v,
                name,
                mine: Plan {
                    cells: mine,
                    ..todo.clone()
                },
                manifest: &mut manifest,
                numbering: (before, Some(total)),
            };
            one.run(&mut summary).await?;
            before += runs;
        }
        manifest::write_end(self.dir, &manifest)?;
        Ok(summary)
    }
}

/// One variant of the run and its cells still to measure.
struct One<'a, 'b> {
    up: &'a Session<'b>,
    v: &'a EngineConfig,
    name: &'a str,
    mine: Plan,
    manifest: &'a mut Manifest,
    numbering: (usize, Option<usize>),
}

impl One<'_, '_> {
    async fn run(&mut self, summary: &mut RunSummary) -> Result<(), RunError> {
        let (up, v) = (self.up, self.v);
        (up.on)(Event::Note(format!(
            "variant `{}`: {} cell(s)",
            self.name,
            self.mine.runnable().count()
        )));
        log_header(up.dir, self.name);
        let (mut engine, server) = match self.start().await {
            Ok(s) => s,
            // An adapter it does not serve is the spec's error, not an engine that failed:
            // the run ends (exit 2) before any of this variant's cells, earlier ones kept.
            Err(e @ RunError::AdapterNotServed { .. }) => return Err(e),
            Err(e) if up.interrupt.is_requested() => return Err(e),
            Err(e) => return self.failed(&e.to_string(), summary),
        };
        let mut facts = manifest::variant_facts(self.name, v, &server);
        facts.failed = None;
        self.remember(facts)?;
        if let Some(w) = v.version_warning(server.version.as_deref()) {
            (up.on)(Event::Note(format!("variant `{}`: {w}", self.name)));
        }
        let result = self.measure(&mut engine, &server, summary).await;
        engine.down().await;
        let lost = match &result {
            // The note keeps the engine's last log lines.
            Err(e @ RunError::Engine(EngineError::Exited { status, cell, .. })) => Some((
                format!("the engine exited ({status}) during {cell}"),
                e.to_string(),
            )),
            Err(RunError::EngineLost { why, cell, .. }) => {
                let why = format!("{why} ({cell})");
                Some((why.clone(), why))
            }
            _ => None,
        };
        match lost {
            Some((why, note)) if !up.interrupt.is_requested() => self.lost(&why, &note, summary),
            _ => result,
        }
    }

    /// The variant's engine up and ready, what it says of itself read, and every adapter of
    /// the mix among the models it lists; on an error, its engine down.
    async fn start(&self) -> Result<(EngineSide, manifest::ServerInfo), RunError> {
        let (up, v) = (self.up, self.v);
        let engine = EngineSide::up(
            v,
            up.dir.path(),
            self.mine.max_concurrency() as usize,
            (up.interrupt, up.tokenizer, up.in_process),
            up.on,
        )
        .await?;
        let checked = match manifest::ServerInfo::read(&engine.client, &v.served_name).await {
            Ok(server) => {
                let variant = Some(self.name);
                super::engine::adapters_served(&engine.client, &server, up.config, variant)
                    .map(|()| server)
            }
            Err(e) => Err(RunError::from(e)),
        };
        match checked {
            Ok(server) => Ok((engine, server)),
            Err(e) => {
                engine.down().await;
                Err(e)
            }
        }
    }

    /// Measure the variant's cells as its own engine's limits expand them.
    async fn measure(
        &self,
        engine: &mut EngineSide,
        server: &manifest::ServerInfo,
        summary: &mut RunSummary,
    ) -> Result<(), RunError> {
        let (up, v) = (self.up, self.v);
        let ids: HashSet<&str> = self.mine.cells.iter().map(|c| c.id.as_str()).collect();
        let expanded = v.plan(server.limits());
        let plan = Plan {
            cells: plan::variant_cells(expanded.clone(), self.name)
                .filter(|c| ids.contains(c.id.as_str()))
                .collect(),
            ..expanded
        };
        let (observer, warnings) =
            crate::telemetry::Observer::start(&v.watch, &engine.client, &|n| {
                (up.on)(Event::Note(n))
            })
            .await;
        for w in warnings {
            (up.on)(Event::Note(format!("variant `{}`: {w}", self.name)));
        }
        up.measure(
            engine,
            (&plan, self.manifest, self.numbering),
            observer,
            summary,
        )
        .await
    }

    /// The variant did not start: every cell of it is recorded failed with `why`.
    fn failed(&mut self, why: &str, summary: &mut RunSummary) -> Result<(), RunError> {
        let (up, v) = (self.up, self.v);
        let reason = format!("variant `{}` did not start: {why}", self.name);
        (up.on)(Event::Note(reason.clone()));
        let mut facts = manifest::variant_facts(self.name, v, &manifest::ServerInfo::default());
        facts.failed = Some(why.to_string());
        self.remember(facts)?;
        self.fail(self.mine.cells.iter(), &reason, summary)
    }

    /// The variant's engine was lost during a cell (that cell is recorded already) for
    /// `why`: the cells it had left are recorded failed, and the run goes on with the next
    /// variant.
    fn lost(&mut self, why: &str, note: &str, summary: &mut RunSummary) -> Result<(), RunError> {
        let up = self.up;
        (up.on)(Event::Note(format!("variant `{}`: {note}", self.name)));
        let reason = format!("variant `{}` was not measured further: {why}", self.name);
        let done: HashSet<String> = up.dir.records()?.into_iter().map(|r| r.cell).collect();
        if let Some(f) = self
            .manifest
            .variants
            .iter_mut()
            .find(|f| f.name == self.name)
        {
            f.failed = Some(why.to_string());
        }
        up.dir.write_manifest(self.manifest)?;
        let left = self.mine.cells.iter().filter(|c| !done.contains(&c.id));
        self.fail(left, &reason, summary)
    }

    /// Record `cells` failed with `reason` (those the plan skips, skipped with theirs).
    fn fail<'c>(
        &self,
        cells: impl Iterator<Item = &'c Cell>,
        reason: &str,
        summary: &mut RunSummary,
    ) -> Result<(), RunError> {
        let v = self.v;
        for c in cells {
            let rec = Record {
                status: if c.runs() {
                    Status::Failed
                } else {
                    Status::Skipped
                },
                reasons: vec![c.skip.clone().unwrap_or_else(|| reason.to_string())],
                ..Record::new(c, utc_now(), &v.labels)
            };
            self.up.dir.append(&rec)?;
            summary.count(rec.status);
        }
        Ok(())
    }

    /// Keep the variant's facts in the manifest (replacing an earlier session's).
    fn remember(&mut self, facts: crate::rundir::VariantFacts) -> Result<(), RunError> {
        let list = &mut self.manifest.variants;
        list.retain(|f| f.name != facts.name);
        list.push(facts);
        self.up.dir.write_manifest(self.manifest)?;
        Ok(())
    }
}

/// A line in `engine.log` saying which variant's output follows.
fn log_header(dir: &RunDir, name: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.file(crate::rundir::ENGINE_LOG))
    {
        let _ = writeln!(f, "==== benchspec: engine variant `{name}` ====");
    }
}
