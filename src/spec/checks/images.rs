//! Meaning checks of `workload.images` (docs/spec.md): images need the chat endpoint, an
//! image has at least one pixel a side, and no image or count exceeds `model.image_limit`.

use super::Checker;
use crate::spec::diag::Problem;
use crate::spec::images::{Amount, ImageLimit};
use crate::spec::load::Distribution;
use crate::spec::workload::ApiSpec;

/// Every problem of `workload.images`.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    if cx.json.pointer("/workload/images").is_none() {
        return;
    }
    if cx.or("/workload/api", ApiSpec::Completions) == Some(ApiSpec::Completions) {
        out.push(Problem::error(
            "/workload/images",
            "images are sent as chat content parts: set `workload.api: chat`",
        ));
    }
    let limit: ImageLimit = cx
        .field("/model/image_limit")
        .ok()
        .flatten()
        .unwrap_or_default();
    // The simulator's own limit (vLLM's `--limit-mm-per-prompt`) where the model states none.
    let sim_limit = cx
        .json
        .pointer("/engine/kind")
        .filter(|k| k.as_str() == Some("sim"))
        .and_then(|_| cx.field::<u32>("/engine/sim/images/limit_per_prompt").ok())
        .flatten();
    match (limit.per_prompt, sim_limit) {
        (None, Some(cap)) => amount(cx, "count", 0, Some(cap), SIM_LIMIT, out),
        _ => amount(
            cx,
            "count",
            0,
            limit.per_prompt,
            "model.image_limit.per_prompt",
            out,
        ),
    }
    amount(cx, "width", 1, limit.width, "model.image_limit.width", out);
    amount(
        cx,
        "height",
        1,
        limit.height,
        "model.image_limit.height",
        out,
    );
}

/// Where the simulator's limit of images a prompt is set.
const SIM_LIMIT: &str = "engine.sim.images.limit_per_prompt";

/// `workload.images.<key>`: at least `least`, and within `cap` (the key `name` sets).
fn amount(
    cx: &Checker<'_>,
    key: &str,
    least: u32,
    cap: Option<u32>,
    name: &str,
    out: &mut Vec<Problem>,
) {
    let ptr = format!("/workload/images/{key}");
    let Ok(Some(a)) = cx.field::<Amount>(&ptr) else {
        return;
    };
    if a.mean() < least {
        out.push(Problem::error(
            &ptr,
            format!(
                "an image's {key} is at least {least}; this spec says {}",
                a.mean()
            ),
        ));
    }
    if let Amount::Drawn(d) = a
        && least > 0
        && d.distribution == Distribution::Uniform
        && d.spread >= 1.0
    {
        out.push(Problem::error(
            &format!("{ptr}/spread"),
            format!(
                "a uniform spread of {} reaches {key} 0; use a value below 1",
                d.spread
            ),
        ));
    }
    let Some(cap) = cap else { return };
    match a.most() {
        Some(most) if most > u64::from(cap) => out.push(Problem::error(
            &ptr,
            format!(
                "{key} reaches {most}, over the limit of {cap} (`{name}`): \
                 the server refuses such requests; lower it"
            ),
        )),
        None if a.mean() > cap => out.push(Problem::error(
            &ptr,
            format!(
                "the mean {key} {} is over the limit of {cap} (`{name}`); lower it",
                a.mean()
            ),
        )),
        _ => {}
    }
}
