//! Engine variants (docs/spec.md): `engine.variants` names versions of the engine — other
//! launch arguments, environment, kind, version or a whole command — and `engine.sweep` makes
//! them from the cartesian product of argument values. Each variant resolves into a spec of
//! its own (the base spec with the variant applied), measured over the whole plan with its
//! cells prefixed `<variant>/`.

use super::engine::LaunchCommand;
pub use super::engine::{ArgValue, Variant};
use super::model::Spec;
use std::collections::BTreeMap;

mod patch;
pub use super::engine::SimPatch;
pub use patch::patched_sim;

/// A variant resolved into the spec it is measured with.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The variant's name.
    pub name: String,
    /// The base spec with the variant applied (and no variants of its own).
    pub spec: Spec,
    /// What the variant changes, one item each (`--max-num-seqs 128`, `sim.time_scale 1.5`);
    /// empty for the spec as written.
    pub changes: Vec<String>,
}

impl Spec {
    /// The variants `engine.variants` and `engine.sweep` name, in order, each resolved into
    /// its spec; empty when the spec has none.
    pub fn variants(&self) -> Vec<Resolved> {
        let mut list = self.engine.variants.clone();
        list.extend(sweep(&self.engine.sweep));
        list.iter()
            .map(|v| Resolved {
                name: v.name.clone(),
                spec: self.with_variant(v),
                changes: v.changes(),
            })
            .collect()
    }

    /// This spec with `v` applied.
    fn with_variant(&self, v: &Variant) -> Spec {
        let mut spec = self.clone();
        let e = &mut spec.engine;
        e.variants.clear();
        e.sweep.clear();
        if let Some(kind) = v.kind {
            e.kind = kind;
        }
        if v.version.is_some() {
            e.version.clone_from(&v.version);
        }
        if let Some(patch) = &v.sim {
            // A patch that does not make a simulator is refused by the spec's checks
            // (`checks::variants`); were one to come here, the base's settings stay.
            if let Ok(sim) = patched_sim(e.sim.as_ref(), patch) {
                e.sim = Some(sim);
            }
        }
        if let Some(launch) = &mut e.launch {
            if let Some(cmd) = &v.command {
                launch.command = cmd.clone();
            }
            if !v.args.is_empty()
                && let Ok(mut words) = launch.command.args()
            {
                for (flag, value) in &v.args {
                    set_arg(&mut words, flag, value.as_ref());
                }
                launch.command = LaunchCommand::Args(words);
            }
            launch
                .env
                .extend(v.env.iter().map(|(k, x)| (k.clone(), x.clone())));
        }
        spec.labels
            .extend(v.labels.iter().map(|(k, x)| (k.clone(), x.clone())));
        spec
    }
}

/// The variants of a sweep: every combination of the values, keys in name order, each named
/// by its values (`max-num-seqs-128_enable-chunked-prefill-true`).
pub fn sweep(axes: &BTreeMap<String, Vec<ArgValue>>) -> Vec<Variant> {
    let mut combos: Vec<Vec<(&String, &ArgValue)>> = vec![Vec::new()];
    for (flag, values) in axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut next = c.clone();
                    next.push((flag, v));
                    next
                })
            })
            .collect();
    }
    if axes.is_empty() {
        return Vec::new();
    }
    combos
        .into_iter()
        .map(|combo| Variant {
            name: combo
                .iter()
                .map(|(flag, v)| {
                    let value = match v {
                        ArgValue::Switch(b) => b.to_string(),
                        other => other.word().unwrap_or_default(),
                    };
                    format!("{}-{}", flag.trim_start_matches('-'), name_safe(&value))
                })
                .collect::<Vec<_>>()
                .join("_"),
            args: combo
                .into_iter()
                .map(|(f, v)| (f.clone(), Some(v.clone())))
                .collect(),
            env: BTreeMap::new(),
            command: None,
            kind: None,
            version: None,
            labels: BTreeMap::new(),
            sim: None,
        })
        .collect()
}

/// `value` with anything a cell id should not hold replaced by `-`.
fn name_safe(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+=".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Set `flag` in `words` (the program first): replace its value where it is written, append
/// it where it is not; a switch writes the bare flag or `--no-<flag>`, `None` removes it.
pub fn set_arg(words: &mut Vec<String>, flag: &str, value: Option<&ArgValue>) {
    let negated = format!("--no-{}", flag.trim_start_matches('-'));
    let at = remove_flag(words, flag).or_else(|| remove_flag(words, &negated));
    let new: Vec<String> = match value {
        None => Vec::new(),
        Some(ArgValue::Switch(true)) => vec![flag.to_string()],
        Some(ArgValue::Switch(false)) => vec![negated],
        Some(v) => vec![flag.to_string(), v.word().unwrap_or_default()],
    };
    let at = at.unwrap_or(words.len());
    words.splice(at..at, new);
}

/// Remove `flag` and its value (`--f v`, `--f=v` or a bare `--f`) from `words`, returning
/// where it was. A following word that starts with `-` is the next flag, not a value.
fn remove_flag(words: &mut Vec<String>, flag: &str) -> Option<usize> {
    let eq = format!("{flag}=");
    let at = words
        .iter()
        .skip(1)
        .position(|w| w == flag || w.starts_with(&eq))?
        + 1;
    let with_value = words[at] == flag && words.get(at + 1).is_some_and(|n| !n.starts_with('-'));
    words.drain(at..at + if with_value { 2 } else { 1 });
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    fn num(n: u64) -> ArgValue {
        ArgValue::Number(n.into())
    }

    #[test]
    fn arguments_are_replaced_appended_switched_and_removed() {
        let base = "vllm serve m --max-num-seqs 64 --enable-chunked-prefill --port=8000";
        let cases: [(&str, Option<ArgValue>, &str); 7] = [
            (
                "--max-num-seqs",
                Some(num(128)),
                "vllm serve m --max-num-seqs 128 --enable-chunked-prefill --port=8000",
            ),
            (
                "--port",
                Some(num(9000)),
                "vllm serve m --max-num-seqs 64 --enable-chunked-prefill --port 9000",
            ),
            (
                "--dtype",
                Some(ArgValue::Text("fp8".into())),
                "vllm serve m --max-num-seqs 64 --enable-chunked-prefill --port=8000 --dtype fp8",
            ),
            (
                "--enable-chunked-prefill",
                Some(ArgValue::Switch(false)),
                "vllm serve m --max-num-seqs 64 --no-enable-chunked-prefill --port=8000",
            ),
            (
                "--enable-chunked-prefill",
                Some(ArgValue::Switch(true)),
                base,
            ),
            (
                "--max-num-seqs",
                None,
                "vllm serve m --enable-chunked-prefill --port=8000",
            ),
            ("--absent", None, base),
        ];
        for (flag, value, want) in cases {
            let mut w = words(base);
            set_arg(&mut w, flag, value.as_ref());
            assert_eq!(w.join(" "), want, "{flag} {value:?}");
        }
        let mut w = words("vllm serve m --no-enable-chunked-prefill");
        set_arg(
            &mut w,
            "--enable-chunked-prefill",
            Some(&ArgValue::Switch(true)),
        );
        assert_eq!(w.join(" "), "vllm serve m --enable-chunked-prefill");
    }

    #[test]
    fn a_sweep_is_the_cartesian_product_named_by_its_values() {
        let mut axes = BTreeMap::new();
        axes.insert("--max-num-seqs".to_string(), vec![num(128), num(256)]);
        axes.insert(
            "--enable-chunked-prefill".to_string(),
            vec![ArgValue::Switch(true), ArgValue::Switch(false)],
        );
        let names: Vec<String> = sweep(&axes).into_iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            [
                "enable-chunked-prefill-true_max-num-seqs-128",
                "enable-chunked-prefill-true_max-num-seqs-256",
                "enable-chunked-prefill-false_max-num-seqs-128",
                "enable-chunked-prefill-false_max-num-seqs-256",
            ]
        );
        assert!(sweep(&BTreeMap::new()).is_empty());
    }
}
