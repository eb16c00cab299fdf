//! Meaning checks (docs/spec.md): what the schema cannot say. They read the document's JSON
//! one field at a time, so they run beside the schema layer even when other parts of the
//! spec are broken; a field the schema already rejected is simply not looked at again.

mod adapters;
mod fleet;
mod images;
mod load;
mod phases;
mod telemetry;
mod variants;

use super::command::{env_refs, flag_value, parse_url, port_arg};
use super::diag::{Problem, Severity};
use super::engine::{EngineKind, LaunchCommand};
use super::units::Tokens;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;

/// Where the spec is being checked: `validate` only warns about what the run machine may
/// still provide (environment variables); `run` needs it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `benchspec validate` and `plan`.
    Validate,
    /// `benchspec run`.
    Run,
}

/// A spec document and the environment it is checked against.
struct Checker<'a> {
    json: &'a Value,
    stage: Stage,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Checker<'_> {
    /// The field at `ptr` when present and well-formed; `Err(())` when present but broken
    /// (the schema layer reports it), `Ok(None)` when absent.
    fn field<T: DeserializeOwned>(&self, ptr: &str) -> Result<Option<T>, ()> {
        match self.json.pointer(ptr) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|_| ()),
        }
    }

    /// The field, or `default` when absent; `None` when broken.
    fn or<T: DeserializeOwned>(&self, ptr: &str, default: T) -> Option<T> {
        self.field(ptr).ok().map(|v| v.unwrap_or(default))
    }

    fn unset(&self, name: &str) -> Option<Severity> {
        let severity = match self.stage {
            Stage::Validate => Severity::Warning,
            Stage::Run => Severity::Error,
        };
        (self.env)(name).is_none().then_some(severity)
    }
}

/// All meaning problems of the document `json`; `env` looks variables up (the process
/// environment in the CLI, a table in tests).
pub fn check(json: &Value, stage: Stage, env: &dyn Fn(&str) -> Option<String>) -> Vec<Problem> {
    let cx = Checker { json, stage, env };
    let mut out = Vec::new();
    axes(&cx, &mut out);
    phases::check(&cx, &mut out);
    engine(&cx, &mut out);
    fleet::check(&cx, &mut out);
    report(&cx, &mut out);
    load::check(&cx, &mut out);
    telemetry::check(&cx, &mut out);
    variants::check(&cx, &mut out);
    images::check(&cx, &mut out);
    adapters::check(&cx, &mut out);
    out
}

fn axes(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let contexts: Option<Vec<Tokens>> = cx.field("/matrix/contexts").ok().flatten();
    let concurrency: Option<Vec<u32>> = cx.field("/matrix/concurrency").ok().flatten();
    if let Some(c) = &contexts {
        ascending(c, "/matrix/contexts", out);
    }
    if let Some(c) = &concurrency {
        ascending(c, "/matrix/concurrency", out);
        for (i, v) in c.iter().enumerate().filter(|(_, v)| **v == 0) {
            out.push(Problem::error(
                &format!("/matrix/concurrency/{i}"),
                format!("concurrency {v} sends nothing; use 1 or more"),
            ));
        }
    }
    prefix(cx, contexts.as_deref(), out);
    for phase in ["prefill", "decode"] {
        let ptr = format!("/phases/{phase}/contexts");
        if let Ok(Some(list)) = cx.field::<Vec<Tokens>>(&ptr) {
            subset(&list, contexts.as_deref(), &ptr, "matrix.contexts", out);
        }
    }
    let ptr = "/phases/decode/concurrency";
    if let Ok(Some(list)) = cx.field::<Vec<u32>>(ptr) {
        subset(
            &list,
            concurrency.as_deref(),
            ptr,
            "matrix.concurrency",
            out,
        );
    }
}

/// A shared prefix must leave room in the shortest context for a unique rest.
fn prefix(cx: &Checker<'_>, contexts: Option<&[Tokens]>, out: &mut Vec<Problem>) {
    let Ok(Some(tokens)) = cx.field::<Tokens>("/workload/prefix/tokens") else {
        return;
    };
    let shortest = contexts.and_then(|c| c.iter().map(|t| t.0).min());
    if tokens.0 == 0 {
        out.push(Problem::error(
            "/workload/prefix/tokens",
            "a prefix of 0 tokens shares nothing; give its length, or remove `workload.prefix`"
                .to_string(),
        ));
    } else if let Some(min) = shortest.filter(|m| tokens.0 + PREFIX_ROOM > *m) {
        out.push(Problem::error(
            "/workload/prefix/tokens",
            format!(
                "a prefix of {tokens} leaves no room for a unique rest in the {} context (at least {PREFIX_ROOM} tokens); shorten the prefix below {}",
                Tokens(min),
                Tokens(min.saturating_sub(PREFIX_ROOM))
            ),
        ));
    }
}

/// The fewest tokens a prompt keeps after its shared prefix (its unique header).
pub const PREFIX_ROOM: u64 = 16;

/// A phase's own axis: not empty, ascending, and drawn from the matrix.
pub(super) fn subset<T: PartialOrd + std::fmt::Display>(
    list: &[T],
    matrix: Option<&[T]>,
    ptr: &str,
    axis: &str,
    out: &mut Vec<Problem>,
) {
    if list.is_empty() {
        out.push(Problem::error(
            ptr,
            format!(
                "an empty list measures nothing; remove it to use `{axis}`, or set `enabled: false`"
            ),
        ));
    }
    ascending(list, ptr, out);
    let Some(matrix) = matrix else { return };
    for (i, v) in list.iter().enumerate().filter(|(_, v)| !matrix.contains(v)) {
        out.push(Problem::error(
            &format!("{ptr}/{i}"),
            format!("{v} is not in `{axis}`; add it there or remove it here"),
        ));
    }
}

/// Each value must be greater than the one before it: no duplicates, ascending order.
pub(super) fn ascending<T: PartialOrd + std::fmt::Display>(
    values: &[T],
    ptr: &str,
    out: &mut Vec<Problem>,
) {
    for (i, v) in values.iter().enumerate().skip(1) {
        let at = format!("{ptr}/{i}");
        if values[..i].contains(v) {
            out.push(Problem::error(&at, format!("{v} is listed twice")));
        } else if *v < values[i - 1] {
            let before = &values[i - 1];
            out.push(Problem::error(
                &at,
                format!("{v} comes after {before}; list values in ascending order"),
            ));
        }
    }
}

fn engine(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let kind: Option<EngineKind> = cx.field("/engine/kind").ok().flatten();
    let key_env: Option<String> = cx.field("/engine/api_key_env").ok().flatten();
    engine_kind(cx, kind, key_env.as_deref(), out);
    let base_url = cx.or(
        "/engine/base_url",
        super::engine::DEFAULT_BASE_URL.to_string(),
    );
    let url = base_url.as_deref().map(parse_url);
    if let Some(Err(msg)) = &url {
        out.push(Problem::error("/engine/base_url", msg.to_string()));
    }
    if cx.json.pointer("/engine/launch").is_none() {
        return;
    }
    if kind == Some(EngineKind::Sim) {
        return out.push(Problem::error(
            "/engine/launch",
            "a `sim` engine runs inside benchspec; remove `launch`",
        ));
    }
    let Ok(Some(command)) = cx.field::<LaunchCommand>("/engine/launch/command") else {
        return;
    };
    let args = match command.args() {
        Ok(a) => a,
        Err(msg) => return out.push(Problem::error("/engine/launch/command", msg.to_string())),
    };
    launch_env(cx, &args, key_env, out);
    if flag_value(&args, "--api-key").is_some_and(|key| env_refs(key).is_empty()) {
        out.push(Problem::error("/engine/launch/command", "the command carries a literal API key; write `--api-key ${VLLM_API_KEY}` and set `api_key_env`"));
    }
    // `${PORT}` is the replica's port, base_url's port + its index: it agrees by construction.
    let port_var = args.iter().flat_map(|a| env_refs(a)).any(|v| v == "PORT");
    if let (Some(Ok(url)), Some(kind), false) = (url, kind, port_var) {
        launch_port(
            kind,
            &args,
            url.port,
            base_url.as_deref().unwrap_or_default(),
            out,
        );
    }
}

/// The API key's variable is set; `engine.sim` belongs to `kind: sim`, whose profile exists.
fn engine_kind(
    cx: &Checker<'_>,
    kind: Option<EngineKind>,
    key_env: Option<&str>,
    out: &mut Vec<Problem>,
) {
    if let Some(name) = key_env
        && let Some(severity) = cx.unset(name)
    {
        out.push(Problem {
            severity,
            ..Problem::error(
                "/engine/api_key_env",
                format!(
                    "environment variable `{name}` is not set; export it before `benchspec run`"
                ),
            )
        });
    }
    if let Some(name) = key_env
        && let Some(Err(bad)) = (cx.env)(name).map(crate::client::ApiKey::new)
    {
        out.push(Problem::error(
            "/engine/api_key_env",
            format!("environment variable `{name}`: {bad}"),
        ));
    }
    if let (Some(k), Some(_)) = (kind, cx.json.pointer("/engine/sim"))
        && k != EngineKind::Sim
    {
        out.push(Problem::error(
            "/engine/sim",
            format!(
                "`engine.sim` applies to `kind: sim` only, not `{}`",
                k.as_str()
            ),
        ));
    }
    if kind == Some(EngineKind::Sim) {
        sim_profile(cx, out);
    }
}

/// Every `$VAR` and `${VAR}` of the launch command and its environment must be set (said
/// once each, where it is first written; the API key's variable is checked already).
fn launch_env(cx: &Checker<'_>, args: &[String], key_env: Option<String>, out: &mut Vec<Problem>) {
    let env: BTreeMap<String, String> = cx
        .field("/engine/launch/env")
        .ok()
        .flatten()
        .unwrap_or_default();
    let listed = cx
        .json
        .pointer("/engine/launch/command")
        .is_some_and(serde_json::Value::is_array);
    let texts = args
        .iter()
        .enumerate()
        .map(|(i, a)| match listed {
            true => (format!("/engine/launch/command/{i}"), a),
            false => ("/engine/launch/command".to_string(), a),
        })
        .chain(env.iter().map(|(k, v)| {
            let key = k.replace('~', "~0").replace('/', "~1");
            (format!("/engine/launch/env/{key}"), v)
        }));
    let mut seen: Vec<String> = key_env.into_iter().collect();
    for (at, text) in texts {
        for name in env_refs(text) {
            if seen.contains(&name) || fleet::REPLICA_VARS.contains(&name.as_str()) {
                continue;
            }
            if let Some(severity) = cx.unset(&name) {
                out.push(Problem {
                    severity,
                    ..Problem::error(
                        &at,
                        format!("`${name}` names an environment variable that is not set; export it before `benchspec run` (write `$$` for a literal `$`)"),
                    )
                });
            }
            seen.push(name);
        }
    }
}

fn launch_port(
    kind: EngineKind,
    args: &[String],
    url_port: u16,
    base_url: &str,
    out: &mut Vec<Problem>,
) {
    let (port, how) = match port_arg(args) {
        Some(p) => match p.parse::<u16>() {
            Ok(p) => (p, "listens on"),
            Err(_) => return,
        },
        None => match kind {
            EngineKind::Vllm => (8000, "listens by default on"),
            EngineKind::Sglang => (30000, "listens by default on"),
            EngineKind::LlamaCpp => (8080, "listens by default on"),
            EngineKind::Trtllm => (8000, "listens by default on"),
            _ => return,
        },
    };
    if port != url_port {
        out.push(Problem::error(
            "/engine/launch/command",
            format!("the launched engine {how} port {port} but `base_url` {base_url} uses port {url_port}; make them agree"),
        ));
    }
}

fn report(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let Ok(Some(templates)) = cx.field::<Vec<String>>("/report/templates") else {
        return;
    };
    for (i, t) in templates
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.ends_with(".j2"))
    {
        out.push(Problem::error(
            &format!("/report/templates/{i}"),
            format!("`{t}` is not a template; templates end in `.j2`"),
        ));
    }
}

/// A `sim` engine's profile must exist, and hold the spec's `max_model_len`.
fn sim_profile(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let Some(name) = cx.or(
        "/engine/sim/profile",
        super::engine::DEFAULT_SIM_PROFILE.to_string(),
    ) else {
        return;
    };
    let Some(profile) = crate::sim::profile::profile(&name) else {
        let known = crate::sim::profile::names();
        let hint = super::diag::suggest(&name, &known).map_or_else(
            || format!("the profiles are {}", known.join(", ")),
            |s| format!("did you mean `{s}`?"),
        );
        return out.push(Problem::error(
            "/engine/sim/profile",
            format!("unknown simulator profile `{name}`; {hint}"),
        ));
    };
    if let Ok(Some(max)) = cx.field::<Tokens>("/model/max_model_len")
        && max.0 > profile.max_model_len
    {
        out.push(Problem::error(
                "/model/max_model_len",
                format!("the `{name}` profile serves at most {} tokens; lower `max_model_len` or leave it out", profile.max_model_len),
            ));
    }
}
