//! Meaning checks of `engine.variants` and `engine.sweep` (docs/spec.md): names unique and
//! distinct from the phases' ids, one form or the other, launch overrides only where
//! benchspec launches the engine, `sim` settings only for the simulator.

use super::Checker;
use crate::spec::diag::Problem;
use crate::spec::engine::{EngineKind, LaunchCommand, SimEngine};
use crate::spec::variant::{ArgValue, SimPatch, Variant, patched_sim};
use std::collections::BTreeMap;

/// Every problem of the variants.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let variants: Vec<Variant> = cx
        .field("/engine/variants")
        .ok()
        .flatten()
        .unwrap_or_default();
    let sweep: BTreeMap<String, Vec<ArgValue>> =
        cx.field("/engine/sweep").ok().flatten().unwrap_or_default();
    let launched = cx.json.pointer("/engine/launch").is_some();
    if !variants.is_empty() && !sweep.is_empty() {
        out.push(Problem::error(
            "/engine/sweep",
            "give `engine.variants` or `engine.sweep`, not both: list the swept combinations as variants",
        ));
    }
    for (flag, values) in &sweep {
        let ptr = format!(
            "/engine/sweep/{}",
            flag.replace('~', "~0").replace('/', "~1")
        );
        if values.is_empty() {
            out.push(Problem::error(
                &ptr,
                "an empty list makes no variant; give two values or more",
            ));
        }
        if !launched {
            out.push(Problem::error(
                &ptr,
                "`engine.sweep` changes launch arguments: it needs `engine.launch`",
            ));
        }
    }
    let base: Option<EngineKind> = cx.field("/engine/kind").ok().flatten();
    let sim: Option<SimEngine> = cx.field("/engine/sim").ok().flatten();
    for (i, v) in variants.iter().enumerate() {
        let earlier = variants[..i].iter().any(|o| o.name == v.name);
        variant(v, i, (base, launched, earlier), out);
        if let Some(patch) = &v.sim {
            sim_patch(patch, sim.as_ref(), i, out);
        }
    }
}

/// The `i`th variant's `sim` applied over the base's `engine.sim` must make a simulator
/// whose profile exists.
fn sim_patch(patch: &SimPatch, base: Option<&SimEngine>, i: usize, out: &mut Vec<Problem>) {
    let at = format!("/engine/variants/{i}/sim");
    match patched_sim(base, patch) {
        Err(e) => out.push(Problem::error(&at, e.to_string())),
        Ok(sim)
            if patch.contains_key("profile")
                && crate::sim::profile::profile(&sim.profile).is_none() =>
        {
            out.push(Problem::error(
                &format!("{at}/profile"),
                format!(
                    "unknown simulator profile `{}`; the profiles are {}",
                    sim.profile,
                    crate::sim::profile::names().join(", ")
                ),
            ));
        }
        Ok(_) => {}
    }
}

/// The problems of the `i`th variant `v` (`base`: the spec's kind; `launched`: the spec
/// launches the engine; `twice`: an earlier variant has its name).
fn variant(
    v: &Variant,
    i: usize,
    (base, launched, twice): (Option<EngineKind>, bool, bool),
    out: &mut Vec<Problem>,
) {
    let at = |field: &str| format!("/engine/variants/{i}/{field}");
    if twice {
        out.push(Problem::error(&at("name"), format!("variant `{}` is named twice; cells are `<variant>/<cell id>`, so names must differ", v.name)));
    }
    if ["prefill", "decode", "load", "capacity"].contains(&v.name.as_str()) {
        out.push(Problem::error(
            &at("name"),
            format!(
                "`{}` is a phase's name; cell ids would read ambiguously, pick another",
                v.name
            ),
        ));
    }
    if v.sim.is_some() && v.kind.or(base) != Some(EngineKind::Sim) {
        out.push(Problem::error(
            &at("sim"),
            "a variant's `sim` settings apply to `kind: sim` only",
        ));
    }
    for (field, set) in [
        ("args", !v.args.is_empty()),
        ("env", !v.env.is_empty()),
        ("command", v.command.is_some()),
    ] {
        if set && !launched {
            out.push(Problem::error(&at(field), format!("a variant's `{field}` change how benchspec launches the engine: it needs `engine.launch`")));
        }
    }
    if let Some(Err(e)) = v.command.as_ref().map(LaunchCommand::args) {
        out.push(Problem::error(&at("command"), e.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::checks::{Stage, check};

    fn problems(engine: serde_json::Value) -> Vec<(String, String)> {
        let json = serde_json::json!({ "engine": engine });
        check(&json, Stage::Validate, &|_| None)
            .into_iter()
            .filter(|p| {
                p.pointer.starts_with("/engine/variants") || p.pointer.starts_with("/engine/sweep")
            })
            .map(|p| (p.pointer, p.message))
            .collect()
    }

    #[test]
    fn variant_problems_are_located() {
        let launch = serde_json::json!({"command": "vllm serve m"});
        let cases = [
            (
                serde_json::json!({"kind": "vllm", "launch": launch, "variants": [{"name": "a"}, {"name": "a"}]}),
                "/engine/variants/1/name",
                "named twice",
            ),
            (
                serde_json::json!({"kind": "vllm", "variants": [{"name": "a", "args": {"--x": 1}}]}),
                "/engine/variants/0/args",
                "needs `engine.launch`",
            ),
            (
                serde_json::json!({"kind": "vllm", "launch": launch, "variants": [{"name": "a", "sim": {}}]}),
                "/engine/variants/0/sim",
                "`kind: sim` only",
            ),
            (
                serde_json::json!({"kind": "vllm", "launch": launch, "variants": [{"name": "decode"}]}),
                "/engine/variants/0/name",
                "a phase's name",
            ),
            (
                serde_json::json!({"kind": "vllm", "launch": launch, "variants": [{"name": "a"}], "sweep": {"--x": [1, 2]}}),
                "/engine/sweep",
                "not both",
            ),
            (
                serde_json::json!({"kind": "sim", "sweep": {"--x": [1, 2]}}),
                "/engine/sweep/--x",
                "needs `engine.launch`",
            ),
            (
                serde_json::json!({"kind": "vllm", "launch": launch, "variants": [{"name": "a", "command": "x 'y"}]}),
                "/engine/variants/0/command",
                "unterminated",
            ),
        ];
        for (engine, ptr, says) in cases {
            let got = problems(engine.clone());
            assert!(
                got.iter().any(|(p, m)| p == ptr && m.contains(says)),
                "{engine}: {got:?}"
            );
        }
        let fine = serde_json::json!({"kind": "sim", "variants": [{"name": "a", "sim": {"time_scale": 2.0}}, {"name": "b"}]});
        assert_eq!(problems(fine), []);
    }
}
