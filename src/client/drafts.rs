//! The drafts the responses reported (llama.cpp's `timings.draft_n` and
//! `timings.draft_n_accepted` in a response's last chunk), kept as the responses end, so that
//! a cell can sum those of its window.

use std::sync::Mutex;
use tokio::time::Instant;

/// What the responses of a window said of their drafts, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DraftSum {
    /// Draft tokens proposed.
    pub draft: u64,
    /// Draft tokens accepted.
    pub accepted: u64,
    /// Those responses' generated tokens.
    pub completion: u64,
}

/// The drafts of the responses that reported theirs, as they end.
#[derive(Debug, Default)]
pub struct Drafts {
    ended: Mutex<Vec<(Instant, DraftSum)>>,
}

impl Drafts {
    /// A response that ended at `at` reported `one`.
    pub fn ended(&self, at: Instant, one: DraftSum) {
        if let Ok(mut v) = self.ended.lock() {
            v.push((at, one));
        }
    }

    /// The sum over the responses that ended in `open..=close`, forgetting every response
    /// kept so far; `None` when none did.
    pub fn take(&self, open: Instant, close: Instant) -> Option<DraftSum> {
        let all = self
            .ended
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .ok()?;
        let mut inside = all.iter().filter(|(at, _)| *at >= open && *at <= close);
        let first = inside.next()?.1;
        Some(inside.fold(first, |s, (_, e)| DraftSum {
            draft: s.draft + e.draft,
            accepted: s.accepted + e.accepted,
            completion: s.completion + e.completion,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_only_and_once() {
        let t0 = Instant::now();
        let s = std::time::Duration::from_secs(1);
        let d = Drafts::default();
        let one = |accepted| DraftSum {
            draft: 16,
            accepted,
            completion: 20,
        };
        d.ended(t0, one(4));
        d.ended(t0 + s, one(12));
        d.ended(t0 + 2 * s, one(10));
        d.ended(t0 + 3 * s, one(16));
        let got = d.take(t0 + s, t0 + 2 * s);
        assert_eq!(
            got,
            Some(DraftSum {
                draft: 32,
                accepted: 22,
                completion: 40
            })
        );
        assert_eq!(d.take(t0, t0 + 9 * s), None, "taken once");
    }
}
