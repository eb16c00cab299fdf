//! Asking a run to stop (Ctrl-C), owned by whoever runs it: the CLI listens for the signal
//! and calls [`Interrupt::request`]; a test calls it directly. On a request the cell in flight
//! is cancelled, finished cells stay on disk and the engine is stopped. The handle also knows
//! a launched engine's process group, so that a caller who must leave at once (a second
//! Ctrl-C) can kill it: the terminal's signal does not reach it. No process-global state.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio::sync::watch;

/// A stop request shared between a run and its caller.
#[derive(Debug, Clone)]
pub struct Interrupt {
    flag: Arc<watch::Sender<bool>>,
    engine_group: Arc<AtomicI32>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt {
            flag: Arc::new(watch::channel(false).0),
            engine_group: Arc::new(AtomicI32::new(0)),
        }
    }
}

impl Interrupt {
    /// A handle nobody has pulled yet.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Ask the run to stop.
    pub fn request(&self) {
        self.flag.send_replace(true);
    }

    /// Whether a stop was asked for.
    pub fn is_requested(&self) -> bool {
        *self.flag.borrow()
    }

    /// Resolves once a stop is asked for.
    pub(crate) async fn requested(&self) {
        let mut rx = self.flag.subscribe();
        if rx.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// The process group of the engine the run launched, while it runs.
    pub fn engine_group(&self) -> Option<i32> {
        Some(self.engine_group.load(Ordering::SeqCst)).filter(|g| *g > 0)
    }

    pub(crate) fn set_engine_group(&self, pgid: i32) {
        self.engine_group.store(pgid, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::Interrupt;

    #[tokio::test]
    async fn a_request_wakes_every_clone() {
        let a = Interrupt::new();
        let b = a.clone();
        assert!(!b.is_requested());
        let waiter = tokio::spawn(async move { b.requested().await });
        a.request();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("joined");
        assert!(a.is_requested());
        a.set_engine_group(42);
        assert_eq!(a.engine_group(), Some(42));
        a.set_engine_group(0);
        assert_eq!(a.engine_group(), None);
    }
}
