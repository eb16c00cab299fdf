//! Images in prompts (docs/spec.md): `workload.images`, how many images each chat prompt
//! carries and how large they are, each a fixed value or drawn around a mean like the load
//! phase's lengths, from a seed of its own; and `model.image_limit`, the limits the served
//! model states (vLLM's `--limit-mm-per-prompt`, its largest image), checked before a run.

use super::load::{Distribution, Spread};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Images attached to every chat prompt (`workload.images`), after its text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Images {
    /// Images per prompt: a number (0 or more), or `{mean, distribution, spread}`.
    pub count: Amount,
    /// Each image's width in pixels: a number (1 or more), or `{mean, distribution, spread}`.
    pub width: Amount,
    /// Each image's height in pixels: a number (1 or more), or `{mean, distribution, spread}`.
    pub height: Amount,
    /// `png` or `jpeg`, made in process and sent as a `data:` URL.
    #[serde(default)]
    pub format: ImageFormat,
    /// Seed of the counts, sizes and pixels; the same seed and prompt give the same images.
    #[serde(default = "one")]
    pub seed: u64,
}

fn one() -> u64 {
    1
}

/// A fixed value, or values drawn around a mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Amount {
    /// Always this value.
    Fixed(u32),
    /// Drawn around `mean` as `phases.load.input` draws lengths.
    Drawn(Drawn),
}

/// Values drawn around a mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Drawn {
    /// The centre.
    pub mean: u32,
    /// `uniform` in [mean × (1 − spread), mean × (1 + spread)]; `normal` or `lognormal`
    /// with standard deviation mean × spread.
    pub distribution: Distribution,
    /// The width, as a fraction of the mean.
    #[schemars(range(min = 0.0))]
    pub spread: f64,
}

impl Amount {
    /// The centre: the fixed value or the mean.
    pub fn mean(&self) -> u32 {
        match self {
            Amount::Fixed(v) => *v,
            Amount::Drawn(d) => d.mean,
        }
    }

    /// The largest value a draw can give before clamping: `None` when unbounded (a normal
    /// or log-normal tail).
    pub fn most(&self) -> Option<u64> {
        match self {
            Amount::Fixed(v) => Some(u64::from(*v)),
            Amount::Drawn(d) if d.spread == 0.0 => Some(u64::from(d.mean)),
            Amount::Drawn(d) if d.distribution == Distribution::Uniform => {
                Some((f64::from(d.mean) * (1.0 + d.spread)).round() as u64)
            }
            Amount::Drawn(_) => None,
        }
    }

    /// The spread to draw with, `None` for a fixed value.
    pub fn spread(&self) -> Option<Spread> {
        match self {
            Amount::Fixed(_) => None,
            Amount::Drawn(d) => Some(Spread {
                distribution: d.distribution,
                spread: d.spread,
            }),
        }
    }
}

/// The encoding of the images sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ImageFormat {
    /// PNG (stored, uncompressed: the size on the wire is the pixels').
    #[default]
    Png,
    /// Baseline JPEG.
    Jpeg,
}

impl ImageFormat {
    /// The MIME type of a `data:` URL.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// What the served model accepts (`model.image_limit`): a spec whose images exceed it is
/// refused before the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageLimit {
    /// Images per prompt (vLLM's `--limit-mm-per-prompt '{"image": N}'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_prompt: Option<u32>,
    /// The widest image, pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub width: Option<u32>,
    /// The tallest image, pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub height: Option<u32>,
}

/// How the simulated model takes images (`engine.sim.images`); absent keys keep the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimImages {
    /// Prompt tokens an image costs: a number for every image (gemma-3's 256, the default),
    /// or `{patch: P}` for one token per P × P patch, ⌈w/P⌉ · ⌈h/P⌉ (Qwen2-VL: 28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<SimImageTokens>,
    /// The most images a prompt may carry (vLLM's `--limit-mm-per-prompt`); default 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_per_prompt: Option<u32>,
    /// The longest side an image may have, pixels; default 4096.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_side: Option<u32>,
}

/// Prompt tokens per image in the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SimImageTokens {
    /// The same for every image.
    Fixed(u32),
    /// One per patch.
    Patch {
        /// The patch's side, pixels.
        #[schemars(range(min = 1))]
        patch: u32,
    },
}
