//! Meaning checks of LoRA adapters (docs/spec.md): `workload.adapters` names at least one
//! adapter, each with a positive weight; the simulator's `engine.sim.lora` lists distinct
//! names. Whether the server lists the adapters is checked at readiness (`run`).

use super::Checker;
use crate::spec::diag::Problem;
use serde_json::Value;

/// Every problem of `workload.adapters` and `engine.sim.lora.adapters`.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    if let Some(map) = cx.json.pointer("/workload/adapters") {
        mix(map, out);
        served_by_the_simulator(cx, map, out);
    }
    if let Ok(Some(names)) = cx.field::<Vec<String>>("/engine/sim/lora/adapters") {
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                out.push(Problem::error(
                    &format!("/engine/sim/lora/adapters/{i}"),
                    format!("adapter `{name}` is listed twice; name each adapter once"),
                ));
            }
        }
    }
}

/// With `engine.kind: sim`, the mix names only adapters the simulator serves
/// (`engine.sim.lora.adapters`, unless a variant changes `lora`): known before a server
/// is started, so refused here rather than at readiness.
fn served_by_the_simulator(cx: &Checker<'_>, map: &Value, out: &mut Vec<Problem>) {
    if cx.json.pointer("/engine/kind").and_then(Value::as_str) != Some("sim") {
        return;
    }
    let variants_change_lora = cx
        .json
        .pointer("/engine/variants")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(|v| v.pointer("/sim/lora").is_some()));
    let Some(map) = map.as_object().filter(|_| !variants_change_lora) else {
        return;
    };
    let served: Vec<String> = cx
        .field::<Vec<String>>("/engine/sim/lora/adapters")
        .ok()
        .flatten()
        .unwrap_or_default();
    for name in map.keys().filter(|n| !served.contains(n)) {
        let listed = if served.is_empty() {
            "serves no adapter (no `engine.sim.lora`)".to_string()
        } else {
            format!("serves {}", served.join(", "))
        };
        out.push(Problem::error(
            &format!("/workload/adapters/{}", pointer_escape(name)),
            format!(
                "adapter `{name}` is not served: the simulator {listed}; add it to `engine.sim.lora.adapters`, or leave it out of the mix"
            ),
        ));
    }
}

/// The mix: a map of at least one name, each weight a positive number.
fn mix(map: &Value, out: &mut Vec<Problem>) {
    let Some(map) = map.as_object() else {
        return; // the schema layer reports a mix that is not a map
    };
    if map.is_empty() {
        out.push(Problem::error(
            "/workload/adapters",
            "an empty adapter mix sends nothing; name at least one adapter with its weight (`{my-adapter: 1}`), or remove `workload.adapters`",
        ));
    }
    for (name, weight) in map {
        let ptr = format!("/workload/adapters/{}", pointer_escape(name));
        match weight.as_f64() {
            Some(w) if w > 0.0 && w.is_finite() => {}
            Some(w) => out.push(Problem::error(
                &ptr,
                format!("adapter `{name}` has weight {w}; a weight is a positive share of the mix (e.g. 1), or leave the adapter out"),
            )),
            None => {} // the schema layer reports a weight that is not a number
        }
        if name.trim().is_empty() {
            out.push(Problem::error(
                &ptr,
                "an adapter's name is the `model` the server lists; it cannot be blank",
            ));
        }
    }
}

/// `name` as one JSON-pointer token (`~` and `/` escaped).
fn pointer_escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use crate::spec::checks::{Stage, check};
    use serde_json::json;

    #[test]
    fn a_bad_mix_is_refused_where_it_is() {
        let table = [
            (json!({}), Some("/workload/adapters"), "empty"),
            (
                json!({"a": 1, "b": 0}),
                Some("/workload/adapters/b"),
                "weight 0",
            ),
            (
                json!({"x/y": -2.5}),
                Some("/workload/adapters/x~1y"),
                "weight -2.5",
            ),
            (json!({"a": 1, "b": 0.5}), None, ""),
        ];
        for (mix, at, says) in table {
            let doc = json!({"workload": {"adapters": mix}});
            let got = check(&doc, Stage::Validate, &|_| None);
            match at {
                Some(at) => assert!(
                    got.iter()
                        .any(|p| p.pointer == at && p.message.contains(says)),
                    "{mix}: {got:?}"
                ),
                None => assert!(got.is_empty(), "{mix}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_sim_adapter_listed_twice_is_refused() {
        let doc = json!({"engine": {"sim": {"lora": {"adapters": ["a", "b", "a"]}}}});
        let got = check(&doc, Stage::Validate, &|_| None);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].pointer, "/engine/sim/lora/adapters/2");
    }
}
