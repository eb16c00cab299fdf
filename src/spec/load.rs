//! The open-loop half of spec v1 (docs/spec.md): the `load` phase (requests arriving at a rate,
//! the way users arrive), the `capacity` search, and the `slo` every load and decode cell is
//! judged against.

use super::units::{Span, Tokens};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// A request rate in requests per second: a positive number, or `inf` (every request at once).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

impl Rate {
    /// Every request sent at once.
    pub const INF: Rate = Rate(f64::INFINITY);

    /// Whether this is `inf`.
    pub fn is_inf(self) -> bool {
        self.0.is_infinite()
    }
}

impl fmt::Display for Rate {
    /// `inf`, `4` or `0.5`: as a cell id writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_inf() {
            f.write_str("inf")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_inf() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number of requests per second, or `inf`")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
                if v == f64::INFINITY {
                    Ok(Rate::INF)
                } else if v.is_finite() && v > 0.0 {
                    Ok(Rate(v))
                } else {
                    Err(E::custom(format!(
                        "a rate must be above 0 requests per second, not {v}"
                    )))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
                self.visit_f64(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
                self.visit_f64(v as f64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                match v.trim() {
                    "inf" => Ok(Rate::INF),
                    t => t
                        .parse::<f64>()
                        .map_err(|_| {
                            E::custom(format!(
                                "`{v}` is not a rate; write e.g. `4`, `0.5` or `inf`"
                            ))
                        })
                        .and_then(|r| self.visit_f64(r)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Rate {
    fn schema_name() -> Cow<'static, str> {
        "Rate".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Requests per second offered: a number above 0, or `inf` (every request sent at once).",
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"const": "inf"}
            ]
        })
    }
}

/// How request arrival times are drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Arrivals {
    /// Exponential gaps: independent users (a Poisson process).
    #[default]
    Poisson,
    /// Gamma-distributed gaps of shape `burstiness`: below 1 burstier than Poisson, above 1
    /// more even (vLLM's `--burstiness`).
    Gamma,
    /// Every gap the same.
    Constant,
}

impl Arrivals {
    /// The name as written in a spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Gamma => "gamma",
            Arrivals::Constant => "constant",
        }
    }
}

/// The open-loop load phase: cells `load/<context>/r<rate>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// Whether the load phase runs.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The contexts measured; default: `matrix.contexts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Tokens>>,
    /// Request rates offered, requests per second, ascending; `inf` sends every request at
    /// once.
    #[schemars(length(min = 1))]
    pub rates: Vec<Rate>,
    /// How arrival times are drawn (seeded by `workload.seed`).
    #[serde(default)]
    pub arrivals: Arrivals,
    /// `gamma` only: the shape k of the gaps; their coefficient of variation is 1/√k.
    #[serde(default = "one_f")]
    #[schemars(range(min = 0.0))]
    pub burstiness: f64,
    /// At most this many requests in flight; an arrival beyond it waits in the client, and
    /// the wait is reported apart from TTFT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrency: Option<u32>,
    /// How long requests keep arriving at each rate (requests = rate × duration); default
    /// 60s when `requests` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Span>,
    /// Requests sent at each rate (instead of `duration`; needed for `inf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub requests: Option<u32>,
    /// How prompt lengths vary around the context (default: every prompt exactly the
    /// context). Each length is exact, drawn from `workload.seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Spread>,
    /// How output lengths vary around `workload.max_output_tokens` (default: all of it),
    /// forced with `ignore_eos` where the engine honours it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Spread>,
    /// A JSONL file of prompts (relative to the spec), one request a line: `{"prompt": …}`
    /// or `{"messages": […]}`, with an optional `"output_tokens"`. Its prompts keep their own
    /// lengths; they replace the synthetic ones, cycled in an order drawn from the seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub dataset: Option<String>,
    /// Measure every rate this many times (interleaved across the rates of a context);
    /// default: the spec's `repeats`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub repeats: Option<u32>,
    /// Once a rate saturates the server (its requests complete at under 90% of the rate they
    /// were sent at, or the client's `max_concurrency` queue grows through the window), skip
    /// the context's higher rates with the reason `saturated at r<R>`.
    #[serde(default = "yes")]
    pub stop_when_saturated: bool,
}

/// Lengths drawn around a centre (the context, or `max_output_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    /// `uniform` in [c × (1 − spread), c × (1 + spread)] (vLLM's `--random-range-ratio`);
    /// `normal` or `lognormal` with mean c and standard deviation c × spread.
    pub distribution: Distribution,
    /// The width, as a fraction of the centre.
    #[schemars(range(min = 0.0))]
    pub spread: f64,
}

/// A length distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Every value in the range equally likely.
    Uniform,
    /// Gaussian, cut at 1 token.
    Normal,
    /// Log-normal: skewed to long values, as real prompt and answer lengths are.
    Lognormal,
}

/// The default arrival window of a load cell.
pub const DEFAULT_LOAD_DURATION: Duration = Duration::from_secs(60);

fn yes() -> bool {
    true
}
fn one_f() -> f64 {
    1.0
}

/// The axis a capacity search moves along.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SearchAxis {
    /// Requests kept in flight (closed loop, like decode cells).
    #[default]
    Concurrency,
    /// Requests per second offered (open loop, like load cells).
    Rate,
}

impl SearchAxis {
    /// The name as written in a spec.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchAxis::Concurrency => "concurrency",
            SearchAxis::Rate => "rate",
        }
    }
}

/// The capacity search: the highest concurrency or rate that meets the `slo`, found by
/// bisection over measured probes (cells `capacity/<context>/c<N>` or `…/r<R>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capacity {
    /// Whether the search runs.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// What is searched: `concurrency` or `rate`.
    #[serde(default)]
    pub search: SearchAxis,
    /// The contexts searched; default: `matrix.contexts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Tokens>>,
    /// The lowest value tried.
    #[serde(default = "one_f")]
    #[schemars(range(min = 0.0))]
    pub min: f64,
    /// The highest value tried.
    pub max: f64,
    /// Stop when the bracket is this narrow (requests, or requests per second).
    #[serde(default = "one_f")]
    #[schemars(range(min = 0.0))]
    pub precision: f64,
    /// Each probe's window: closed loop for concurrency, arrivals for rate.
    #[serde(default = "default_probe")]
    pub duration: Span,
}

fn default_probe() -> Span {
    Span(Duration::from_secs(30))
}

/// Latency objectives: any subset of metrics, each with thresholds at percentiles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Time to first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Objective>,
    /// Time per output token: (last token − first token) / (output tokens − 1), per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<Objective>,
    /// Inter-token latency: every gap between token-bearing chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<Objective>,
    /// End-to-end latency: from the send to the last token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<Objective>,
}

/// Thresholds of one metric at percentiles, e.g. `{p90: 500ms}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Objective {
    /// The median must be at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<Span>,
    /// The 90th percentile must be at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<Span>,
    /// The 95th percentile must be at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<Span>,
    /// The 99th percentile must be at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Span>,
}

impl Slo {
    /// Whether no objective is set.
    pub fn is_empty(&self) -> bool {
        self.terms().next().is_none()
    }

    /// Every threshold: (metric, percentile, limit).
    pub fn terms(&self) -> impl Iterator<Item = (SloMetric, u8, Duration)> + '_ {
        [
            (SloMetric::Ttft, &self.ttft),
            (SloMetric::Tpot, &self.tpot),
            (SloMetric::Itl, &self.itl),
            (SloMetric::E2e, &self.e2e),
        ]
        .into_iter()
        .filter_map(|(m, o)| o.as_ref().map(|o| (m, o)))
        .flat_map(|(m, o)| {
            [(50, o.p50), (90, o.p90), (95, o.p95), (99, o.p99)]
                .into_iter()
                .filter_map(move |(p, s)| s.map(|s| (m, p, s.0)))
        })
    }
}

/// A latency metric an objective is set on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// End-to-end latency.
    E2e,
}

impl SloMetric {
    /// The name as written in a spec and in reports (`TTFT`).
    pub fn as_str(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Itl => "itl",
            SloMetric::E2e => "e2e",
        }
    }
}
