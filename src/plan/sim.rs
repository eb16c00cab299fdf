//! The embedded simulator as a spec asks for it: its options (profile, faults, dialect),
//! the limits it will report, and the rates a plan's estimate assumes. These adapters live
//! here so that `sim` itself depends on nothing above it.

use crate::sim::{Faults, Options, SimDialect, SimError, calibrate, find_profile, profile};
use crate::spec;

/// The simulator options a spec asks for (`engine.kind: sim`): its profile and faults, serving
/// `model.served_name`.
pub fn options_for(spec: &spec::Spec) -> Result<Options, SimError> {
    let sim = spec.engine.sim.clone().unwrap_or_default();
    let base = match &sim.twin {
        Some(path) => twin_profile(path)?,
        None => find_profile(&sim.profile)?,
    };
    let mut opts = Options::new(base.scaled(sim.time_scale));
    opts.served_name.clone_from(&spec.model.served_name);
    opts.reasoning_tokens = sim.reasoning_tokens as usize;
    opts.tokens_per_chunk = sim.tokens_per_chunk.max(1) as usize;
    opts.seed = spec.workload.seed;
    opts.lora = sim.lora.as_ref().map(|l| crate::sim::lora::LoraOptions {
        adapters: l.adapters.clone(),
        max_loras: l.max_loras.max(1) as usize,
        load_s: l.load.0.as_secs_f64(),
    });
    if let Some(kv) = sim.kv_tokens {
        opts.profile.kv_tokens = kv.0;
    }
    if let Some(n) = sim.max_num_seqs {
        opts.profile.max_num_seqs = n as usize;
    }
    if let Some(b) = sim.block_size {
        opts.profile.block_size = b.max(1) as usize;
    }
    opts.noise = sim.noise;
    opts.noise_seed = sim.noise_seed;
    opts.dialect = dialect(sim.dialect);
    if let Some(i) = sim.images {
        use crate::sim::images::ImageTokens;
        opts.images.tokens = match i.tokens {
            Some(spec::images::SimImageTokens::Fixed(n)) => ImageTokens::Fixed(n),
            Some(spec::images::SimImageTokens::Patch { patch }) => ImageTokens::Patch(patch),
            None => opts.images.tokens,
        };
        opts.images.limit_per_prompt = i.limit_per_prompt.unwrap_or(opts.images.limit_per_prompt);
        opts.images.max_side = i.max_side.unwrap_or(opts.images.max_side);
    }
    opts.speculation = sim.speculative.map(|s| crate::sim::Speculation {
        draft_tokens: s.draft_tokens.max(1) as usize,
        acceptance: [s.acceptance.random, s.acceptance.natural, s.acceptance.code],
    });
    opts.faults = Faults {
        failure_rate: sim.faults.failure_rate,
        disconnect_rate: sim.faults.disconnect_rate,
        stall_rate: sim.faults.stall_rate,
        die_after: sim.faults.die_after.map(|d| d.0),
        rate_limit_rate: sim.faults.rate_limit_rate,
        retry_after: sim.faults.retry_after.0,
    };
    Ok(opts)
}

/// The profile of the twin file at `path` (resolved by the run's configuration).
fn twin_profile(path: &str) -> Result<profile::Profile, SimError> {
    let twin = |why: String| SimError::Twin {
        path: path.to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| twin(e.to_string()))?;
    profile::from_twin(&text).map_err(|e| twin(e.to_string()))
}

/// The simulator's dialect a spec names.
pub fn dialect(d: spec::SimDialectSpec) -> SimDialect {
    use spec::SimDialectSpec as S;
    match d {
        S::Vllm => SimDialect::Vllm,
        S::LlamaCpp => SimDialect::LlamaCpp,
        S::Sglang => SimDialect::Sglang,
        S::Trtllm => SimDialect::Trtllm,
        S::Openai => SimDialect::Openai,
    }
}

/// What a `sim` engine of `spec` will report of its limits, known before it runs: its
/// profile's max_model_len (which `/v1/models` lists, apart from the trtllm and openai
/// dialects). Other engines, and a simulator running a twin (whose limits are in its file),
/// are asked at run time.
pub fn limits_for(spec: &spec::Spec) -> super::Limits {
    let none = super::Limits::default();
    if spec.engine.kind != spec::EngineKind::Sim {
        return none;
    }
    let sim = spec.engine.sim.clone().unwrap_or_default();
    if sim.twin.is_some()
        || matches!(
            sim.dialect,
            spec::SimDialectSpec::Trtllm | spec::SimDialectSpec::Openai
        )
    {
        return none;
    }
    super::Limits {
        max_model_len: profile::profile(&sim.profile).map(|p| p.max_model_len),
        ..none
    }
}

/// The rates a plan's estimate assumes for `spec`: a `sim` engine's profile knows its own
/// speed; any other engine gets the plan's stated assumption.
pub fn rates_for(spec: &spec::Spec) -> super::Rates {
    use super::Rates;
    let twin = spec.engine.sim.as_ref().is_some_and(|s| s.twin.is_some());
    if spec.engine.kind != spec::EngineKind::Sim || twin {
        return Rates::default();
    }
    let name = spec
        .engine
        .sim
        .as_ref()
        .map_or(spec::DEFAULT_SIM_PROFILE, |s| s.profile.as_str());
    let Some(p) = profile::profile(name) else {
        return Rates::default();
    };
    let scale = spec.engine.sim.as_ref().map_or(1.0, |s| s.time_scale);
    let p = if scale == 1.0 { p } else { p.scaled(scale) };
    let ctx = spec
        .matrix
        .contexts
        .first()
        .map_or(8192, |c| c.0 as usize)
        .min(p.max_model_len as usize - 1);
    // Finite, as plan.json holds it (JSON has no infinity): the `instant` profile's is.
    let prefill = calibrate::prefill_tok_s(&p, ctx).clamp(1.0, 1e9);
    let step = p.step_s + p.decode_s(1, ctx as u64);
    let decode = if step > 0.0 { 1.0 / step } else { 1e9 };
    Rates {
        prefill_tok_s: prefill,
        decode_tok_s: decode,
        source: format!(
            "from the `{}` simulator profile{}: prefill {:.0} tok/s, decode {:.0} tok/s per request",
            p.name,
            if scale == 1.0 {
                String::new()
            } else {
                format!(" at time scale {scale}")
            },
            prefill,
            decode
        ),
    }
}
