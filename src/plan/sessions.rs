//! Session cells of the plan (docs/spec.md): multi-turn conversations, closed loop
//! (`sessions/8K/u16`: U users each running sessions back to back) or open loop
//! (`sessions/8K/r0.5`: new sessions per second), with their turns, user tokens, output
//! limit, think time and bound.

use super::{Cell, Measure};
use crate::spec::{Arrivals, DEFAULT_SESSIONS_DURATION, Rate, Spec, Tokens};
use serde::{Deserialize, Serialize};

/// How a session cell runs its conversations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SessionLoad {
    /// Closed loop: users each running sessions back to back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<u32>,
    /// Open loop: new sessions per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// How open-loop session arrivals are drawn.
    pub arrivals: Arrivals,
    /// Gamma shape (gamma arrivals only).
    pub burstiness: f64,
    /// The fewest turns of a session.
    pub turns_min: u32,
    /// The most turns of a session (drawn uniformly between).
    pub turns_max: u32,
    /// The new user message's tokens in each later turn.
    pub user_tokens: u64,
    /// `max_tokens` of every turn.
    pub output_tokens: u64,
    /// The mean pause between an answer and the next turn, seconds.
    pub think_s: f64,
    /// Pauses drawn exponentially around the mean (else always the mean).
    pub think_drawn: bool,
    /// The window, seconds (sessions running when it closes are cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Instead of a window: this many sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u32>,
}

impl SessionLoad {
    /// The mean number of turns of a session.
    pub fn turns_mean(&self) -> f64 {
        f64::from(self.turns_min + self.turns_max) / 2.0
    }
}

/// The id of a closed-loop session cell.
pub fn users_id(context: u64, users: u32) -> String {
    format!("sessions/{}/u{users}", Tokens(context))
}

/// The id of an open-loop session cell.
pub fn rate_id(context: u64, rate: Rate) -> String {
    format!("sessions/{}/r{rate}", Tokens(context))
}

/// The session cells of `ctx`: one per `users` value, then one per `rates` value.
pub(super) fn session_cells(spec: &Spec, ctx: u64, max_len: Option<u64>) -> Vec<Cell> {
    let Some(s) = &spec.phases.sessions else {
        return Vec::new();
    };
    if !s.contexts.as_ref().is_none_or(|c| c.contains(&Tokens(ctx))) {
        return Vec::new();
    }
    let base = base_load(spec, s);
    let out = base.output_tokens;
    let skip = if !s.enabled {
        Some("`phases.sessions.enabled` is false".to_string())
    } else {
        max_len
            .filter(|&max| ctx + out > max)
            .map(|max| format!("{ctx} + {out} output tokens > max_model_len {max}"))
    };
    let closed = s.users.iter().map(|&u| {
        let load = SessionLoad {
            users: Some(u),
            ..base
        };
        (users_id(ctx, u), u, load)
    });
    let open = s.rates.iter().map(|&r| {
        let load = SessionLoad {
            rate: Some(r),
            ..base
        };
        (rate_id(ctx, r), 0, load)
    });
    closed
        .chain(open)
        .map(|(id, concurrency, load)| Cell {
            id,
            variant: None,
            context: ctx,
            concurrency,
            prompt_tokens: ctx,
            clamped: false,
            measure: Measure::Sessions(load),
            skip: skip.clone(),
            estimate_s: 0.0,
            repeats: 1,
        })
        .collect()
}

/// A session cell's load as `s` (of `spec`) describes it, before its users or rate.
fn base_load(spec: &Spec, s: &crate::spec::Sessions) -> SessionLoad {
    let (turns_min, turns_max) = s.turns.bounds();
    let (think, think_drawn) = s.think_time.mean_and_drawn();
    let load = spec.phases.load.as_ref();
    let out = s
        .output_tokens
        .map_or(spec.workload.max_output_tokens.0, |t| t.0);
    SessionLoad {
        users: None,
        rate: None,
        arrivals: load.map_or(Arrivals::Poisson, |l| l.arrivals),
        burstiness: load.map_or(1.0, |l| l.burstiness),
        turns_min,
        turns_max,
        user_tokens: s.user_tokens.0,
        output_tokens: out,
        think_s: think.as_secs_f64(),
        think_drawn,
        duration_s: match (s.sessions, s.duration) {
            (Some(_), None) => None,
            (_, d) => Some(d.map_or(DEFAULT_SESSIONS_DURATION, |d| d.0).as_secs_f64()),
        },
        sessions: s.sessions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_documented() {
        assert_eq!(users_id(2048, 16), "sessions/2K/u16");
        assert_eq!(rate_id(8192, Rate(0.5)), "sessions/8K/r0.5");
    }
}
