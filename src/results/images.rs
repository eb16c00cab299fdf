//! A cell's images (`workload.images`, docs/results.md): how many its requests carried, and
//! the server's prompt tokens of those requests with their images against the text's exact
//! length without them.

use crate::client::ImageTally;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a cell's requests carried in images and were charged for them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageUse {
    /// Chat requests the cell sent (warm-ups and primes included).
    pub requests: u64,
    /// Images in them.
    pub total: u64,
    /// Images per request, their mean (`total / requests`).
    pub per_request: f64,
    /// Requests with images the server answered with a `usage.prompt_tokens`.
    pub answered: u64,
    /// The text's prompt tokens, without images: the cell's exact prompt length (with
    /// drawn lengths, their mean).
    pub text_prompt_tokens: f64,
    /// The server's `usage.prompt_tokens` of the requests with images, their mean: text and
    /// images. Null when the server said none.
    pub server_prompt_tokens: Option<f64>,
    /// `server_prompt_tokens − text_prompt_tokens`: what the server charged for a request's
    /// images, on average.
    pub image_tokens: Option<f64>,
}

impl ImageUse {
    /// The images of `t`, a cell's tally, whose text prompts were `text` tokens; `None`
    /// for a cell that sent no chat request.
    pub fn of(t: ImageTally, text: f64) -> Option<ImageUse> {
        if t.requests == 0 {
            return None;
        }
        let round = |v: f64| (v * 100.0).round() / 100.0;
        let server = (t.counted > 0).then(|| round(t.prompt_tokens as f64 / t.counted as f64));
        Some(ImageUse {
            requests: t.requests,
            total: t.images,
            per_request: round(t.images as f64 / t.requests as f64),
            answered: t.counted,
            text_prompt_tokens: round(text),
            server_prompt_tokens: server,
            image_tokens: server.map(|s| round(s - text)),
        })
    }

    /// The images of two repeats of a cell together: counts added, means weighted by what
    /// they are means of.
    pub fn merge(a: Option<ImageUse>, b: Option<ImageUse>) -> Option<ImageUse> {
        let (a, b) = match (a, b) {
            (Some(a), Some(b)) => (a, b),
            (a, b) => return a.or(b),
        };
        let server = match (a.server_prompt_tokens, b.server_prompt_tokens) {
            (Some(x), Some(y)) => Some(
                (x * a.answered as f64 + y * b.answered as f64)
                    / (a.answered + b.answered).max(1) as f64,
            ),
            (x, y) => x.or(y),
        };
        let text = (a.text_prompt_tokens + b.text_prompt_tokens) / 2.0;
        let t = ImageTally {
            requests: a.requests + b.requests,
            with_images: 0,
            images: a.total + b.total,
            counted: a.answered + b.answered,
            prompt_tokens: server
                .map_or(0, |s| (s * (a.answered + b.answered) as f64).round() as u64),
        };
        ImageUse::of(t, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_images_figures_are_worked_from_the_tally() {
        // 4 requests, 3 with images (2 + 2 + 1 = 5 images), 2 of those counted by the
        // server at 612 and 356 prompt tokens, of 100 text tokens each: per request 5/4,
        // server mean (612 + 356)/2 = 484, images 384.
        let t = ImageTally {
            requests: 4,
            with_images: 3,
            images: 5,
            counted: 2,
            prompt_tokens: 968,
        };
        let u = ImageUse::of(t, 100.0);
        assert_eq!(
            u,
            Some(ImageUse {
                requests: 4,
                total: 5,
                per_request: 1.25,
                answered: 2,
                text_prompt_tokens: 100.0,
                server_prompt_tokens: Some(484.0),
                image_tokens: Some(384.0),
            })
        );
        assert_eq!(ImageUse::of(ImageTally::default(), 100.0), None);
        // Two repeats: 4 + 4 requests, 5 + 3 images, 2 + 6 answered at 484 and 100 + 24.
        let b = ImageUse::of(
            ImageTally {
                requests: 4,
                with_images: 3,
                images: 3,
                counted: 6,
                prompt_tokens: 744,
            },
            100.0,
        );
        let m = ImageUse::merge(u, b).unwrap();
        assert_eq!((m.requests, m.total, m.answered), (8, 8, 8));
        assert_eq!(m.per_request, 1.0);
        // (2 × 484 + 6 × 124) / 8 = 214.
        assert_eq!(m.server_prompt_tokens, Some(214.0));
        assert_eq!(m.image_tokens, Some(114.0));
    }
}
