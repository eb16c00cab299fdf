//! The `scenario` of a Benchmark Report: the engine (a stack component, only where the spec
//! says how many accelerators it used: the schema requires the count) and the load as it was
//! configured — its generator (benchspec, or the peer of an imported run), where prompts came
//! from, the input and (where enforced) output lengths, turns, rate and concurrency.

use crate::interop::PeerBenchmark;
use crate::plan::{Cell, Measure, Phase};
use crate::results::{Record, TokenSource};
use crate::rundir::{Run, spec_sha256};
use crate::spec::{Distribution, EngineKind, Spread};
use serde_json::{Value, json};

/// A `SequenceLength`.
fn length(distribution: &str, value: f64) -> Value {
    json!({"distribution": distribution, "value": value})
}

/// Lengths drawn around `centre` by `spread` (docs/spec.md): uniform in centre × (1 ± s),
/// gaussian with standard deviation centre × s, log-normal as `other`; none: all `centre`.
fn drawn(centre: f64, spread: Option<Spread>) -> Value {
    let Some(s) = spread.filter(|s| s.spread > 0.0) else {
        return length("fixed", centre);
    };
    match s.distribution {
        Distribution::Uniform => {
            let mut v = length("uniform", centre);
            v["min"] = json!((centre * (1.0 - s.spread)).max(0.0).floor() as u64);
            v["max"] = json!(((centre * (1.0 + s.spread)).ceil() as u64).max(1));
            v
        }
        Distribution::Normal => {
            let mut v = length("gaussian", centre);
            v["std_dev"] = json!(centre * s.spread);
            v
        }
        Distribution::Lognormal => length("other", centre),
    }
}

/// An imported cell's lengths: `fixed` only where the peer's least and most agree, else
/// `other` around the mean, with the range when the peer's file gives it.
fn observed(mean: f64, range: Option<(f64, f64)>) -> Value {
    match range {
        Some((min, max)) if min == max => length("fixed", min),
        Some((min, max)) => {
            let mut v = length("other", mean);
            v["min"] = json!(min.max(0.0) as u64);
            v["max"] = json!((max as u64).max(1));
            v
        }
        None => length("other", mean),
    }
}

/// Whether output lengths were forced (`ignore_eos` sent: not to a hosted API).
fn enforced(run: &Run) -> bool {
    run.spec.workload.ignore_eos && run.spec.engine.kind != EngineKind::Openai
}

/// The input and output lengths of cell `c` (record `r`) as configured.
fn seq_lens(run: &Run, r: &Record, c: Option<&Cell>) -> (Value, Option<Value>) {
    let prompt = r.prompt_tokens as f64;
    let max_out = run.plan.max_output_tokens as f64;
    let forced = enforced(run);
    match c.map(|c| &c.measure) {
        Some(Measure::Prefill(_)) => (length("fixed", prompt), Some(length("fixed", 1.0))),
        Some(Measure::Decode(_)) => (
            length("fixed", prompt),
            forced.then(|| length("fixed", max_out)),
        ),
        Some(Measure::Load(l)) => {
            let dataset = run
                .spec
                .phases
                .load
                .as_ref()
                .is_some_and(|l| l.dataset.is_some());
            let input = match r.open.input_tokens_mean {
                Some(m) if dataset => length("other", m),
                _ => drawn(prompt, l.input),
            };
            (
                input,
                (forced && !dataset).then(|| drawn(max_out, l.output)),
            )
        }
        Some(Measure::Sessions(s)) => (
            length(
                "other",
                super::results::session_input_mean(r).unwrap_or(prompt),
            ),
            forced.then(|| length("fixed", s.output_tokens as f64)),
        ),
        // The trace gives each request its lengths.
        Some(Measure::Replay(_)) => (
            length("other", r.open.input_tokens_mean.unwrap_or(prompt)),
            r.open
                .output_tokens_mean
                .filter(|_| forced)
                .map(|m| length("other", m)),
        ),
        _ => (length("other", prompt), None),
    }
}

/// The load of an imported cell: the peer, its version, its lengths as seen.
fn peer_load(run: &Run, r: &Record, peer: Option<&PeerBenchmark>) -> Value {
    let i = run.manifest.imported_from.as_ref();
    let input = observed(
        r.open.input_tokens_mean.unwrap_or(r.prompt_tokens as f64),
        peer.and_then(|b| b.input_tokens_range),
    );
    let mut load = json!({
        "tool": i.map_or("unknown", |i| i.tool.as_str()),
        "tool_version": i.and_then(|i| i.version.clone()).unwrap_or_else(|| "unknown".into()),
        "source": "unknown",
        "input_seq_len": input,
    });
    // Output lengths "if enforced": shown only where every request's was the same.
    if let (Some(m), Some((min, max))) = (
        r.open.output_tokens_mean,
        peer.and_then(|b| b.output_tokens_range),
    ) && min == max
    {
        load["output_seq_len"] = observed(m, Some((min, max)));
    }
    load
}

/// The engine as a stack component, where the spec gives its accelerator count.
fn engine(run: &Run) -> Option<Value> {
    let m = &run.manifest;
    let hw = &run.spec.hardware;
    let e = &run.spec.engine;
    let replicas = if e.endpoints.is_empty() {
        e.replicas
    } else {
        e.endpoints.len() as u32
    };
    Some(json!({
        "metadata": {"label": format!("{}-0", m.engine.kind),
                     "cfg_id": spec_sha256(m.launch_command.as_deref().unwrap_or(&m.engine.kind))},
        "standardized": {
            "kind": "inference_engine",
            "tool": m.engine.kind,
            "tool_version": m.engine.reported_version.clone().unwrap_or_else(|| "unknown".into()),
            "role": "replica",
            "replicas": replicas.max(1),
            "model": {"name": run.spec.model.source.clone().unwrap_or_else(|| run.spec.model.served_name.clone())},
            "accelerator": {"model": hw.gpu.clone().unwrap_or_else(|| "unknown".into()),
                            "count": hw.gpu_count?, "parallelism": {}},
        },
        "native": {"args": {"launch_command": m.launch_command}},
    }))
}

/// The `scenario` of cell `r`.
pub(super) fn scenario(run: &Run, r: &Record, peer: Option<&PeerBenchmark>) -> Value {
    let cell = run.plan.cells.iter().find(|c| c.id == r.cell);
    let cell_json = cell
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null);
    let mut load = if r.token_source == Some(TokenSource::Imported) {
        peer_load(run, r, peer)
    } else {
        let (input, output) = seq_lens(run, r, cell);
        let mut l = json!({"tool": "benchspec", "tool_version": run.manifest.tool_version,
                           "source": "random", "input_seq_len": input});
        if run
            .spec
            .phases
            .load
            .as_ref()
            .is_some_and(|l| l.dataset.is_some())
            && r.phase == Phase::Load
        {
            l["source"] = json!("sampled");
        }
        if let Some(o) = output {
            l["output_seq_len"] = o;
        }
        l
    };
    if let Some(Measure::Sessions(s)) = cell.map(|c| &c.measure) {
        let turns = if s.turns_min == s.turns_max {
            length("fixed", f64::from(s.turns_max))
        } else {
            let mut v = length("uniform", s.turns_mean());
            v["min"] = json!(s.turns_min);
            v["max"] = json!(s.turns_max);
            v
        };
        load["multi_turn"] = json!({"enabled": true, "max_turns": turns});
    }
    if let Some(rate) = r
        .open
        .rate_offered
        .map(|x| x.0)
        .filter(|x| x.is_finite() && *x > 0.0)
    {
        load["rate_qps"] = json!(rate);
    }
    if let Some(c) = concurrency(r, cell) {
        load["concurrency"] = json!(c);
    }
    let mut v = json!({
        "load": {"metadata": {"cfg_id": spec_sha256(&cell_json.to_string()), "description": r.cell},
                 "standardized": load,
                 "native": {"config": {"cell": cell_json, "phase": r.phase.as_str()}}},
    });
    if let Some(e) = engine(run) {
        v["stack"] = json!([e]);
    }
    v
}

/// Requests kept in flight: a closed-loop cell's concurrency (a session cell's users), an
/// open-loop cell's `max_concurrency` cap; none for an uncapped open loop or a replay.
fn concurrency(r: &Record, cell: Option<&Cell>) -> Option<u32> {
    let c = match cell.map(|c| &c.measure) {
        Some(Measure::Load(l)) => l.max_concurrency,
        Some(Measure::Sessions(s)) => s.users,
        Some(Measure::Replay(_)) => None,
        _ => Some(r.concurrency),
    };
    c.filter(|c| *c >= 1)
}
