//! The spec's engine settings the twin models — the requests scheduled at once
//! (`--max-num-seqs`, `engine.sim.max_num_seqs`), the tokens per step
//! (`--max-num-batched-tokens`), the KV cache (`model.kv_tokens`, `engine.sim.kv_tokens`) and
//! the longest sequence (`model.max_model_len`, `--max-model-len`) — read from the spec and
//! each variant, applied to the twin's limits; and the settings it does not model, listed.

use super::model::Params;
use crate::spec::Spec;
use crate::spec::Tokens;
use crate::spec::command::{SEQS_FLAGS, first_flag};

/// The launch flags the twin models, each setting under every engine's name for it: vLLM's,
/// llama.cpp's (`--parallel` slots; `--ctx-size` the KV cache all slots share; `--ctx` in
/// scripts/llamacpp-server.py) and SGLang's.
const BATCHED_FLAGS: [&str; 2] = ["--max-num-batched-tokens", "--chunked-prefill-size"];
const KV_FLAGS: [&str; 3] = ["--ctx-size", "--ctx", "--max-total-tokens"];
const LEN_FLAGS: [&str; 2] = ["--max-model-len", "--context-length"];
const MODELLED_FLAGS: [&[&str]; 4] = [&SEQS_FLAGS, &BATCHED_FLAGS, &KV_FLAGS, &LEN_FLAGS];
/// Flags that only say where the server listens or what it calls the model.
const PLACE_FLAGS: [&str; 6] = [
    "--port",
    "--host",
    "--served-model-name",
    "--api-key",
    "--model",
    "--alias",
];
/// The simulator's settings the twin models (or that only pick what the twin replaces).
const MODELLED_SIM: [&str; 4] = ["max_num_seqs", "kv_tokens", "twin", "profile"];

/// The limits one spec (or variant) sets; `None` keeps the twin's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TwinSettings {
    /// Requests scheduled at once.
    pub max_num_seqs: Option<u64>,
    /// Tokens per engine step.
    pub max_batched_tokens: Option<u64>,
    /// KV-cache capacity, tokens.
    pub kv_tokens: Option<u64>,
    /// Longest prompt + output.
    pub max_model_len: Option<u64>,
}

impl TwinSettings {
    /// What `spec` sets: its launch command's flags, its simulator's options, its model's.
    pub fn of(spec: &Spec) -> TwinSettings {
        let args = spec.launch_args();
        let flag = |names: &[&'static str]| {
            first_flag(&args, names).and_then(|(_, v)| Tokens::parse(v).ok().map(|t| t.0))
        };
        let sim = spec.engine.sim.as_ref();
        TwinSettings {
            max_num_seqs: flag(&SEQS_FLAGS)
                .or_else(|| sim.and_then(|s| s.max_num_seqs).map(u64::from)),
            max_batched_tokens: flag(&BATCHED_FLAGS),
            kv_tokens: flag(&KV_FLAGS)
                .or_else(|| sim.and_then(|s| s.kv_tokens).map(|t| t.0))
                .or(spec.model.kv_tokens.map(|t| t.0)),
            max_model_len: flag(&LEN_FLAGS).or(spec.model.max_model_len.map(|t| t.0)),
        }
    }

    /// `p` with these limits.
    pub fn apply(&self, mut p: Params) -> Params {
        p.max_num_seqs = self.max_num_seqs.unwrap_or(p.max_num_seqs).max(1);
        p.max_batched_tokens = self
            .max_batched_tokens
            .unwrap_or(p.max_batched_tokens)
            .max(1);
        p.kv_tokens = self.kv_tokens.unwrap_or(p.kv_tokens).max(1);
        p.max_model_len = self.max_model_len.unwrap_or(p.max_model_len);
        p
    }
}

/// The settings of the spec and of each variant (by name).
#[derive(Debug, Clone, Default)]
pub struct SpecSettings {
    /// The spec's own.
    pub base: TwinSettings,
    /// Each variant's.
    pub variants: Vec<(String, TwinSettings)>,
}

impl SpecSettings {
    /// Read from `spec` and its variants.
    pub fn of(spec: &Spec) -> SpecSettings {
        SpecSettings {
            base: TwinSettings::of(spec),
            variants: spec
                .variants()
                .into_iter()
                .map(|v| (v.name, TwinSettings::of(&v.spec)))
                .collect(),
        }
    }

    /// The settings of `variant` (the spec's own without one).
    pub fn get(&self, variant: Option<&str>) -> TwinSettings {
        variant
            .and_then(|n| self.variants.iter().find(|(v, _)| v == n))
            .map_or(self.base, |(_, s)| *s)
    }
}

/// Whether a variant's `change` (`--max-num-seqs 128`, `sim.kv_tokens 64K`, as
/// [`crate::spec::variant::Resolved::changes`] words it) is a setting the twin models:
/// variants that differ only in such changes are one engine to the twin.
pub fn modelled(change: &str) -> bool {
    change.split([' ', '=']).next().is_some_and(is_modelled)
        || MODELLED_SIM
            .iter()
            .any(|k| change.starts_with(&format!("sim.{k} ")))
}

/// The spec's engine settings the twin does not model, one line each: launch flags, the
/// simulator's options that differ from their defaults, and what each variant changes.
pub fn not_modelled(spec: &Spec) -> Vec<String> {
    let mut out = Vec::new();
    let args = spec.launch_args();
    for a in args.iter().filter(|a| a.starts_with("--")) {
        let name = a.split('=').next().unwrap_or(a);
        if !is_modelled(name) && !PLACE_FLAGS.contains(&name) {
            out.push(format!("launch {name}"));
        }
    }
    if let Some(sim) = &spec.engine.sim {
        let ours = serde_json::to_value(sim).unwrap_or_default();
        let default = serde_json::to_value(crate::spec::SimEngine::default()).unwrap_or_default();
        if let (Some(ours), Some(default)) = (ours.as_object(), default.as_object()) {
            for (k, v) in ours {
                if !MODELLED_SIM.contains(&k.as_str()) && default.get(k) != Some(v) {
                    out.push(format!("sim.{k}"));
                }
            }
        }
    }
    for v in spec.variants() {
        for change in v.changes {
            if !modelled(&change) {
                out.push(format!("variant {}: {change}", v.name));
            }
        }
    }
    // A flag the command repeats is named once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// Whether the twin models the launch flag `name`.
fn is_modelled(name: &str) -> bool {
    MODELLED_FLAGS.iter().any(|names| names.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(engine: &str) -> Spec {
        let text = format!(
            "version: 1\nname: s\n{engine}\nmodel: {{served_name: m, max_model_len: 16K}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
        );
        crate::spec::parse("s.yaml", &text, crate::spec::Stage::Validate, &|_| None)
            .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()))
            .spec
    }

    #[test]
    fn launch_flags_sim_options_and_variants_are_read() {
        let s = spec(
            "engine:\n  kind: vllm\n  launch: {command: 'vllm serve m --max-num-seqs 64 --dtype fp8 --port 8000'}\n  variants:\n    - {name: a, args: {--max-num-seqs: 128}}\n    - {name: b, args: {--enforce-eager: true}}",
        );
        let all = SpecSettings::of(&s);
        assert_eq!(all.base.max_num_seqs, Some(64));
        assert_eq!(all.base.max_model_len, Some(16384));
        assert_eq!(all.get(Some("a")).max_num_seqs, Some(128));
        assert_eq!(all.get(Some("b")).max_num_seqs, Some(64));
        assert_eq!(
            not_modelled(&s),
            ["launch --dtype", "variant b: --enforce-eager"]
        );
        let sim = spec("engine: {kind: sim, sim: {max_num_seqs: 2, kv_tokens: 4K, noise: 0.1}}");
        let got = TwinSettings::of(&sim);
        assert_eq!((got.max_num_seqs, got.kv_tokens), (Some(2), Some(4096)));
        assert_eq!(not_modelled(&sim), ["sim.noise"]);
    }

    /// llama.cpp's slots and shared context, and SGLang's names, are the same settings: the
    /// twin of `--parallel 4` schedules 4 at once (it took vLLM's 256 and listed the flag
    /// as not modelled).
    #[test]
    fn other_engines_names_for_the_modelled_settings_are_read() {
        for (cmd, want) in [
            (
                "llama-server -m m.gguf --parallel 4 --ctx-size 16384 --alias m --threads 2",
                (Some(4), Some(16384), None, vec!["launch --threads"]),
            ),
            (
                "python scripts/llamacpp-server.py --parallel=2 --ctx 8192",
                (Some(2), Some(8192), None, vec![]),
            ),
            (
                "python -m sglang.launch_server --max-running-requests 32 --max-total-tokens 64K --chunked-prefill-size 4096 --context-length 8K",
                (Some(32), Some(65536), Some(4096), vec![]),
            ),
        ] {
            let s = spec(&format!(
                "engine:\n  kind: vllm\n  launch: {{command: '{cmd}'}}"
            ));
            let got = TwinSettings::of(&s);
            let names = not_modelled(&s);
            assert_eq!(
                (
                    got.max_num_seqs,
                    got.kv_tokens,
                    got.max_batched_tokens,
                    names.iter().map(String::as_str).collect::<Vec<_>>()
                ),
                want,
                "{cmd}"
            );
        }
    }
}
