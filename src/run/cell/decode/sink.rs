//! The decode window's shared counters: each slot's live [`Gauge`] (read by progress a few
//! times a second) and the cell's latency histograms, fed in batches by the slots' tallies
//! ([`Sink`]). Nothing crosses tasks per chunk.

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
