//! The engine's lifecycle when the spec says how to launch it (`engine.launch`, resolved by
//! the plan: split like a shell, `${VAR}` replaced): the command in its own process group,
//! stdout and stderr into `engine.log`, readiness (`/health`, then `/v1/models` listing the
//! served model) within `ready_timeout`, and a stop that sends SIGTERM to the group, waits
//! `stop_timeout`, then SIGKILLs it. Dropping a [`LaunchedEngine`] kills its group, so no
//! process is left behind on any exit path.

use crate::client::Client;
use crate::plan::LaunchConfig;
use crate::plan::vocab::Span;
use crate::run::error::{EngineError, RunError};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// A launched engine.
pub struct LaunchedEngine {
    child: Child,
    pgid: Option<Pid>,
    log: PathBuf,
    stop_timeout: Duration,
    /// The tasks copying the engine's stdout and stderr into the log.
    copies: Vec<tokio::task::JoinHandle<()>>,
}

/// Refuse to launch an engine whose address (`base`, the server the run will measure)
/// another process already listens on: the launched engine would fail to bind, and the other
/// server would answer — and be measured — in its place.
pub async fn port_free(base: &str) -> Result<(), EngineError> {
    let Some((host, port)) = host_port(base) else {
        return Ok(());
    };
    let Ok(addrs) = tokio::net::lookup_host((host.as_str(), port)).await else {
        return Ok(());
    };
    for addr in addrs {
        let connect = tokio::net::TcpStream::connect(addr);
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), connect).await {
            return Err(EngineError::PortInUse {
                port,
                url: base.to_string(),
            });
        }
    }
    Ok(())
}

/// The host and port of `url` (`http://host:port/...`; the scheme's port when none is given).
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let authority = authority.rsplit('@').next()?;
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']')?;
            (host, rest.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = port.map_or(Some(default), |p| p.parse().ok())?;
    Some((host.to_string(), port))
}

/// The file the output of `launch`'s replica goes to in the run directory (`rundir` names
/// it: `engine.log`, or `engine-<i>.log` for each of several replicas).
pub fn log_name(launch: &LaunchConfig) -> String {
    crate::rundir::engine_log(launch.replica.index, launch.replica.of)
}

/// The last `n` lines of the engine's log, for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl LaunchedEngine {
    /// Start the engine (one replica), its output going to `out/engine.log` (a replica's to
    /// `engine-<i>.log`).
    pub fn start(launch: &LaunchConfig, out: &Path) -> Result<LaunchedEngine, RunError> {
        let program = &launch.program;
        let log = out.join(log_name(launch));
        let io = |source| {
            RunError::RunDir(crate::rundir::RunDirError::Write {
                path: log.clone(),
                source,
            })
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(io)?;
        let mut cmd = Command::new(program);
        cmd.args(&launch.args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        cmd.envs(launch.env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd.spawn().map_err(|source| EngineError::Spawn {
            program: program.clone(),
            source,
        })?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        // The engine's output reaches engine.log through benchspec, with every secret the
        // command refers to replaced (engines like vLLM print their arguments, key included).
        let secrets = launch.secrets.clone();
        let file = std::sync::Arc::new(std::sync::Mutex::new(file));
        let mut copies = Vec::new();
        if let Some(out) = child.stdout.take() {
            copies.push(tokio::spawn(copy_redacted(
                out,
                file.clone(),
                secrets.clone(),
            )));
        }
        if let Some(err) = child.stderr.take() {
            copies.push(tokio::spawn(copy_redacted(err, file, secrets)));
        }
        Ok(LaunchedEngine {
            child,
            pgid,
            log,
            stop_timeout: launch.stop_timeout,
            copies,
        })
    }

    /// Wait until the engine answers `/health` and lists `served` in `/v1/models`.
    pub async fn wait_ready(
        &mut self,
        client: &Client,
        served: &str,
        timeout: Duration,
    ) -> Result<(), EngineError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Err(EngineError::ExitedEarly {
                    status,
                    log: self.log.clone(),
                    tail: self.tail().await,
                });
            }
            if client.get_ok("/health").await {
                match client.get_json("/v1/models").await {
                    // Ready only while its process runs: an engine that exited after its
                    // check above is not the server that answered.
                    Ok(models) if lists(&models, served) && self.exited().is_none() => {
                        return Ok(());
                    }
                    _ => {}
                }
            }
            if Instant::now() >= deadline {
                return Err(EngineError::NotReady {
                    timeout: Span(timeout),
                    served: served.to_string(),
                    log: self.log.clone(),
                    tail: log_tail(&self.log, 20),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The last lines of the log of an engine that exited, once its output has reached the
    /// log: the copiers end at the pipes' end (a second, bounded, in case a child of the
    /// engine still holds them open).
    pub async fn tail(&mut self) -> String {
        let copies = std::mem::take(&mut self.copies);
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            futures_util::future::join_all(copies),
        )
        .await;
        log_tail(&self.log, 20)
    }

    /// The engine's process group, while it runs.
    pub fn group(&self) -> Option<i32> {
        self.pgid.map(Pid::as_raw)
    }

    /// Whether the engine process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM to the group, `stop_timeout`, then SIGKILL.
    pub async fn stop(mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGTERM);
            if tokio::time::timeout(self.stop_timeout, self.child.wait())
                .await
                .is_err()
            {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = self.child.wait().await;
            }
            // Children of the engine that outlived it go too.
            let _ = killpg(pgid, Signal::SIGKILL);
            self.pgid = None;
        }
    }
}

impl Drop for LaunchedEngine {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Copy an engine stream into the log line by line, secrets replaced by `<redacted>`.
async fn copy_redacted(
    stream: impl tokio::io::AsyncRead + Unpin,
    file: std::sync::Arc<std::sync::Mutex<std::fs::File>>,
    secrets: Vec<String>,
) {
    use std::io::Write;
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut text = String::from_utf8_lossy(&line).into_owned();
        for s in &secrets {
            text = text.replace(s.as_str(), "<redacted>");
        }
        if let Ok(mut f) = file.lock() {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

fn lists(models: &serde_json::Value, served: &str) -> bool {
    models
        .get("data")
        .and_then(|d| d.as_array())
        .is_some_and(|a| {
            a.iter()
                .any(|m| m.get("id").and_then(|i| i.as_str()) == Some(served))
        })
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn host_and_port_of_a_url() {
        let cases = [
            ("http://127.0.0.1:8091", Some(("127.0.0.1", 8091))),
            ("http://localhost:8000/v1", Some(("localhost", 8000))),
            ("http://[::1]:9000", Some(("::1", 9000))),
            ("http://[::1]", Some(("::1", 80))),
            ("http://example", Some(("example", 80))),
            ("https://user@host", Some(("host", 443))),
            ("no-scheme:80", None),
        ];
        for (url, want) in cases {
            let got = host_port(url);
            assert_eq!(got.as_ref().map(|(h, p)| (h.as_str(), *p)), want, "{url}");
        }
    }
}
