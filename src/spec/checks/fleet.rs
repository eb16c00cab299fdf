//! Checks of a fleet (docs/spec.md, `engine.replicas`, `engine.endpoints`): replicas are
//! launched, each on its own port; endpoints are servers already running, given instead of
//! `base_url` and of a launch.

use super::{Checker, Problem};
use crate::spec::command::{env_refs, parse_url};
use crate::spec::engine::{EngineKind, LaunchCommand};
use std::collections::BTreeMap;

/// The variables benchspec sets itself in a launch command (not read from the environment).
pub(super) const REPLICA_VARS: [&str; 2] = ["PORT", "REPLICA"];

pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let kind: Option<EngineKind> = cx.field("/engine/kind").ok().flatten();
    let replicas: u32 = cx.or("/engine/replicas", 1).unwrap_or(1);
    let launch = cx.json.pointer("/engine/launch").is_some();
    if replicas > 1 {
        replicas_launched(cx, kind, launch, out);
    }
    let Ok(Some(endpoints)) = cx.field::<Vec<String>>("/engine/endpoints") else {
        return;
    };
    let at = "/engine/endpoints";
    if kind == Some(EngineKind::Sim) {
        out.push(Problem::error(at, "a `sim` engine runs inside benchspec; `endpoints` attaches to servers already running (launch `benchspec sim --port N` for each and give kind `vllm`)"));
    }
    if launch {
        out.push(Problem::error(at, "`endpoints` attaches to servers already running; remove `engine.launch`, or launch several with `engine.replicas`"));
    }
    if replicas > 1 {
        out.push(Problem::error(at, "give `replicas` (servers benchspec launches) or `endpoints` (servers already running), not both"));
    }
    if cx.json.pointer("/engine/base_url").is_some() {
        out.push(Problem::error(
            "/engine/base_url",
            "`endpoints` lists every server to measure; remove `base_url`",
        ));
    }
    for (i, url) in endpoints.iter().enumerate() {
        let at = format!("{at}/{i}");
        if let Err(e) = parse_url(url) {
            out.push(Problem::error(&at, e.to_string()));
        } else if endpoints[..i].contains(url) {
            out.push(Problem::error(&at, format!("{url} is listed twice")));
        }
    }
}

/// Replicas are started from `engine.launch`, each on its own port (`${PORT}`).
fn replicas_launched(
    cx: &Checker<'_>,
    kind: Option<EngineKind>,
    launch: bool,
    out: &mut Vec<Problem>,
) {
    let at = "/engine/replicas";
    if kind == Some(EngineKind::Sim) {
        return out.push(Problem::error(at, "a `sim` engine runs inside benchspec as one server; replicas are launched from `engine.launch` (e.g. `benchspec sim --port ${PORT}` with kind `vllm`)"));
    }
    if !launch {
        return out.push(Problem::error(at, "replicas are started from `engine.launch`; add it (or list servers already running in `engine.endpoints`)"));
    }
    let Ok(Some(command)) = cx.field::<LaunchCommand>("/engine/launch/command") else {
        return;
    };
    let env: BTreeMap<String, String> = cx
        .field("/engine/launch/env")
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut texts = command.args().unwrap_or_default();
    texts.extend(env.into_values());
    if !texts.iter().flat_map(|t| env_refs(t)).any(|v| v == "PORT") {
        out.push(Problem::error("/engine/launch/command", "with `replicas`, each replica listens on its own port: write `--port ${PORT}` (`base_url`'s port + the replica's index)"));
    }
}
