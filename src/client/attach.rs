//! Images after a chat prompt's text: the seam through which the run's image maker
//! (`crate::images`) adds content parts to a request body, and the tally of what the
//! requests that carried them sent and were charged (records' `images`).

use bytes::Bytes;
use std::sync::{Arc, Mutex};

/// What adds images to a prompt: the same prompt always gets the same images.
pub trait Attach: std::fmt::Debug + Send + Sync {
    /// The images for `prompt`: how many, and their content parts as JSON, each one
    /// preceded by a comma (`,{"type":"image_url",…}`), to follow the text part.
    fn attach(&self, prompt: &str) -> (u32, Bytes);
}

/// What the requests that carried images sent and were charged, since the last take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageTally {
    /// Chat requests sent.
    pub requests: u64,
    /// Of those, the ones with at least one image.
    pub with_images: u64,
    /// Images in them.
    pub images: u64,
    /// Of those requests, the ones the server gave a `usage.prompt_tokens` for.
    pub counted: u64,
    /// The sum of those `usage.prompt_tokens` (images included).
    pub prompt_tokens: u64,
}

/// The images of a client, shared by its clones.
#[derive(Debug, Clone)]
pub(super) struct Images {
    pub maker: Arc<dyn Attach>,
    pub tally: Arc<Mutex<ImageTally>>,
}

impl Images {
    /// Count one request of `n` images as it is sent (a request dropped in flight, as at
    /// the end of a decode window, was sent all the same).
    pub fn sent(&self, n: u32) {
        let mut t = self.lock();
        t.requests += 1;
        if n > 0 {
            t.with_images += 1;
            t.images += u64::from(n);
        }
    }

    /// Count the `usage.prompt_tokens` the server charged a request with images.
    pub fn charged(&self, usage: u64) {
        let mut t = self.lock();
        t.counted += 1;
        t.prompt_tokens += usage;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ImageTally> {
        self.tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The tally so far, reset to zero.
    pub fn take(&self) -> ImageTally {
        std::mem::take(&mut *self.lock())
    }
}
