//! The sessions phase of spec v1 (docs/spec.md): multi-turn conversations, closed loop (users
//! each running sessions back to back: cells `sessions/<ctx>/u<U>`) or open loop (new
//! sessions per second: `sessions/<ctx>/r<R>`). Each later turn resends the whole
//! conversation so far, every answer exactly as received, plus a new user message.

use super::load::Rate;
use super::units::{Span, Tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The sessions phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sessions {
    /// Whether sessions are measured.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The first turn's prompt lengths; default: `matrix.contexts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Tokens>>,
    /// Closed loop: this many users, each running sessions back to back (a cell each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<u32>,
    /// Open loop: new sessions per second, arriving as `phases.load.arrivals` (a cell each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<Rate>,
    /// Turns per session: a number, or `{min, max}` drawn per session.
    #[serde(default)]
    pub turns: Turns,
    /// The new user message's own tokens in each later turn.
    #[serde(default = "default_user_tokens")]
    pub user_tokens: Tokens,
    /// `max_tokens` of every turn; default: `workload.max_output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<Tokens>,
    /// The pause between an answer and the next turn: a duration, or `{mean, dist}`.
    #[serde(default)]
    pub think_time: Think,
    /// How long sessions run (the window); default 60s unless `sessions` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Span>,
    /// Instead of a duration: this many sessions, then the cell ends when they have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub sessions: Option<u32>,
}

fn yes() -> bool {
    true
}

fn default_user_tokens() -> Tokens {
    Tokens(128)
}

/// A session cell's window when the spec gives neither `duration` nor `sessions`.
pub const DEFAULT_SESSIONS_DURATION: Duration = Duration::from_secs(60);

/// Turns per session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Turns {
    /// Every session runs this many turns.
    Fixed(#[schemars(range(min = 1))] u32),
    /// Each session draws its number of turns uniformly in `[min, max]`.
    Range {
        /// The fewest turns.
        #[schemars(range(min = 1))]
        min: u32,
        /// The most turns.
        #[schemars(range(min = 1))]
        max: u32,
    },
}

impl Default for Turns {
    fn default() -> Self {
        Turns::Fixed(4)
    }
}

impl Turns {
    /// The fewest and the most turns.
    pub fn bounds(self) -> (u32, u32) {
        match self {
            Turns::Fixed(n) => (n.max(1), n.max(1)),
            Turns::Range { min, max } => (min.max(1), max.max(min).max(1)),
        }
    }
}

/// The pause before each later turn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Think {
    /// Always this long (`500ms`, `2s`).
    Fixed(Span),
    /// Drawn per pause around `mean`.
    Drawn {
        /// The mean pause.
        mean: Span,
        /// `exponential` (memoryless, like a Poisson user) or `fixed`.
        #[serde(default)]
        dist: ThinkDist,
    },
}

impl Default for Think {
    fn default() -> Self {
        Think::Fixed(Span(Duration::ZERO))
    }
}

/// How think times are drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkDist {
    /// Exponentially distributed around the mean.
    #[default]
    Exponential,
    /// Always the mean.
    Fixed,
}

impl Think {
    /// The mean pause and whether pauses are drawn exponentially.
    pub fn mean_and_drawn(self) -> (Duration, bool) {
        match self {
            Think::Fixed(s) => (s.0, false),
            Think::Drawn { mean, dist } => (mean.0, dist == ThinkDist::Exponential),
        }
    }
}
