//! The load driver's accounting (docs/results.md): C slot tasks each count their own streams in a
//! [`Tally`] against a shared [`Clock`] — the window opens when all C streams produce and
//! closes exactly `duration` later, and only tokens arriving inside it count — with latency
//! samples batched into one shared [`Sink`] and live counters in [`Gauge`]s that progress
//! samples a few times a second. Nothing crosses tasks per chunk. When the window closes the
//! tallies are merged into [`Totals`].

mod clock;
mod tally;
#[cfg(test)]
mod tests;
mod totals;

pub use clock::Clock;
pub use tally::Tally;
pub use totals::Totals;

use crate::results::stats::Latencies;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

/// A slot's live counters, on a cache line of its own so that slots on different cores do
/// not contend.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Gauge {
    /// Tokens counted inside the window so far (before reconciliation).
    pub tokens: AtomicU64,
    /// Requests sent, chunks and ends seen: it moves while the slot's streams are alive.
    pub events: AtomicU64,
}

/// The cell's latency histograms, fed in batches by the slots.
#[derive(Debug, Default)]
pub struct Sink {
    hists: Mutex<(Latencies, Latencies)>,
}

impl Sink {
    /// Add TTFT and TBT samples, in microseconds.
    pub fn add(&self, ttft: &[u64], tbt: &[u64]) {
        if ttft.is_empty() && tbt.is_empty() {
            return;
        }
        if let Ok(mut h) = self.hists.lock() {
            for &us in ttft {
                h.0.record_us(us);
            }
            for &us in tbt {
                h.1.record_us(us);
            }
        }
    }

    /// The histograms (TTFT, TBT).
    pub fn take(&self) -> (Latencies, Latencies) {
        self.hists
            .lock()
            .map(|mut h| std::mem::take(&mut *h))
            .unwrap_or_default()
    }
}
