//! The run's last step: each record's `limit` (docs/results.md) judged over the whole run —
//! a plateau is seen only once the step past it is measured — and `results.jsonl` rewritten
//! with them. The engine's cap on running requests comes from the spec (each variant's own).

use super::error::RunError;
use crate::plan::RunConfig;
use crate::results::limit::{Cap, Knobs};
use crate::rundir::RunDir;
use crate::spec::Spec;
use crate::spec::command::{SEQS_FLAGS, first_flag};

/// The cap on running requests `spec` sets: its launch command's `--max-num-seqs` (vLLM),
/// `--max-running-requests` (SGLang), `--parallel`/`-np` (llama.cpp), or, for the embedded
/// simulator (`kind: sim`), `engine.sim.max_num_seqs` or else its profile's (or twin's) own:
/// the simulator's cap is known even where the spec does not state it.
pub fn cap_of(spec: &Spec) -> Option<Cap> {
    let args = spec.launch_args();
    let from_flag = first_flag(&args, &SEQS_FLAGS).and_then(|(flag, v)| {
        Some(Cap {
            value: v.parse().ok()?,
            from: if flag == "-np" { "--parallel" } else { flag },
        })
    });
    from_flag.or_else(|| {
        if let Some(n) = spec.engine.sim.as_ref().and_then(|s| s.max_num_seqs) {
            return Some(Cap {
                value: f64::from(n),
                from: "engine.sim.max_num_seqs",
            });
        }
        if spec.engine.kind != crate::spec::EngineKind::Sim {
            return None;
        }
        let opts = crate::plan::sim::options_for(spec).ok()?;
        Some(Cap {
            value: opts.profile.max_num_seqs as f64,
            from: "engine.sim.profile",
        })
    })
}

/// Where the user of `spec` changes its engine's settings: `engine.sim.*` (`kind: sim`), its
/// launch command's flags, or, attached to a running server, that server's own.
pub fn knobs_of(spec: &Spec) -> Knobs {
    if spec.engine.kind == crate::spec::EngineKind::Sim {
        Knobs::Sim
    } else if spec.engine.launch.is_some() {
        Knobs::Launch
    } else {
        Knobs::Attached
    }
}

/// Judge the limits of the records in `dir` and write them back.
pub(super) fn fill(config: &RunConfig, dir: &RunDir) -> Result<(), RunError> {
    let spec = config.spec();
    let base = (cap_of(spec), knobs_of(spec));
    let variants: Vec<(String, (Option<Cap>, Knobs))> = spec
        .variants()
        .into_iter()
        .map(|v| (v.name, (cap_of(&v.spec), knobs_of(&v.spec))))
        .collect();
    let cap = |variant: Option<&str>| match variant {
        Some(name) => variants
            .iter()
            .find(|(n, _)| n == name)
            .map_or((None, base.1), |v| v.1),
        None => base,
    };
    let mut records = dir.records()?;
    let before = records.clone();
    crate::results::limit_cells::fill(&mut records, &cap, spec.validity.max_client_busy);
    if records != before {
        dir.rewrite_records(&records)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{cap_of, knobs_of};
    use crate::results::limit::Knobs;

    #[test]
    fn the_cap_is_read_from_each_engines_flag() {
        // (engine yaml, cap, where)
        let cases = [
            (
                "kind: vllm\n  launch: {command: 'vllm serve m --max-num-seqs 64 --port 8000'}",
                Some((64.0, "--max-num-seqs")),
            ),
            (
                "kind: llama-cpp\n  launch: {command: 'llama-server -m x.gguf -np 2 --port 8000'}",
                Some((2.0, "--parallel")),
            ),
            (
                "kind: sim\n  sim: {max_num_seqs: 3}",
                Some((3.0, "engine.sim.max_num_seqs")),
            ),
            (
                "kind: vllm\n  launch: {command: 'vllm serve m --port 8000'}",
                None,
            ),
            // Attached to a running server: its flags are not in the spec.
            ("kind: vllm", None),
            // The simulator's own cap, where the spec states none: its profile's (instant:
            // 1024, h200-gemma-4-e2b: 256 — src/sim/profile.rs).
            (
                "kind: sim\n  sim: {profile: instant}",
                Some((1024.0, "engine.sim.profile")),
            ),
            (
                "kind: sim\n  sim: {profile: h200-gemma-4-e2b, kv_tokens: 4096}",
                Some((256.0, "engine.sim.profile")),
            ),
        ];
        for (engine, want) in cases {
            let text = format!(
                "version: 1\nname: t\nengine:\n  {engine}\n  base_url: http://127.0.0.1:8000\nmodel: {{served_name: m, max_model_len: 100000}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
            );
            let config = crate::plan::config::of_yaml(&text);
            let got = cap_of(config.spec()).map(|c| (c.value, c.from));
            assert_eq!(got, want, "{engine}");
        }
    }

    #[test]
    fn the_knobs_follow_the_engine_kind_and_its_launch() {
        let cases = [
            (
                "kind: vllm\n  launch: {command: 'vllm serve m --port 8000'}",
                Knobs::Launch,
            ),
            ("kind: vllm", Knobs::Attached),
            ("kind: sim\n  sim: {max_num_seqs: 3}", Knobs::Sim),
        ];
        for (engine, want) in cases {
            let text = format!(
                "version: 1\nname: t\nengine:\n  {engine}\n  base_url: http://127.0.0.1:8000\nmodel: {{served_name: m, max_model_len: 100000}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
            );
            let config = crate::plan::config::of_yaml(&text);
            assert_eq!(knobs_of(config.spec()), want, "{engine}");
        }
    }
}
