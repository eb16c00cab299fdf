//! What `limit` (docs/results.md) tells the user to turn: the knob for the verdict's kind,
//! named where the user can change it for the spec's engine — a flag of the spec's launch
//! command, the server's own launch flags when the spec attaches to a running server (no
//! launch command: nothing in the spec sets them), or `engine.sim.*` for the embedded
//! simulator (`kind: sim`), which takes no flags.

use super::{Cap, LimitKind};

/// Where the engine's launch settings are changed, by the spec's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knobs {
    /// The spec's `engine.launch.command` starts the engine: its flags.
    Launch,
    /// The spec attaches to a running server (`base_url`, no launch command): the server's
    /// own launch flags, which the spec does not hold.
    Attached,
    /// The embedded simulator (`kind: sim`): `engine.sim.*`.
    Sim,
}

/// `flags` as the user of `knobs` changes them: attached, on the server's own command line.
fn where_set(knobs: Knobs, flags: &str) -> String {
    match knobs {
        Knobs::Attached => format!(
            "{flags} — on the attached server's own launch command (this spec only attaches to it; restart the server with them)"
        ),
        _ => flags.to_string(),
    }
}

/// The knob a user of `family` (`vllm`, `llamacpp`, `sglang`, `trtllm`) would turn for
/// `kind`, where `knobs` says it can be changed.
pub fn suggestion(kind: LimitKind, family: &str, cap: Option<Cap>, knobs: Knobs) -> String {
    if kind == LimitKind::Client {
        return "give the client more cores or `--client-threads`, or split the load over machines (`--shard N/M --split-load`)".into();
    }
    if knobs == Knobs::Sim {
        return sim(kind);
    }
    let llama = family == "llamacpp";
    let flags = match kind {
        LimitKind::Scheduler if llama => "raise `--parallel` (more slots; `--ctx-size` is shared among them, raise it too)".to_string(),
        LimitKind::Scheduler => {
            let flag = cap.map_or("--max-num-seqs", |c| if c.from.starts_with("engine.sim") { "--max-num-seqs" } else { c.from });
            format!("raise `{flag}` (the KV cache must hold the extra requests), or add replicas")
        }
        LimitKind::KvCache if llama => "a larger `--ctx-size` (the slots share it), fewer `--parallel` slots, or a quantized KV cache (`--cache-type-k`/`--cache-type-v q8_0`)".into(),
        LimitKind::KvCache => "more KV memory: raise `--gpu-memory-utilization`, `--kv-cache-dtype fp8`, more GPUs (`--tensor-parallel-size`), or a smaller `--max-model-len`".into(),
        LimitKind::PrefillInterference if llama => "a larger `--batch-size`/`--ubatch-size` (prompt tokens per step), or a replica for long prompts".into(),
        LimitKind::PrefillInterference => "tune chunked prefill: `--max-num-batched-tokens` (larger: prefills finish sooner; smaller: decodes stall less), `--enable-chunked-prefill`, or disaggregated prefill".into(),
        LimitKind::Compute | LimitKind::Client => return "the hardware is the limit at this batch: add replicas or GPUs, or a faster (quantized) model; a bigger batch only trades per-user speed for little throughput".into(),
    };
    where_set(knobs, &flags)
}

/// The simulator's knobs: `engine.sim.*` (it takes no launch flags).
fn sim(kind: LimitKind) -> String {
    match kind {
        LimitKind::Scheduler => "raise `engine.sim.max_num_seqs` (the KV cache, `engine.sim.kv_tokens`, must hold the extra requests)".into(),
        LimitKind::KvCache => "more KV cache: raise `engine.sim.kv_tokens`, or a smaller `model.max_model_len`".into(),
        LimitKind::PrefillInterference => "the simulator's profile sets its prompt tokens per step (`max_batched_tokens`), which the spec does not: another `engine.sim.profile` (or twin), or fewer long prompts at once".into(),
        LimitKind::Compute | LimitKind::Client => "the simulated hardware (`engine.sim.profile`) is the limit at this batch: add replicas, or another profile; a bigger batch only trades per-user speed for little throughput".into(),
    }
}

/// What to turn when the requests wait before the engine's scheduler, in its API server
/// (tokenizing, parsing, streaming).
pub fn front_end(family: &str, knobs: Knobs) -> String {
    let what = "the requests waited before the engine's scheduler, in its API server (tokenizing long prompts, parsing, streaming): neither running nor waiting in the engine, so no engine kind is judged";
    match knobs {
        Knobs::Sim => format!(
            "{what}; the simulator's API server has one tokenizer (its profile's): send fewer long prompts at once, or add replicas"
        ),
        _ if family == "vllm" => format!(
            "{what}; {}",
            where_set(
                knobs,
                "more API server processes (`--api-server-count N`), or add replicas"
            )
        ),
        _ => format!("{what}; add replicas (or the engine's API server workers)"),
    }
}
