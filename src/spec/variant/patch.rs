//! What a variant changes: its `sim` patch merged key by key into the base's `engine.sim`,
//! and the list of its changes that `plan` shows.

use super::super::engine::{ArgValue, SimEngine, SimPatch, Variant};

/// The simulator settings `base` (the defaults without one) with `patch` applied key by key.
pub fn patched_sim(base: Option<&SimEngine>, patch: &SimPatch) -> serde_json::Result<SimEngine> {
    let mut value = serde_json::to_value(base.cloned().unwrap_or_default())?;
    merge_keys(&mut value, patch);
    serde_json::from_value(value)
}

/// Set each key of `patch` in `value`: objects on both sides merge key by key, anything else
/// replaces; `null` removes the key (its default comes back).
fn merge_keys(value: &mut serde_json::Value, patch: &SimPatch) {
    let serde_json::Value::Object(map) = value else {
        *value = serde_json::Value::Object(patch.clone());
        return;
    };
    for (key, new) in patch {
        match (map.get_mut(key), new) {
            (_, serde_json::Value::Null) => {
                map.remove(key);
            }
            (Some(old @ serde_json::Value::Object(_)), serde_json::Value::Object(inner)) => {
                merge_keys(old, inner);
            }
            _ => {
                map.insert(key.clone(), new.clone());
            }
        }
    }
}

impl Variant {
    /// What the variant changes, one item each, in the order the fields are documented.
    pub fn changes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(kind) = self.kind {
            out.push(format!("kind {}", kind.as_str()));
        }
        if let Some(version) = &self.version {
            out.push(format!("version {version}"));
        }
        if let Some(cmd) = &self.command {
            let words = cmd.args().unwrap_or_default();
            let line: Vec<String> = words
                .iter()
                .map(|w| crate::spec::command::quote(w))
                .collect();
            out.push(format!("command `{}`", line.join(" ")));
        }
        for (flag, value) in &self.args {
            out.push(match value {
                None => format!("{flag} removed"),
                Some(ArgValue::Switch(true)) => flag.clone(),
                Some(ArgValue::Switch(false)) => format!("--no-{}", flag.trim_start_matches('-')),
                Some(v) => format!("{flag} {}", v.word().unwrap_or_default()),
            });
        }
        out.extend(self.env.iter().map(|(k, v)| format!("env {k}={v}")));
        if let Some(patch) = &self.sim {
            sim_changes("sim", patch, &mut out);
        }
        out.extend(self.labels.iter().map(|(k, v)| format!("label {k}={v}")));
        out
    }
}

/// `sim.time_scale 1.5`, `sim.faults.failure_rate 0.1`: each key a patch sets.
fn sim_changes(prefix: &str, patch: &SimPatch, out: &mut Vec<String>) {
    for (key, value) in patch {
        let at = format!("{prefix}.{key}");
        match value {
            serde_json::Value::Object(inner) => sim_changes(&at, inner, out),
            serde_json::Value::String(s) => out.push(format!("{at} {s}")),
            serde_json::Value::Null => out.push(format!("{at} default")),
            other => out.push(format!("{at} {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::variant::sweep;
    use std::collections::BTreeMap;

    fn num(n: u64) -> ArgValue {
        ArgValue::Number(n.into())
    }

    #[test]
    fn a_sim_patch_changes_only_its_keys() {
        let base = SimEngine {
            profile: "tiny".into(),
            noise: 0.03,
            ..SimEngine::default()
        };
        let patch: SimPatch = serde_json::from_value(serde_json::json!(
            {"time_scale": 1.5, "faults": {"failure_rate": 0.1}, "noise": null}
        ))
        .unwrap();
        let got = patched_sim(Some(&base), &patch).unwrap();
        assert_eq!(got.profile, "tiny");
        assert_eq!(got.time_scale, 1.5);
        assert_eq!(got.noise, 0.0, "null restores the default");
        assert_eq!(got.faults.failure_rate, 0.1);
        assert_eq!(got.faults.retry_after, base.faults.retry_after);
        let v = Variant {
            sim: Some(patch),
            ..sweep(&BTreeMap::from([("--x".to_string(), vec![num(2)])])).remove(0)
        };
        assert_eq!(
            v.changes(),
            [
                "--x 2",
                "sim.faults.failure_rate 0.1",
                "sim.noise default",
                "sim.time_scale 1.5"
            ]
        );
        let bad: SimPatch = serde_json::from_value(serde_json::json!({"time_scale": "x"})).unwrap();
        assert!(patched_sim(None, &bad).is_err());
    }
}
