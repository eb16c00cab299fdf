//! What a twin describes — the engine's kind and version, the model, the hardware, the
//! variant — and the checks on it: `fit` fits one engine (runs or variants of several are
//! refused unless `--engine`, `--model` or `--variant` picks one), `predict` says when the
//! spec names another (and `--strict` refuses).

use super::{Twin, TwinError};
use crate::rundir::Run;
use crate::spec::Spec;
use serde::{Deserialize, Serialize};

/// The engine a run's cells (or a twin) describe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `engine.kind`: `vllm`, `sglang`, `llama-cpp`, `sim`…
    pub kind: String,
    /// The version the engine reported.
    pub version: Option<String>,
    /// The served model.
    pub model: String,
    /// The spec's hardware (`H200 NVL linux`), when it names any.
    pub hardware: Option<String>,
    /// The engine variant its cells were measured on.
    pub variant: Option<String>,
}

impl Identity {
    /// `engine vllm 0.27.2, model gemma, hardware H200 NVL, variant mns128`.
    pub fn label(&self) -> String {
        let mut s = format!("engine {}", self.kind);
        if let Some(v) = &self.version {
            s.push_str(&format!(" {v}"));
        }
        s.push_str(&format!(", model {}", self.model));
        if let Some(h) = &self.hardware {
            s.push_str(&format!(", hardware {h}"));
        }
        if let Some(v) = &self.variant {
            s.push_str(&format!(", variant {v}"));
        }
        s
    }

    /// The same engine: kind, model and variant equal, version and hardware where both runs
    /// say them (an imported run says neither).
    fn same(&self, o: &Identity) -> bool {
        let agree = |a: &Option<String>, b: &Option<String>| a.is_none() || b.is_none() || a == b;
        self.kind == o.kind
            && self.model == o.model
            && self.variant == o.variant
            && agree(&self.version, &o.version)
            && agree(&self.hardware, &o.hardware)
    }

    fn of(run: &Run, variant: Option<&str>) -> Identity {
        let facts = variant
            .and_then(|v| run.manifest.variants.iter().find(|f| f.name == v))
            .map_or(&run.manifest.engine, |f| &f.engine);
        let hardware = run.spec.hardware.summary();
        Identity {
            kind: facts.kind.clone(),
            version: facts.reported_version.clone(),
            model: run.spec.model.served_name.clone(),
            hardware: (!hardware.is_empty()).then_some(hardware),
            variant: variant.map(str::to_string),
        }
    }
}

/// `fit --engine`, `--model`, `--variant`: which engine of the runs to fit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Select<'a> {
    /// An engine kind, or kind and version as `fit` prints them (`vllm 0.27.2`).
    pub engine: Option<&'a str>,
    /// A served model.
    pub model: Option<&'a str>,
    /// An engine variant's name.
    pub variant: Option<&'a str>,
}

/// Keep the runs (and cells) `sel` picks; refuse when what is left describes more than one
/// engine, model, hardware or variant. What the kept cells describe.
pub fn select(runs: &mut Vec<Run>, sel: Select) -> Result<Identity, TwinError> {
    let variant = one_variant(runs, sel.variant)?;
    let picked = |i: &Identity| {
        sel.engine.is_none_or(|e| {
            e == i.kind
                || Some(e)
                    == i.version
                        .as_ref()
                        .map(|v| format!("{} {v}", i.kind))
                        .as_deref()
        }) && sel.model.is_none_or(|m| m == i.model)
    };
    let mut ids: Vec<(String, Identity)> = Vec::new();
    runs.retain(|r| {
        let id = Identity::of(r, variant.as_deref());
        let keep = picked(&id) && !r.records.is_empty();
        if keep {
            ids.push((r.path.display().to_string(), id));
        }
        keep
    });
    let Some((_, first)) = ids.first().cloned() else {
        return Err(TwinError::Usage(
            "no run has cells of the engine, model or variant asked (--engine, --model, --variant)"
                .into(),
        ));
    };
    let others: Vec<String> = ids
        .iter()
        .filter(|(_, i)| !i.same(&first))
        .map(|(p, i)| format!("{p}: {}", i.label()))
        .collect();
    if !others.is_empty() {
        return Err(TwinError::Usage(format!(
            "the runs describe more than one engine — {}: {}; {}: a twin describes one; pick it with --engine KIND, --model NAME or --variant NAME, or fit each apart",
            ids[0].0,
            first.label(),
            others.join("; ")
        )));
    }
    Ok(first)
}

/// Keep the cells of `variant` when given; the one engine variant the cells left are of
/// (`None`: the engine without variants), refused when they are of several.
fn one_variant(runs: &mut [Run], variant: Option<&str>) -> Result<Option<String>, TwinError> {
    let mut variants: Vec<Option<String>> = Vec::new();
    for r in runs.iter_mut() {
        if let Some(v) = variant {
            r.records.retain(|x| x.variant.as_deref() == Some(v));
        }
        for x in &r.records {
            if !variants.contains(&x.variant) {
                variants.push(x.variant.clone());
            }
        }
    }
    if variants.len() > 1 {
        let names: Vec<&str> = variants.iter().flatten().map(String::as_str).collect();
        return Err(TwinError::Usage(format!(
            "the runs hold cells of {} engine variants ({}): a twin describes one engine; pick one with --variant NAME",
            variants.len(),
            names.join(", ")
        )));
    }
    Ok(variants.into_iter().flatten().next())
}

/// Where `spec` (and its variants) names another engine kind, version, model or hardware
/// than `twin` was fitted on: one line each.
pub fn mismatches(spec: &Spec, twin: &Twin) -> Vec<String> {
    let mut specs = vec![spec.clone()];
    specs.extend(spec.variants().into_iter().map(|v| v.spec));
    let mut out = Vec::new();
    let mut say = |what: &str, spec_says: &str, twin_says: &str| {
        let line =
            format!("the spec names {what} `{spec_says}`, the twin was fitted on `{twin_says}`");
        if !out.contains(&line) {
            out.push(line);
        }
    };
    for s in &specs {
        let kind = s.engine.kind.as_str();
        if kind != twin.engine_kind {
            say("engine", kind, &twin.engine_kind);
        }
        if let (Some(v), Some(t)) = (&s.engine.version, &twin.engine_version)
            && !t.starts_with(v.as_str())
        {
            say("engine version", v, t);
        }
        if s.model.served_name != twin.model {
            say("model", &s.model.served_name, &twin.model);
        }
        let hw = s.hardware.summary();
        if let Some(t) = &twin.hardware
            && !hw.is_empty()
            && &hw != t
        {
            say("hardware", &hw, t);
        }
    }
    out
}
