//! Images in chat prompts, as the simulator takes them: each `image_url` content part's
//! `data:` URL decoded and its size read from the PNG or JPEG header; refused as vLLM refuses
//! them (more than `limit_mm_per_prompt` images: HTTP 400 naming the limit) or larger than
//! the simulated model takes; each charged prompt tokens by the model's rule
//! ([`ImageTokens`]), which enter the engine after the text's as tokens of their own.

use crate::images::size;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many prompt tokens an image costs (`benchspec sim --image-tokens`, `engine.sim.images`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageTokens {
    /// The same count for every image, whatever its size: gemma-3's 256 (its SigLIP encoder
    /// sees a 896 × 896 resize and pools it to 256 soft tokens).
    Fixed(u32),
    /// One token per `p` × `p` patch: ⌈w / p⌉ · ⌈h / p⌉ (Qwen2-VL's rule with p = 28: 14-pixel
    /// patches merged 2 × 2).
    Patch(u32),
}

impl ImageTokens {
    /// The tokens of a `w` × `h` image.
    pub fn of(self, w: u32, h: u32) -> u64 {
        match self {
            ImageTokens::Fixed(n) => u64::from(n),
            ImageTokens::Patch(p) => {
                let p = p.max(1);
                u64::from(w.div_ceil(p)) * u64::from(h.div_ceil(p))
            }
        }
    }
}

/// The simulated model's images: their cost and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageRule {
    /// Prompt tokens per image.
    pub tokens: ImageTokens,
    /// The most images one prompt may carry (vLLM's `--limit-mm-per-prompt '{"image": N}'`).
    pub limit_per_prompt: u32,
    /// The longest side an image may have, pixels.
    pub max_side: u32,
}

impl Default for ImageRule {
    /// gemma-3's: 256 tokens an image, at most 4 a prompt (the limit the seed's launch command
    /// gives vLLM), sides of at most 4096 pixels.
    fn default() -> Self {
        ImageRule {
            tokens: ImageTokens::Fixed(256),
            limit_per_prompt: 4,
            max_side: 4096,
        }
    }
}

/// One image a prompt carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenImage {
    /// Width, pixels.
    pub w: u32,
    /// Height, pixels.
    pub h: u32,
    /// A hash of its URL: the same image is the same in the prefix cache.
    pub hash: u64,
}

/// The images in `parts` (a message's content parts) appended to `out`; an error for a
/// part whose image cannot be read.
pub fn read(parts: &[Value], out: &mut Vec<SeenImage>) -> Result<(), super::SimError> {
    for p in parts {
        if p.get("type").and_then(Value::as_str) != Some("image_url") {
            continue;
        }
        let url = p
            .pointer("/image_url/url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let index = out.len() + 1;
        let bytes = size::data_url(url).ok_or(super::SimError::ImageUrl { index })?;
        let wh = size::size(&bytes).ok_or(super::SimError::ImageFormat { index })?;
        out.push(SeenImage {
            w: wh.0,
            h: wh.1,
            hash: crate::images::fnv(url.as_bytes()),
        });
    }
    Ok(())
}

impl ImageRule {
    /// The refusal of a prompt with these images (vLLM's words where it has them), and the
    /// name of the parameter at fault; `None` when it is taken.
    pub fn refusal(&self, images: &[SeenImage]) -> Option<String> {
        let n = images.len();
        if n > self.limit_per_prompt as usize {
            // vLLM 0.32, vllm/multimodal/processing/context.py `validate_num_items`.
            return Some(format!(
                "At most {} image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit.",
                self.limit_per_prompt
            ));
        }
        let (i, SeenImage { w, h, .. }) = images
            .iter()
            .enumerate()
            .find(|(_, s)| s.w.max(s.h) > self.max_side)?;
        Some(format!(
            "image {} is {w} × {h} pixels; this model takes images of at most {} pixels a side",
            i + 1,
            self.max_side
        ))
    }

    /// The token ids standing for `images` in the engine, after the text's: as many as
    /// the rule charges each, drawn from its hash (the same image gives the same ids, so a
    /// prefix cache sees it again; another image others).
    pub fn ids(&self, images: &[SeenImage]) -> Vec<u32> {
        let mut out = Vec::new();
        for s in images {
            let mut rng = crate::rng::Rng::new(s.hash);
            let n = self.tokens.of(s.w, s.h);
            out.extend((0..n).map(|_| 1_000_000 + (rng.unit() * 1_000_000.0) as u32));
        }
        out
    }
}

/// What `/metrics` says of images (`benchspec_sim:…`, the simulator's own counters).
#[derive(Debug, Default)]
pub struct ImageCounts {
    /// Images in admitted requests.
    pub images: AtomicU64,
    /// Their prompt tokens.
    pub tokens: AtomicU64,
    /// Requests refused for their images.
    pub refused: AtomicU64,
}

impl ImageCounts {
    /// The counters in Prometheus text.
    pub fn render(&self) -> String {
        let line = |name: &str, help: &str, v: &AtomicU64| {
            format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
                v.load(Ordering::Relaxed)
            )
        };
        [
            line(
                "benchspec_sim:images_total",
                "Images in admitted prompts.",
                &self.images,
            ),
            line(
                "benchspec_sim:image_tokens_total",
                "Prompt tokens charged for images in admitted prompts.",
                &self.tokens,
            ),
            line(
                "benchspec_sim:image_requests_refused_total",
                "Requests refused for their images (count or size).",
                &self.refused,
            ),
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimError;

    /// A part that is no `data:` URL, or whose bytes are no PNG or JPEG, is refused by its
    /// place among the request's images (the text part before them not counted).
    #[test]
    fn unreadable_images_are_named_by_their_place() {
        let part = |url: &str| serde_json::json!({"type": "image_url", "image_url": {"url": url}});
        let text = serde_json::json!({"type": "text", "text": "hi"});
        let cases = [
            (
                part("http://127.0.0.1/x.png"),
                "image 1: the simulator reads base64 `data:` URLs only",
            ),
            // "aGVsbG8=" is base64 of `hello`: neither PNG nor JPEG.
            (
                part("data:image/png;base64,aGVsbG8="),
                "image 1: not a PNG or JPEG",
            ),
        ];
        for (bad, says) in cases {
            let mut out = Vec::new();
            let e = read(&[text.clone(), bad], &mut out).err();
            assert!(
                matches!(
                    e,
                    Some(SimError::ImageUrl { index: 1 } | SimError::ImageFormat { index: 1 })
                ),
                "{e:?}"
            );
            assert_eq!(e.map(|e| e.to_string()).as_deref(), Some(says));
        }
    }
}
