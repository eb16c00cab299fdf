//! The engine end of a run: the in-process simulator, a launched engine (relaunched after a
//! crash when the spec asks), or a server to attach to, and the client that talks to it.

pub mod launch;
pub mod manifest;

/// Every adapter of `workload.adapters` is among the models `server` lists (`/v1/models`,
/// asked at readiness); else the run is refused, pointing at the adapter in the spec. Every
/// server a run starts or attaches to is checked here once it is ready: the spec's engine,
/// and each engine variant's (`variant`), before any of its cells.
pub(in crate::run) fn adapters_served(
    client: &client::Client,
    server: &manifest::ServerInfo,
    config: &crate::plan::RunConfig,
    variant: Option<&str>,
) -> Result<(), RunError> {
    let Some(missing) = client
        .adapters()
        .into_iter()
        .find(|a| !server.models.contains(a))
    else {
        return Ok(());
    };
    let pointer = format!(
        "/workload/adapters/{}",
        missing.replace('~', "~0").replace('/', "~1")
    );
    let there = server.models.iter().map(|m| format!("`{m}`"));
    Err(RunError::AdapterNotServed {
        at: crate::spec::locate(&config.spec_path, &config.spec_source, &pointer),
        which: variant.map_or(String::new(), |v| format!(" of variant `{v}`")),
        base: client.base.clone(),
        adapter: missing,
        there: there.collect::<Vec<_>>().join(", "),
    })
}

use super::error::{EngineError, RunError};
use super::event::Event;
use super::interrupt::Interrupt;
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
    /// How to (re)launch each replica of the engine, when benchspec launches it.
    launches: Vec<LaunchConfig>,
    served_name: String,
    /// Each replica's engine, while it runs.
    launched: Vec<Option<launch::LaunchedEngine>>,
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
            .with_tokenizer(tokenizer.cloned())
            .with_images(engine.images());
        if engine.launch_ignored {
            on(Event::Note(format!(
                "--base-url: attaching to the server at {}; `engine.launch` is not used",
                engine.base_url
            )));
        }
        let mut side = EngineSide {
            client,
            sim,
            launches: engine.launches(&env)?,
            served_name: engine.served_name.clone(),
            launched: Vec::new(),
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
            .with_images(engine.images())
            .in_process(server);
        Ok(EngineSide {
            client,
            sim: None,
            launches: Vec::new(),
            served_name: engine.served_name.clone(),
            launched: Vec::new(),
            out: out.to_path_buf(),
            interrupt: interrupt.clone(),
        })
    }

    /// Launch every replica, then wait until each is ready (together: each may take minutes).
    async fn launch(&mut self, on: &(dyn Fn(Event) + Sync)) -> Result<(), RunError> {
        let all: Vec<usize> = (0..self.launches.len()).collect();
        self.launched = all.iter().map(|_| None).collect();
        self.launch_some(&all, on).await
    }

    /// Launch the replicas `which` and wait until they are ready.
    async fn launch_some(
        &mut self,
        which: &[usize],
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<(), RunError> {
        if which.is_empty() {
            return Ok(());
        }
        for &i in which {
            // Another server on a replica's port would answer in its place, and be measured.
            launch::port_free(&self.client.endpoint(i).base).await?;
        }
        let logs: Vec<String> = which
            .iter()
            .map(|&i| {
                let log = launch::log_name(&self.launches[i]);
                self.out.join(log).display().to_string()
            })
            .collect();
        on(Event::Note(match self.launches.len() {
            1 => format!("launching the engine (output in {})", logs.join(", ")),
            n => format!(
                "launching {} of {n} replicas (output in {})",
                which.len(),
                logs.join(", ")
            ),
        }));
        for &i in which {
            let engine = launch::LaunchedEngine::start(&self.launches[i], &self.out)?;
            self.interrupt.add_engine_group(engine.group().unwrap_or(0));
            self.launched[i] = Some(engine);
        }
        // A stop asked for while the engine starts (its start can take minutes) stops it.
        let interrupt = self.interrupt.clone();
        let stopped = tokio::select! {
            r = self.all_ready(which) => {
                r?;
                false
            }
            () = interrupt.requested() => true,
        };
        if stopped {
            self.stop(which).await;
            return Err(RunError::InterruptedEarly {
                during: "the engine was starting".into(),
            });
        }
        on(Event::Note(match self.launches.len() {
            1 => "the engine is ready".into(),
            n => format!("{} of {n} replicas ready", which.len()),
        }));
        Ok(())
    }

    /// Wait until every replica of `which` is ready; the first that fails stops them all.
    async fn all_ready(&mut self, which: &[usize]) -> Result<(), RunError> {
        let served = self.served_name.clone();
        let clients: Vec<client::Client> = which.iter().map(|&i| self.client.endpoint(i)).collect();
        let waits = self
            .launched
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| which.contains(i))
            .filter_map(|(i, e)| Some((i, e.as_mut()?)))
            .zip(&clients)
            .map(|((i, e), c)| {
                let timeout = self.launches[i].ready_timeout;
                let served = served.clone();
                async move { e.wait_ready(c, &served, timeout).await }
            });
        // The first replica that exits or times out ends the wait: the others are not
        // waited for (a start can take minutes).
        let result = futures_util::future::try_join_all(waits).await;
        if let Err(e) = result {
            self.stop(which).await;
            return Err(e.into());
        }
        Ok(())
    }

    /// Stop the replicas `which`.
    async fn stop(&mut self, which: &[usize]) {
        let stops = which
            .iter()
            .filter_map(|&i| self.launched.get_mut(i).and_then(Option::take))
            .map(|e| {
                self.interrupt.remove_engine_group(e.group().unwrap_or(0));
                e.stop()
            })
            .collect::<Vec<_>>();
        futures_util::future::join_all(stops).await;
    }

    /// Replicas that died during a cell are relaunched alone (`restart_on_crash`), or end
    /// the run.
    pub(in crate::run) async fn after_cell(
        &mut self,
        cell: &str,
        on: &(dyn Fn(Event) + Sync),
    ) -> Result<(), RunError> {
        let dead: Vec<(usize, std::process::ExitStatus)> = self
            .launched
            .iter_mut()
            .enumerate()
            .filter_map(|(i, e)| Some((i, e.as_mut()?.exited()?)))
            .collect();
        let Some(&(first, status)) = dead.first() else {
            return Ok(());
        };
        let tail = match self.launched[first].as_mut() {
            Some(e) => e.tail().await,
            None => String::new(),
        };
        let which: Vec<usize> = dead.iter().map(|(i, _)| *i).collect();
        self.stop(&which).await;
        let several = self.launches.len() > 1;
        let name = |i: usize| match several {
            true => format!(" (replica {i})"),
            false => String::new(),
        };
        let restart = self.launches.iter().all(|l| l.restart_on_crash);
        if !restart {
            return Err(EngineError::Exited {
                which: name(first),
                log: launch::log_name(&self.launches[first]),
                status,
                cell: cell.to_string(),
                tail,
            }
            .into());
        }
        for (i, status) in &dead {
            let alone = if several { " it alone" } else { "" };
            on(Event::Note(format!(
                "the engine{} exited ({status}) during {cell}; relaunching{alone} (`restart_on_crash`)",
                name(*i)
            )));
        }
        self.launch_some(&which, on).await
    }

    /// An engine benchspec did not launch that refused connections during a cell (or whose
    /// cell failed) and still does not answer: the reason to fail the cell with, and to end the run on.
    pub(in crate::run) async fn gone(&self, rec: &crate::results::Record) -> Option<String> {
        let refused = [client::Failure::Refused, client::Failure::Connect]
            .iter()
            .any(|f| rec.error_kinds.contains_key(&f.kind()));
        let failed = rec.status == crate::results::Status::Failed;
        if !self.launches.is_empty() || !(refused || failed) {
            return None;
        }
        for (i, base) in self.client.endpoints().iter().enumerate() {
            let one = self.client.endpoint(i);
            let mut answers = false;
            for _ in 0..3 {
                answers = one.answers_afresh("/v1/models").await;
                if answers {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            if !answers {
                return Some(format!(
                    "the engine at {base} stopped answering during the cell"
                ));
            }
        }
        None
    }

    /// The exit status of a launched engine that is no longer running.
    pub(in crate::run) fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.launched
            .iter_mut()
            .find_map(|e| e.as_mut().and_then(launch::LaunchedEngine::exited))
    }

    pub(in crate::run) async fn down(mut self) {
        let all: Vec<usize> = (0..self.launched.len()).collect();
        self.stop(&all).await;
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

    /// A minute at most: a request a cell left behind that long is the next cell's.
    fn settle(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let sim = self.0.clone();
        Box::pin(async move {
            sim.settle(Duration::from_secs(60)).await;
        })
    }
}
