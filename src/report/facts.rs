//! The labelled facts of a report — hardware, engine, how the run measured — and the two
//! header lines, worded as the seed page words them. Absent values are left out.

use super::format::{grouped, secs};
use crate::spec::{
    DEFAULT_SIM_PROFILE, DecodeMode, EngineKind, HardwareType, PrefillMode, PromptCache, Spec,
};
use schemars::JsonSchema;
use serde::Serialize;

/// A labelled fact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Item {
    /// `GPU`.
    pub label: String,
    /// `H200 NVL`.
    pub value: String,
}

fn item(label: &str, value: Option<String>) -> Option<Item> {
    value.filter(|v| !v.is_empty()).map(|value| Item {
        label: label.to_string(),
        value,
    })
}

/// The simulator's profile and how it differs from the profile as built in
/// (`h200-gemma-4-e2b, 1.1× slower, 3% noise`); `None` for a real engine.
fn sim_profile(spec: &Spec) -> Option<String> {
    if spec.engine.kind != EngineKind::Sim {
        return None;
    }
    let Some(sim) = &spec.engine.sim else {
        return Some(DEFAULT_SIM_PROFILE.to_string());
    };
    let mut parts = vec![sim.profile.clone()];
    if (sim.time_scale - 1.0).abs() > f64::EPSILON {
        parts.push(format!("time × {}", sim.time_scale));
    }
    if sim.noise > 0.0 {
        parts.push(format!("{}% noise", grouped(sim.noise * 100.0, 0)));
    }
    Some(parts.join(", "))
}

/// `vllm · 0.27.2 · BF16`; `sim · profile h200-gemma-4-e2b` for the embedded simulator.
pub fn engine_line(spec: &Spec) -> String {
    let e = &spec.engine;
    [
        Some(e.kind.as_str().to_string()),
        sim_profile(spec).map(|p| format!("profile {p}")),
        e.version.clone(),
        e.quantization.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ")
}

/// Hardware facts.
pub fn hardware(spec: &Spec) -> Vec<Item> {
    let h = &spec.hardware;
    let kind = h.kind.map(|k| match k {
        HardwareType::DiscreteGpu => "Discrete GPU",
        HardwareType::IntegratedGpu => "Integrated GPU",
        HardwareType::Cpu => "CPU",
        HardwareType::Accelerator => "Accelerator",
    });
    let gpu = h.gpu.as_ref().map(|g| match h.gpu_count {
        Some(n) if n > 1 => format!("{n} × {g}"),
        _ => g.clone(),
    });
    let vram = h.vram.as_ref().map(|v| {
        let t = &v.text;
        match t.find(|c: char| c.is_ascii_alphabetic()) {
            Some(i) => format!("{} {}", t[..i].trim(), &t[i..]),
            None => t.clone(),
        }
    });
    [
        item("Type", kind.map(str::to_string)),
        item("GPU", gpu),
        item("VRAM", vram),
        item("OS", h.os.clone()),
        item(
            "Cost",
            h.cost_per_hour
                .map(|c| format!("{} per hour", super::format::usd(c))),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Engine facts; the version the server reported is said when it differs. The simulator is
/// named with its profile, not with the version string of the engine it imitates.
pub fn engine(spec: &Spec, reported: Option<String>) -> Vec<Item> {
    let e = &spec.engine;
    let profile = sim_profile(spec);
    let reported = reported.filter(|_| profile.is_none());
    let version = match (&e.version, reported) {
        (Some(v), Some(r)) if *v != r => Some(format!("{v} (the server reported {r})")),
        (Some(v), _) => Some(v.clone()),
        (None, r) => r,
    };
    [
        item(
            "Engine",
            Some(match profile {
                Some(_) => "sim (benchspec's simulated engine)".to_string(),
                None => e.kind.as_str().to_string(),
            }),
        ),
        item("Profile", profile),
        item("Version", version),
        item("Quantization", e.quantization.clone()),
        item("Backend", e.backend.clone()),
        item("Repository", e.repository.clone()),
        item("Build", e.build.clone()),
        item("Commit", e.commit.clone()),
        item("Servers", servers(e)),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `2 replicas launched (least-outstanding)` or `3 endpoints (round-robin)`; `None` for one.
fn servers(e: &crate::spec::EngineSpec) -> Option<String> {
    let balance = e.balance.as_str();
    if e.replicas > 1 {
        Some(format!("{} replicas launched ({balance})", e.replicas))
    } else if e.endpoints.len() > 1 {
        Some(format!("{} endpoints ({balance})", e.endpoints.len()))
    } else {
        None
    }
}

/// How the run measured (`run`: who measured, benchspec or the peer of an imported run).
pub fn settings(spec: &Spec, run: &super::run_info::RunInfo) -> Vec<Item> {
    let benchspec = format!(
        "benchspec v{}",
        run.tool_version
            .as_deref()
            .unwrap_or(env!("CARGO_PKG_VERSION"))
    );
    let tool = match &run.imported {
        Some(peer) => format!("{peer} (imported by {benchspec})"),
        None => benchspec,
    };
    let d = &spec.phases.decode;
    let p = &spec.phases.prefill;
    let (test, per) = match d.mode {
        DecodeMode::FixedDuration => (
            "Fixed duration",
            item("Time per measurement", Some(secs(d.duration.secs(), None))),
        ),
        DecodeMode::RequestCount => (
            "Request count",
            item(
                "Requests per measurement",
                Some(grouped(f64::from(d.requests), 0)),
            ),
        ),
    };
    let prefill = prefill_mode(spec);
    let cache = match spec.workload.prompt_cache {
        PromptCache::Warm => "Warm",
        PromptCache::Cold => "Cold",
    };
    [
        item("Served model", Some(spec.model.served_name.clone())),
        item("Model source", spec.model.source.clone()),
        item("Revision", spec.model.revision.clone()),
        item("Benchmark tool", Some(tool)),
        item("Decode test", d.enabled.then(|| test.to_string())),
        item("Prefill mode", p.enabled.then_some(prefill)),
        if d.enabled { per } else { None },
        // A trace's requests ask for their own output lengths (see [`trace`]).
        // An imported run's spec only describes the peer's run: it set neither.
        item(
            "Max output",
            (run.imported.is_none() && uses_max_output(spec)).then(|| {
                format!(
                    "{} tokens",
                    grouped(spec.workload.max_output_tokens.0 as f64, 0)
                )
            }),
        ),
        // Only decode, load and capacity cells reuse (or not) a slot's prompt: sessions
        // resend their history and replays follow the trace's `hash_ids`.
        item(
            "Prompt cache",
            (run.imported.is_none() && uses_prompt_cache(spec)).then(|| cache.to_string()),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// How the spec measures prefill, worded for the settings table.
fn prefill_mode(spec: &Spec) -> String {
    let p = &spec.phases.prefill;
    match p.mode {
        PrefillMode::DecodeWarmup => "Measured during decode warm-up".to_string(),
        PrefillMode::Standalone if p.repeats.unwrap_or(spec.repeats) > 1 => {
            let n = p.repeats.unwrap_or(spec.repeats);
            format!("Standalone, median of {n} cold requests")
        }
        PrefillMode::Standalone => "Standalone cold request".to_string(),
    }
}

/// Whether a phase that the spec runs reads `workload.prompt_cache`.
fn uses_prompt_cache(spec: &Spec) -> bool {
    let p = &spec.phases;
    p.decode.enabled
        || p.load.as_ref().is_some_and(|l| l.enabled)
        || p.capacity.as_ref().is_some_and(|c| c.enabled)
}

/// Whether a phase of `spec` other than a replay asks for `max_output_tokens`.
fn uses_max_output(spec: &Spec) -> bool {
    let ph = &spec.phases;
    ph.decode.enabled
        || ph.prefill.enabled
        || ph.load.as_ref().is_some_and(|l| l.enabled)
        || ph.capacity.as_ref().is_some_and(|c| c.enabled)
        || ph.sessions.as_ref().is_some_and(|s| s.enabled)
}

/// What a replayed trace decided, one fact per replay record: `traces/a.jsonl ×1.0 · 120
/// requests · input 59–3,582 tokens · output 16–64 tokens`.
pub fn trace(replay: &[super::view::CellView]) -> Vec<Item> {
    replay
        .iter()
        .filter_map(|c| c.record.as_ref()?.trace.as_ref())
        .filter_map(|t| {
            let range = |r: Option<[u64; 2]>, what: &str| {
                r.map(|[lo, hi]| {
                    format!(
                        "{what} {}–{} tokens",
                        grouped(lo as f64, 0),
                        grouped(hi as f64, 0)
                    )
                })
            };
            let parts: Vec<String> = [
                Some(format!("{} ×{}", t.file, t.speedup)),
                Some(format!("{} requests", grouped(t.requests as f64, 0))),
                range(t.input_length, "input"),
                range(t.output_length, "output"),
            ]
            .into_iter()
            .flatten()
            .collect();
            item("Trace", Some(parts.join(" · ")))
        })
        .collect()
}
