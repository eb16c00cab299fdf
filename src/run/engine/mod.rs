//! The engine end of a run: the in-process simulator, a launched engine (relaunched after a
//! crash when the spec asks), or a server to attach to, and the client that talks to it.

pub mod launch;
pub mod manifest;

use super::{EngineError, Event, Interrupt, RunError};
use crate::client::{self, local::LocalTokenizer};
use crate::plan::{EngineConfig, LaunchConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The engine end of a run: the in-process simulator, a launched engine, or a server to
/// attach to, and the client that talks to it.
pub(in crate::run) struct EngineSide {
    pub(in crate::run) client: client::Client,
    sim: Option<crate::sim::Sim>,
    /// How to (re)launch the engine, when benchspec launches it.
    launch: Option<LaunchConfig>,
    served_name: String,
    launched: Option<launch::Engine>,
    out: PathBuf,
    interrupt: Interrupt,
}

impl EngineSide {
    /// The engine end of a run on `engine`, its client's pool sized for `pool` streams; the
    /// key and the launch command read the process environment now.
    pub(in crate::run) async fn up(
        engine: &EngineConfig,
        out: &std::path::Path,
        pool: usize,
        (interrupt, tokenizer, in_process): (&Interrupt, Option<&Arc<LocalTokenizer>>, bool),
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<EngineSide, RunError> {
        let env = |name: &str| std::env::var(name).ok();
        if in_process {
            return Self::in_process(engine, out, pool, (interrupt, tokenizer));
        }
        let sim = match engine.sim()? {
            // On threads of its own: the client's CPU time is then the client's.
            Some(opts) => Some(crate::sim::start_threaded(opts).map_err(EngineError::SimStart)?),
            None => None,
        };
        let base_url = sim
            .as_ref()
            .map_or_else(|| engine.base_url.clone(), crate::sim::Sim::base_url);
        let key = engine.api_key(&env)?;
        let client = client::Client::new(engine.client_settings(base_url, key, pool + 2))
            .map_err(EngineError::Api)?
            .with_tokenizer(tokenizer.cloned());
        if engine.launch_ignored {
            on(Event::Note(format!(
                "--base-url: attaching to the server at {}; `engine.launch` is not used",
                engine.base_url
            )));
        }
        let mut side = EngineSide {
            client,
            sim,
            launch: engine.launch(&env)?,
            served_name: engine.served_name.clone(),
            launched: None,
            out: out.to_path_buf(),
            interrupt: interrupt.clone(),
        };
        side.launch(on).await?;
        Ok(side)
    }

    /// The simulator `engine` describes answering in this process on tokio's clock.
    fn in_process(
        engine: &EngineConfig,
        out: &std::path::Path,
        pool: usize,
        (interrupt, tokenizer): (&Interrupt, Option<&Arc<LocalTokenizer>>),
    ) -> Result<EngineSide, RunError> {
        let Some(opts) = engine.sim()? else {
            let name = engine.variant.as_deref().unwrap_or(engine.kind);
            return Err(EngineError::NotInProcess {
                engine: format!("`{name}`"),
            }
            .into());
        };
        let server = Arc::new(SimServer(crate::sim::InProcess::start(opts)));
        let settings = engine.client_settings("http://in-process".into(), None, pool + 2);
        let client = client::Client::new(settings)
            .map_err(EngineError::Api)?
            .with_tokenizer(tokenizer.cloned())
            .in_process(server);
        Ok(EngineSide {
            client,
            sim: None,
            launch: None,
            served_name: engine.served_name.clone(),
            launched: None,
            out: out.to_path_buf(),
            interrupt: interrupt.clone(),
        })
    }

    async fn launch(&mut self, on: &(dyn Fn(Event) + Sync)) -> Result<(), RunError> {
        let Some(l) = &self.launch else {
            return Ok(());
        };
        // Another server on the engine's port would answer in its place, and be measured.
        launch::port_free(&self.client.base).await?;
        on(Event::Note(format!(
            "launching the engine (output in {})",
            self.out.join(crate::rundir::ENGINE_LOG).display()
        )));
        let mut engine = launch::Engine::start(l, &self.out)?;
        self.interrupt.set_engine_group(engine.group().unwrap_or(0));
        let ready = engine.wait_ready(&self.client, &self.served_name, l.ready_timeout);
        // A stop asked for while the engine starts (its start can take minutes) stops it.
        let stopped = tokio::select! {
            r = ready => {
                r?;
                false
            }
            () = self.interrupt.requested() => true,
        };
        if stopped {
            engine.stop().await;
            self.interrupt.set_engine_group(0);
            return Err(RunError::InterruptedEarly {
                during: "the engine was starting".into(),
            });
        }
        on(Event::Note("the engine is ready".into()));
        self.launched = Some(engine);
        Ok(())
    }

    /// A launched engine that died during a cell is relaunched (`restart_on_crash`) or ends the run.
    pub(in crate::run) async fn after_cell(
        &mut self,
        cell: &str,
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<(), RunError> {
        let Some(status) = self.launched.as_mut().and_then(launch::Engine::exited) else {
            return Ok(());
        };
        let tail = match self.launched.as_mut() {
            Some(e) => e.tail().await,
            None => launch::log_tail(&self.out.join(crate::rundir::ENGINE_LOG), 20),
        };
        if let Some(e) = self.launched.take() {
            e.stop().await;
            self.interrupt.set_engine_group(0);
        }
        let restart = self.launch.as_ref().is_some_and(|l| l.restart_on_crash);
        if !restart {
            return Err(EngineError::Exited {
                status,
                cell: cell.to_string(),
                tail,
            }
            .into());
        }
        on(Event::Note(format!(
            "the engine exited ({status}) during {cell}; relaunching (`restart_on_crash`)"
        )));
        self.launch(on).await
    }

    /// An engine benchspec did not launch that refused connections during a cell (or whose
    /// cell failed) and still does not answer: the reason to fail the cell with, and to end the run on.
    pub(in crate::run) async fn gone(&self, rec: &crate::results::Record) -> Option<String> {
        let refused = [client::Failure::Refused, client::Failure::Connect]
            .iter()
            .any(|f| rec.error_kinds.contains_key(&f.kind()));
        let failed = rec.status == crate::results::Status::Failed;
        if self.launched.is_some() || !(refused || failed) {
            return None;
        }
        for _ in 0..3 {
            if self.client.answers_afresh("/v1/models").await {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Some(format!(
            "the engine at {} stopped answering during the cell",
            self.client.base
        ))
    }

    /// The exit status of a launched engine that is no longer running.
    pub(in crate::run) fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.launched.as_mut().and_then(launch::Engine::exited)
    }

    pub(in crate::run) async fn down(self) {
        if let Some(e) = self.launched {
            e.stop().await;
            self.interrupt.set_engine_group(0);
        }
        if let Some(sim) = self.sim {
            let _ = tokio::time::timeout(Duration::from_secs(5), sim.stop()).await;
        }
    }
}

/// The simulator in this process, as the client's server.
#[derive(Debug)]
struct SimServer(crate::sim::InProcess);

impl client::exchange::Exchange for SimServer {
    fn exchange(&self, req: axum::http::Request<axum::body::Body>) -> client::exchange::Responding {
        let sim = self.0.clone();
        Box::pin(async move { sim.call(req).await })
    }
}
