//! The window's clock, shared by a cell's slots without messages: how many slots have
//! produced, when the window opened and when it closes, requests that failed before it
//! opened, and a `Notify` that wakes the cell when it opens. A slot asks it where an instant
//! falls; the slot whose first token makes all C streams produce opens the window.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Where an instant falls relative to the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Before it opened (or it has not opened).
    Before,
    /// Inside: after the open, at or before the close.
    Inside,
    /// After the close.
    After,
}

/// The shared clock of one cell's window.
#[derive(Debug)]
pub struct Clock {
    base: Instant,
    slots: usize,
    duration: Option<Duration>,
    producing: AtomicUsize,
    /// Nanoseconds from `base` to the open, plus one; 0 while closed.
    open_ns: AtomicU64,
    /// Set for an unbounded window (request count) when the cell ends.
    close_ns: AtomicU64,
    /// Requests that failed before the window opened.
    pub early_failures: AtomicU64,
    /// Wakes the cell when the window opens.
    pub opened: Notify,
}

impl Clock {
    /// The clock of a window over `slots` streams, `duration` long (`None`: until the cell
    /// ends); every instant it is given is at or after `base`.
    pub fn new(base: Instant, slots: usize, duration: Option<Duration>) -> Clock {
        Clock {
            base,
            slots,
            duration,
            producing: AtomicUsize::new(0),
            open_ns: AtomicU64::new(0),
            close_ns: AtomicU64::new(0),
            early_failures: AtomicU64::new(0),
            opened: Notify::new(),
        }
    }

    /// The instant the cell started: no instant given to the clock is earlier.
    pub fn base(&self) -> Instant {
        self.base
    }

    fn encode(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64 + 1
    }

    fn decode(&self, ns: u64) -> Option<Instant> {
        (ns > 0).then(|| self.base + Duration::from_nanos(ns - 1))
    }

    /// When the window opened.
    pub fn open(&self) -> Option<Instant> {
        self.decode(self.open_ns.load(SeqCst))
    }

    /// When it closes: `duration` after the open, or when the cell ended.
    pub fn close(&self) -> Option<Instant> {
        match (self.open(), self.duration) {
            (Some(o), Some(d)) => Some(o + d),
            _ => self.decode(self.close_ns.load(SeqCst)),
        }
    }

    /// Open the window at `at` (request-count mode opens it at the first send).
    pub fn open_at(&self, at: Instant) {
        if self
            .open_ns
            .compare_exchange(0, self.encode(at), SeqCst, SeqCst)
            .is_ok()
        {
            self.opened.notify_one();
        }
    }

    /// End an unbounded window at `at`.
    pub fn end_at(&self, at: Instant) {
        let _ = self
            .close_ns
            .compare_exchange(0, self.encode(at), SeqCst, SeqCst);
    }

    /// A slot produced its first token, which arrived at `at`. The last of the C slots opens
    /// the window at the later of `at` and the instant after it is counted: a chunk another
    /// slot placed before that count saw fewer than C producing, so it is rightly before.
    pub fn produced(&self, at: Instant) {
        if self.producing.fetch_add(1, SeqCst) + 1 == self.slots {
            self.open_at(at.max(Instant::now()));
        }
    }

    /// Where `t` falls. While the last slot is between being counted and opening the window,
    /// wait for the open (a few instructions away) rather than misplace `t`.
    pub fn place(&self, t: Instant) -> Where {
        loop {
            if let Some(open) = self.open() {
                return if t <= open {
                    Where::Before
                } else if self.close().is_none_or(|c| t <= c) {
                    Where::Inside
                } else {
                    Where::After
                };
            }
            if self.producing.load(SeqCst) < self.slots {
                return Where::Before;
            }
            std::thread::yield_now();
        }
    }

    /// Whether `t` is after the close.
    pub fn after_close(&self, t: Instant) -> bool {
        self.close().is_some_and(|c| t > c)
    }
}
