//! `tune`'s search space: the spec's `engine.variants` or `engine.sweep`, one configuration
//! each; its family — what it changes that the twin does not model, so that configurations of
//! one family are one engine to the twin — and the first ones measured: the two extremes of
//! each family's modelled settings.

use super::TuneError;
use crate::spec::Spec;
use crate::twin::settings::{TwinSettings, modelled};

/// One configuration of the space.
#[derive(Debug, Clone)]
pub struct Config {
    /// The variant's name (its cells are `<name>/…`).
    pub name: String,
    /// The spec it is measured with.
    pub spec: Spec,
    /// What it changes (`--max-num-seqs 128`, `sim.kv_tokens 64K`).
    pub changes: Vec<String>,
    /// What it changes that the twin does not model, joined; empty: the base engine's family.
    pub family: String,
    /// The settings the twin models.
    pub settings: TwinSettings,
}

impl Config {
    /// The modelled settings in one order, for the extremes (an unset one counts as 0).
    fn key(&self) -> [u64; 4] {
        let s = self.settings;
        [
            s.max_num_seqs,
            s.kv_tokens,
            s.max_batched_tokens,
            s.max_model_len,
        ]
        .map(|v| v.unwrap_or(0))
    }

    /// How the engine is started: the launch command where the spec has one, else the
    /// simulator's settings the configuration changes.
    pub fn launch(&self) -> String {
        if let Some(words) = self
            .spec
            .engine
            .launch
            .as_ref()
            .and_then(|l| l.command.args().ok())
        {
            let env: Vec<String> = self
                .spec
                .engine
                .launch
                .iter()
                .flat_map(|l| l.env.iter().map(|(k, v)| format!("{k}={v}")))
                .collect();
            let cmd: Vec<String> = words
                .iter()
                .map(|w| crate::spec::command::quote(w))
                .collect();
            return [env, cmd].concat().join(" ");
        }
        format!(
            "engine.kind {}: {}",
            self.spec.engine.kind.as_str(),
            self.changes.join(", ")
        )
    }
}

/// The configurations of `spec`: its variants (or sweep), at least two.
pub fn space(spec: &Spec) -> Result<Vec<Config>, TuneError> {
    let list: Vec<Config> = spec
        .variants()
        .into_iter()
        .map(|v| {
            let family: Vec<&String> = v
                .changes
                .iter()
                .filter(|c| !modelled(c) && !c.starts_with("label "))
                .collect();
            Config {
                settings: TwinSettings::of(&v.spec),
                family: family
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                name: v.name,
                spec: v.spec,
                changes: v.changes,
            }
        })
        .collect();
    if list.len() < 2 {
        return Err(TuneError::Usage(format!(
            "the spec has {} engine configuration(s): tune searches `engine.variants` or `engine.sweep`; give two or more",
            list.len()
        )));
    }
    Ok(list)
}

/// The families, in the order their first configuration comes: indices into `configs`.
pub fn families(configs: &[Config]) -> Vec<Vec<usize>> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in configs.iter().enumerate() {
        match out.iter_mut().find(|(f, _)| *f == c.family) {
            Some((_, v)) => v.push(i),
            None => out.push((c.family.clone(), vec![i])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The configurations measured first: in each family, the one with the smallest modelled
/// settings and the one with the largest (the ends of the range the twin is fitted across,
/// so that the others are predicted inside it rather than beyond).
pub fn first_picks(configs: &[Config]) -> Vec<usize> {
    let mut out = Vec::new();
    for fam in families(configs) {
        let lo = fam.iter().copied().min_by_key(|&i| configs[i].key());
        let hi = fam.iter().copied().max_by_key(|&i| configs[i].key());
        for i in [lo, hi].into_iter().flatten() {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(variants: &str) -> Spec {
        let text = format!(
            "version: 1\nname: s\nengine:\n  kind: sim\n  variants:\n{variants}\nmodel: {{served_name: m}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
        );
        crate::spec::parse("s.yaml", &text, crate::spec::Stage::Validate, &|_| None)
            .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()))
            .spec
    }

    #[test]
    fn families_split_on_what_the_twin_does_not_model_and_extremes_come_first() {
        let s = spec(
            "    - {name: a, sim: {max_num_seqs: 8}}\n    - {name: b, sim: {max_num_seqs: 2}}\n    - {name: c, sim: {max_num_seqs: 4}}\n    - {name: d, sim: {max_num_seqs: 4, time_scale: 2.0}}",
        );
        let c = space(&s).unwrap();
        assert_eq!(families(&c), [vec![0, 1, 2], vec![3]]);
        assert_eq!(first_picks(&c), [1, 0, 3]);
        assert_eq!(c[3].family, "sim.time_scale 2.0");
        let one = spec("    - {name: a, sim: {max_num_seqs: 8}}");
        assert!(matches!(space(&one), Err(TuneError::Usage(_))));
    }
}
