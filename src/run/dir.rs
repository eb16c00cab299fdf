//! The run directory (contract §4): the spec byte for byte, `plan.json`, `manifest.json`
//! (tool, spec sha256, times, host, what the engine reports, the launch command with secrets
//! replaced by `<redacted>`), and `results.jsonl`, appended by the caller.

use super::RunError;
use super::client::Client;
use crate::plan::Plan;
use crate::results::record::utc_now;
use crate::spec::Loaded;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What the server says about itself.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// `/version`, when it answers.
    pub version: Option<String>,
    /// The model ids of `/v1/models`.
    pub models: Vec<String>,
    /// `max_model_len` of the served model, when listed.
    pub max_model_len: Option<u64>,
    started_at: String,
}

impl ServerInfo {
    /// Ask the server; an error when it is unreachable or does not serve `served`.
    pub async fn read(client: &Client, served: &str) -> Result<ServerInfo, String> {
        let models = client
            .get_json("/v1/models")
            .await
            .map_err(|e| format!("the engine at {} cannot be reached: {e}", client.base))?;
        let list: Vec<&Value> = models
            .get("data")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let ids: Vec<String> = list
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let Some(model) = list
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(served))
        else {
            let there = if ids.is_empty() {
                "no models".to_string()
            } else {
                ids.iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(format!(
                "the engine at {} serves {there}, not `{served}`; fix `model.served_name` or the server",
                client.base
            ));
        };
        let max_model_len = model.get("max_model_len").and_then(Value::as_u64);
        let version = client
            .get_json("/version")
            .await
            .ok()
            .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_string));
        Ok(ServerInfo {
            version,
            models: ids,
            max_model_len,
            started_at: utc_now(),
        })
    }
}

/// Make the run directory (refusing a non-empty one) and return its path.
pub fn prepare(out: Option<PathBuf>, spec_path: &str) -> Result<PathBuf, RunError> {
    let out = match out {
        Some(out) => out,
        None => default_dir(spec_path),
    };
    let err = |source| RunError::Dir {
        path: out.display().to_string(),
        source,
    };
    if out.exists() && std::fs::read_dir(&out).map_err(err)?.next().is_some() {
        return Err(RunError::NotEmpty(out.display().to_string()));
    }
    std::fs::create_dir_all(&out).map_err(err)?;
    Ok(out)
}

/// `runs/<spec>-<date>-<time>`, with `-2`, `-3`, … when runs start within the same second.
fn default_dir(spec_path: &str) -> PathBuf {
    let stem = Path::new(spec_path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("run");
    let stamp: String = utc_now().chars().filter(char::is_ascii_digit).collect();
    let (date, time) = stamp.split_at(8.min(stamp.len()));
    let base = PathBuf::from("runs").join(format!("{stem}-{date}-{time}"));
    let mut candidate = base.clone();
    let mut n = 2;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    candidate
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    std::fs::write(path, bytes).map_err(|source| RunError::Dir {
        path: path.display().to_string(),
        source,
    })
}

/// The spec copy, `plan.json` and the first `manifest.json`.
pub fn write_start(
    out: &Path,
    loaded: &Loaded,
    plan: &Plan,
    server: &ServerInfo,
) -> Result<(), RunError> {
    let ext = Path::new(&loaded.path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("yaml");
    write(&out.join(format!("spec.{ext}")), loaded.source.as_bytes())?;
    write(
        &out.join("plan.json"),
        (serde_json::to_string_pretty(plan).unwrap_or_default() + "\n").as_bytes(),
    )?;
    write_manifest(out, loaded, server, None, None, false)
}

/// `manifest.json` with the end time; the start and resume times already there are kept.
pub fn write_end(out: &Path, loaded: &Loaded, server: &ServerInfo) -> Result<(), RunError> {
    let earlier = std::fs::read_to_string(out.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    write_manifest(
        out,
        loaded,
        server,
        Some(utc_now()),
        earlier.as_ref(),
        false,
    )
}

/// `manifest.json` of a resumed run: its first start kept, this start added to `resumed_at`.
pub fn write_resumed(
    out: &Path,
    loaded: &Loaded,
    server: &ServerInfo,
    earlier: &Value,
) -> Result<(), RunError> {
    write_manifest(out, loaded, server, None, Some(earlier), true)
}

/// The hex sha256 of a spec's bytes.
pub fn spec_sha256(source: &str) -> String {
    Sha256::digest(source.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What `--resume` finds in a run directory.
#[derive(Debug)]
pub struct Resumed {
    /// The manifest as the earlier run left it.
    pub manifest: Value,
    /// The whole records of `results.jsonl`.
    pub records: Vec<crate::results::Record>,
    /// What was repaired, to be said.
    pub repaired: Option<String>,
}

/// Open `out` to go on with it: it must be a run directory of this very spec. A last line
/// of `results.jsonl` cut short (a killed runner) is cut off, so that appends start whole.
pub fn resume(out: &Path, loaded: &Loaded) -> Result<Resumed, RunError> {
    let manifest_path = out.join("manifest.json");
    let text = std::fs::read_to_string(&manifest_path)
        .map_err(|_| RunError::NotARun(out.display().to_string()))?;
    let manifest: Value = serde_json::from_str(&text).map_err(|e| RunError::Dir {
        path: manifest_path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    let was = manifest
        .get("spec_sha256")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let now = spec_sha256(&loaded.source);
    if was != now {
        return Err(RunError::SpecChanged {
            dir: out.display().to_string(),
            was,
            now,
        });
    }
    let results = out.join("results.jsonl");
    let err = |source| RunError::Dir {
        path: results.display().to_string(),
        source,
    };
    let cut = crate::results::repair(&results).map_err(err)?;
    let records = if results.exists() {
        crate::results::read(&results).map_err(err)?
    } else {
        Vec::new()
    };
    Ok(Resumed {
        manifest,
        records,
        repaired: (cut > 0).then(|| {
            format!("the last line of results.jsonl was cut short ({cut} bytes, a run killed while writing); it was removed")
        }),
    })
}

fn write_manifest(
    out: &Path,
    loaded: &Loaded,
    server: &ServerInfo,
    ended: Option<String>,
    earlier: Option<&Value>,
    resuming: bool,
) -> Result<(), RunError> {
    let spec = &loaded.spec;
    let sha = spec_sha256(&loaded.source);
    let started = earlier
        .and_then(|m| m.get("started_at"))
        .and_then(Value::as_str)
        .map_or_else(|| server.started_at.clone(), str::to_string);
    let mut resumed: Vec<Value> = earlier
        .and_then(|m| m.get("resumed_at"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if resuming {
        resumed.push(server.started_at.clone().into());
    }
    let launch = spec
        .engine
        .launch
        .as_ref()
        .and_then(|l| l.command.args().ok())
        .map(|a| {
            redact(&a)
                .iter()
                .map(|w| crate::spec::command::quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        });
    let mut warnings = Vec::new();
    if let (Some(want), Some(got)) = (&spec.engine.version, &server.version)
        && want != got
    {
        warnings.push(format!(
            "the spec says engine version {want}, the server reports {got}"
        ));
    }
    let manifest = json!({
        "tool": "benchspec", "tool_version": env!("CARGO_PKG_VERSION"),
        "spec": loaded.path, "spec_sha256": sha,
        "started_at": started, "resumed_at": resumed, "ended_at": ended,
        "host": host(),
        "engine": {"kind": spec.engine.kind.as_str(), "reported_version": server.version, "models": server.models, "max_model_len": server.max_model_len},
        "launch_command": launch,
        "warnings": warnings,
    });
    write(
        &out.join("manifest.json"),
        (serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n").as_bytes(),
    )
}

/// The launch command with the value after `--api-key` (and any `${VAR}`-free key) hidden.
pub fn redact(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide = false;
    for a in args {
        if hide {
            out.push("<redacted>".to_string());
            hide = false;
        } else if a == "--api-key" {
            out.push(a.clone());
            hide = true;
        } else if a.starts_with("--api-key=") {
            out.push("--api-key=<redacted>".to_string());
        } else {
            out.push(a.clone());
        }
    }
    out
}

fn host() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

/// Append JSON lines to `path` (the per-request detail of one cell).
pub fn append_lines(path: &Path, lines: &[Value]) -> Result<(), RunError> {
    use std::io::Write;
    if lines.is_empty() {
        return Ok(());
    }
    let err = |source| RunError::Dir {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    let mut text = String::new();
    for l in lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    f.write_all(text.as_bytes()).map_err(err)?;
    f.flush().map_err(err)
}
