//! The workload settings every cell of a plan is measured with (prompt cache, output length,
//! validity, SLO, limits, cost, saturation stop), resolved once from the spec.

use super::{Cell, Measure};
use crate::spec::telemetry::KvOverflow;
use crate::spec::{PromptCache, Slo, Span, Spec, Validity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The workload settings a cell is measured with, resolved from the spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// `max_tokens` of decode requests.
    pub max_output_tokens: u64,
    /// Warm: every slot reuses one prompt; cold: every request a new one.
    pub prompt_cache: PromptCache,
    /// A stream silent this long is a failed request.
    pub stall_timeout: Span,
    /// The seed of prompt synthesis.
    pub seed: u64,
    /// The validity thresholds of a measured cell.
    pub validity: Validity,
    /// Copied into every record.
    pub labels: BTreeMap<String, String>,
    /// The latency objectives cells are judged against (absent from plans of older runs).
    #[serde(default, skip_serializing_if = "Slo::is_empty")]
    pub slo: Slo,
    /// The longest prompt + output the engine takes, when known: drawn prompt lengths stay
    /// within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// The engine's KV-cache capacity in tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_tokens: Option<u64>,
    /// What a cell beyond `kv_tokens` gets.
    #[serde(default)]
    pub kv_overflow: KvOverflow,
    /// Shared prefixes at the start of every prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<crate::spec::Prefix>,
    /// US dollars per hour of the hardware (`hardware.cost_per_hour`): records get
    /// `usd_per_mtok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// Skip a context's load rates past the first that saturates the server
    /// (`phases.load.stop_when_saturated`).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub stop_when_saturated: bool,
    /// What synthetic prompt bodies are made of (`workload.text`).
    #[serde(default, skip_serializing_if = "is_random")]
    pub text: crate::text::TextKind,
}

fn is_random(t: &crate::text::TextKind) -> bool {
    *t == crate::text::TextKind::Random
}

fn yes() -> bool {
    true
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if"
)]
fn is_yes(b: &bool) -> bool {
    *b
}

/// Why `c` cannot hold its requests in the KV cache at once: concurrency × (prompt + the
/// most output) beyond `w.kv_tokens`. Only closed-loop cells (prefill, decode) are judged.
pub fn kv_overflow(c: &Cell, w: &Workload) -> Option<String> {
    let kv = w.kv_tokens?;
    let out = match c.measure {
        Measure::Prefill(_) => 1,
        Measure::Decode(_) => w.max_output_tokens,
        _ => return None,
    };
    let need = u64::from(c.concurrency) * (c.prompt_tokens + out);
    (need > kv).then(|| {
        format!(
            "{} × ({} + {out}) = {need} tokens > the KV cache's {kv} tokens (`workload.kv_overflow: {}`)",
            c.concurrency,
            c.prompt_tokens,
            w.kv_overflow.as_str()
        )
    })
}

impl Default for Workload {
    fn default() -> Self {
        let w = crate::spec::WorkloadSpec::default();
        Workload {
            max_output_tokens: w.max_output_tokens.0,
            prompt_cache: w.prompt_cache,
            stall_timeout: w.stall_timeout,
            seed: w.seed,
            validity: Validity::default(),
            labels: BTreeMap::new(),
            slo: Slo::default(),
            max_model_len: None,
            kv_tokens: None,
            kv_overflow: KvOverflow::default(),
            prefix: None,
            cost_per_hour: None,
            stop_when_saturated: true,
            text: w.text,
        }
    }
}

impl Workload {
    /// The settings `spec` asks for.
    pub fn of(spec: &Spec) -> Workload {
        Workload {
            max_output_tokens: spec.workload.max_output_tokens.0,
            prompt_cache: spec.workload.prompt_cache,
            stall_timeout: spec.workload.stall_timeout,
            seed: spec.workload.seed,
            validity: spec.validity.clone(),
            labels: spec.labels.clone(),
            slo: spec.slo.clone(),
            max_model_len: None,
            kv_tokens: None,
            kv_overflow: spec.workload.kv_overflow,
            prefix: spec.workload.prefix,
            cost_per_hour: spec.hardware.cost_per_hour,
            stop_when_saturated: spec
                .phases
                .load
                .as_ref()
                .is_none_or(|l| l.stop_when_saturated),
            text: spec.workload.text,
        }
    }

    /// Whether each slot warms one prompt and reuses it.
    pub fn warm(&self) -> bool {
        self.prompt_cache == PromptCache::Warm
    }
}
