//! Meaning checks of `phases`: something is measured, the output length leaves room for
//! the prompts, a decode phase has a window or a request count, and settings that would
//! have no effect are warned about.

use super::Checker;
use crate::spec::diag::Problem;
use crate::spec::units::{Span, Tokens};
use crate::spec::workload::{DecodeMode, PrefillMode};

/// Every problem of the phases.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let prefill_on = cx.or("/phases/prefill/enabled", true);
    let decode_on = cx.or("/phases/decode/enabled", true);
    let open_on = [
        "/phases/load",
        "/phases/capacity",
        "/phases/sessions",
        "/phases/replay",
    ]
    .iter()
    .any(|p| cx.json.pointer(p).is_some() && cx.or(&format!("{p}/enabled"), true) == Some(true));
    if prefill_on == Some(false) && decode_on == Some(false) && !open_on {
        out.push(Problem::error(
            "/phases",
            "every phase is disabled, so nothing would be measured",
        ));
    }
    output_room(cx, out);
    decode_window(cx, decode_on == Some(true), out);
    prefill_repeats(cx, out);
    sessions(cx, out);
}

/// A sessions phase names its cells (`users`, `rates` or both), and its turns' range is one.
fn sessions(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let Some(s) = cx.json.pointer("/phases/sessions") else {
        return;
    };
    let empty = |k: &str| {
        s.get(k)
            .and_then(|v| v.as_array())
            .is_none_or(Vec::is_empty)
    };
    if empty("users") && empty("rates") {
        out.push(Problem::error(
            "/phases/sessions",
            "a sessions phase needs `users` (closed loop: users running sessions back to back), `rates` (open loop: new sessions per second) or both",
        ));
    }
    if let (Ok(Some(min)), Ok(Some(max))) = (
        cx.field::<u32>("/phases/sessions/turns/min"),
        cx.field::<u32>("/phases/sessions/turns/max"),
    ) && min > max
    {
        out.push(Problem::error(
            "/phases/sessions/turns/min",
            format!("`min` {min} is above `max` {max}; swap them"),
        ));
    }
    if let Ok(Some(list)) = cx.field::<Vec<Tokens>>("/phases/sessions/contexts") {
        let matrix: Option<Vec<Tokens>> = cx.field("/matrix/contexts").ok().flatten();
        super::subset(
            &list,
            matrix.as_deref(),
            "/phases/sessions/contexts",
            "matrix.contexts",
            out,
        );
    }
}

/// The output length leaves room for a prompt, and for each decode context.
fn output_room(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let max_len: Option<Tokens> = cx.field("/model/max_model_len").ok().flatten();
    let out_tokens = cx.or(
        "/workload/max_output_tokens",
        crate::spec::workload::DEFAULT_MAX_OUTPUT_TOKENS,
    );
    if let (Some(max), Some(n)) = (max_len, out_tokens) {
        if n.0 >= max.0 {
            // When the output length is the default, point at the limit the spec did write.
            let at = match cx.json.pointer("/workload/max_output_tokens") {
                Some(_) => "/workload/max_output_tokens",
                None => "/model/max_model_len",
            };
            out.push(Problem::error(
                at,
                format!(
                    "{} output tokens leave no room for a prompt in max_model_len {}",
                    n.0, max.0
                ),
            ));
        } else if let Ok(Some(list)) = cx.field::<Vec<Tokens>>("/phases/decode/contexts") {
            for (i, c) in list.iter().enumerate().filter(|(_, c)| c.0 + n.0 > max.0) {
                out.push(Problem::error(
                    &format!("/phases/decode/contexts/{i}"),
                    format!("{} + {} output tokens > max_model_len {}; remove this context or lower `workload.max_output_tokens`", c.0, n.0, max.0),
                ));
            }
        }
    }
}

/// A decode phase that runs has a request count or a window to run.
fn decode_window(cx: &Checker<'_>, decode_on: bool, out: &mut Vec<Problem>) {
    let mode = cx.or("/phases/decode/mode", DecodeMode::FixedDuration);
    if decode_on
        && mode == Some(DecodeMode::RequestCount)
        && cx.or("/phases/decode/requests", 0u32) == Some(0)
    {
        out.push(Problem::error(
            "/phases/decode/requests",
            "`request-count` mode needs `requests` of at least 1",
        ));
    }
    if decode_on
        && mode == Some(DecodeMode::FixedDuration)
        && let Ok(Some(d)) = cx.field::<Span>("/phases/decode/duration")
        && d.0.is_zero()
    {
        out.push(Problem::error(
            "/phases/decode/duration",
            "a fixed-duration window must be longer than 0s",
        ));
    }
}

/// `repeats` on a decode-warmup prefill has no effect.
fn prefill_repeats(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    let prefill_mode = cx.or("/phases/prefill/mode", PrefillMode::DecodeWarmup);
    if prefill_mode == Some(PrefillMode::DecodeWarmup)
        && cx
            .or("/phases/prefill/repeats", 1u32)
            .is_some_and(|r| r > 1)
    {
        out.push(Problem::warning("/phases/prefill/repeats", "`repeats` applies to `standalone` prefill only; decode-warmup measures one request per context"));
    }
}
