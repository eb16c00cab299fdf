//! A decode cell (docs/results.md): C closed-loop slot tasks each count their own streams in a
//! [`Tally`] against a shared [`Clock`] — the window opens when all C streams produce and
//! closes exactly `duration` later, and only tokens arriving inside it count — with latency
//! samples batched into one shared [`Sink`] and live counters in [`Gauge`]s. When the window
//! closes the tallies are merged into [`Totals`] and the record is filled (`window.rs` drives
//! the cell; `clock.rs`, `tally.rs`, `totals.rs` and `sink.rs` are its accounting; the record
//! is filled in `results::fill::window`).

mod clock;
mod sink;
mod tally;
#[cfg(test)]
mod tests;
mod totals;
mod window;

pub use clock::Clock;
pub use sink::{Gauge, Sink};
pub use tally::Tally;
pub use totals::merge;
pub use window::{Step, Tick, decode};
