//! The labelled facts of a report — hardware, engine, how the run measured — and the two
//! header lines, worded as the seed page words them. Absent values are left out.

use super::context::{CellView, DecodeMatrix, Item};
use super::format::{grouped, secs};
use crate::spec::{DecodeMode, HardwareType, PrefillMode, PromptCache, Spec};

fn item(label: &str, value: Option<String>) -> Option<Item> {
    value.filter(|v| !v.is_empty()).map(|value| Item {
        label: label.to_string(),
        value,
    })
}

/// `vllm · 0.27.2 · BF16`.
pub fn engine_line(spec: &Spec) -> String {
    let e = &spec.engine;
    [
        Some(e.kind.as_str().to_string()),
        e.version.clone(),
        e.quantization.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ")
}

/// `5 contexts (8K–123K) × 8 concurrency levels (1–128) · prefill at 8K, 16K`.
pub fn matrix_line(prefill: &[CellView], decode: &DecodeMatrix) -> String {
    let mut parts = Vec::new();
    if let (Some(first), Some(last)) = (decode.rows.first(), decode.rows.last()) {
        let n = decode.rows.len();
        let contexts = if n == 1 {
            format!("1 context ({})", first.context_label)
        } else {
            format!(
                "{n} contexts ({}–{})",
                first.context_label, last.context_label
            )
        };
        let c = &decode.concurrency;
        let levels = match (c.first(), c.last(), c.len()) {
            (Some(a), _, 1) => format!("1 concurrency level ({a})"),
            (Some(a), Some(b), n) => format!("{n} concurrency levels ({a}–{b})"),
            _ => String::new(),
        };
        parts.push(format!("{contexts} × {levels}"));
    }
    if !prefill.is_empty() {
        let at: Vec<&str> = prefill.iter().map(|p| p.context_label.as_str()).collect();
        parts.push(format!("prefill at {}", at.join(", ")));
    }
    parts.join(" · ")
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
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Engine facts; the version the server reported is said when it differs.
pub fn engine(spec: &Spec, reported: Option<String>) -> Vec<Item> {
    let e = &spec.engine;
    let version = match (&e.version, reported) {
        (Some(v), Some(r)) if *v != r => Some(format!("{v} (the server reported {r})")),
        (Some(v), _) => Some(v.clone()),
        (None, r) => r,
    };
    [
        item("Engine", Some(e.kind.as_str().to_string())),
        item("Version", version),
        item("Quantization", e.quantization.clone()),
        item("Backend", e.backend.clone()),
        item("Repository", e.repository.clone()),
        item("Build", e.build.clone()),
        item("Commit", e.commit.clone()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// How the run measured.
pub fn settings(spec: &Spec, tool_version: Option<&str>) -> Vec<Item> {
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
    let prefill = match p.mode {
        PrefillMode::DecodeWarmup => "Measured during decode warm-up".to_string(),
        PrefillMode::Standalone if p.repeats > 1 => {
            format!("Standalone, median of {} cold requests", p.repeats)
        }
        PrefillMode::Standalone => "Standalone cold request".to_string(),
    };
    let cache = match spec.workload.prompt_cache {
        PromptCache::Warm => "Warm",
        PromptCache::Cold => "Cold",
    };
    [
        item("Served model", Some(spec.model.served_name.clone())),
        item("Model source", spec.model.source.clone()),
        item("Revision", spec.model.revision.clone()),
        item(
            "Benchmark tool",
            Some(format!(
                "benchspec v{}",
                tool_version.unwrap_or(env!("CARGO_PKG_VERSION"))
            )),
        ),
        item("Decode test", d.enabled.then(|| test.to_string())),
        item("Prefill mode", p.enabled.then_some(prefill)),
        if d.enabled { per } else { None },
        item(
            "Max output",
            Some(format!(
                "{} tokens",
                grouped(spec.workload.max_output_tokens.0 as f64, 0)
            )),
        ),
        item("Prompt cache", Some(cache.to_string())),
    ]
    .into_iter()
    .flatten()
    .collect()
}
