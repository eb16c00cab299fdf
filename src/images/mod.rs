//! The images of `workload.images` (docs/spec.md), made in this process: each prompt's
//! count and sizes drawn from the images' seed and the prompt's text (the same prompt always
//! carries the same images, so a warm slot's prompt stays warm), painted, encoded as PNG or
//! JPEG and sent as `data:` URLs in chat content parts. [`size`] reads an image's size back
//! from its header (the simulator's side).

mod png;
pub mod size;

use crate::client::Attach;
use crate::plan::arrivals::drawn;
use crate::rng::Rng;
use crate::spec::{Amount, ImageFormat, ImageLimit, Images};
use base64::Engine as _;
use bytes::Bytes;

/// The largest side an image is made with (beyond it a draw is clamped).
pub const MAX_SIDE: u32 = 8192;
/// The most images one prompt is given (beyond it a draw is clamped).
pub const MAX_COUNT: u32 = 256;

/// Makes the images of `workload.images`.
#[derive(Debug, Clone)]
pub struct Maker {
    spec: Images,
    limit: ImageLimit,
}

impl Maker {
    /// The maker of `spec`'s images; draws from a normal or log-normal tail are clamped to
    /// `limit` (the model's, when the spec states it).
    pub fn new(spec: Images, limit: Option<ImageLimit>) -> Maker {
        Maker {
            spec,
            limit: limit.unwrap_or_default(),
        }
    }

    /// The count, and each image's width and height, of `prompt`'s images.
    pub fn shapes(&self, prompt: &str) -> Vec<(u32, u32)> {
        let mut rng = Rng::new(self.spec.seed ^ fnv(prompt.as_bytes()));
        let n = draw(
            self.spec.count,
            &mut rng,
            0,
            cap(self.limit.per_prompt, MAX_COUNT),
        );
        let (w_cap, h_cap) = (
            cap(self.limit.width, MAX_SIDE),
            cap(self.limit.height, MAX_SIDE),
        );
        (0..n)
            .map(|_| {
                let w = draw(self.spec.width, &mut rng, 1, w_cap);
                (w, draw(self.spec.height, &mut rng, 1, h_cap))
            })
            .collect()
    }
}

impl Attach for Maker {
    fn attach(&self, prompt: &str) -> (u32, Bytes) {
        let shapes = self.shapes(prompt);
        let mut rng = Rng::new(self.spec.seed.rotate_left(17) ^ fnv(prompt.as_bytes()));
        let mut out = Vec::new();
        for &(w, h) in &shapes {
            let pixels = paint(w, h, &mut rng);
            let bytes = match self.spec.format {
                ImageFormat::Png => png::encode(w, h, &pixels),
                ImageFormat::Jpeg => jpeg(w, h, &pixels),
            };
            out.extend_from_slice(b",{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:");
            out.extend_from_slice(self.spec.format.mime().as_bytes());
            out.extend_from_slice(b";base64,");
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .as_bytes(),
            );
            out.extend_from_slice(b"\"}}");
        }
        (shapes.len() as u32, Bytes::from(out))
    }
}

fn cap(limit: Option<u32>, most: u32) -> u32 {
    limit.map_or(most, |l| l.min(most))
}

/// One value of `a`, between `least` and `most`.
fn draw(a: Amount, rng: &mut Rng, least: u32, most: u32) -> u32 {
    let v = match a.spread() {
        None => f64::from(a.mean()),
        Some(sp) => drawn(f64::from(a.mean()), sp, rng),
    };
    (v.round().max(0.0) as u32).clamp(least, most.max(least))
}

/// RGB pixels of a `w` × `h` image: smooth bands whose slope and phase come from `rng`, so
/// that no two images are alike (an engine's image cache sees each as new) and JPEG keeps
/// them small.
fn paint(w: u32, h: u32, rng: &mut Rng) -> Vec<u8> {
    let mut draw = |m: f64| (rng.unit() * m) as u32;
    let bands: [(u32, u32, u32); 3] =
        std::array::from_fn(|_| (draw(7.0) + 1, draw(5.0) + 1, draw(255.0)));
    let mut px = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h {
        for x in 0..w {
            for (a, b, c) in &bands {
                px.push(
                    (x.wrapping_mul(*a)
                        .wrapping_add(y.wrapping_mul(*b))
                        .wrapping_add(*c)
                        & 0xff) as u8,
                );
            }
        }
    }
    px
}

/// Baseline JPEG of RGB `pixels`, quality 90; sides are at most [`MAX_SIDE`] < 65536.
fn jpeg(w: u32, h: u32, pixels: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut out, 90);
    let (w, h) = (
        u16::try_from(w).unwrap_or(u16::MAX),
        u16::try_from(h).unwrap_or(u16::MAX),
    );
    // The pixels are w × h × 3 and the sides fit: the encoder cannot refuse them.
    let _ = enc.encode(pixels, w, h, jpeg_encoder::ColorType::Rgb);
    out
}

/// FNV-1a of `bytes`: the prompt's part of its images' seed.
pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;
