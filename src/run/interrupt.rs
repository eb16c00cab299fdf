//! Asking a run to stop (Ctrl-C), owned by whoever runs it: the CLI listens for the signal
//! and calls [`Interrupt::request`]; a test calls it directly. On a request the cell in flight
//! is cancelled, finished cells stay on disk and the engine is stopped. The handle also knows
//! the process groups of the engines it launched, so that a caller who must leave at once (a second
//! Ctrl-C) can kill it: the terminal's signal does not reach it. No process-global state.

use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A stop request shared between a run and its caller.
#[derive(Debug, Clone)]
pub struct Interrupt {
    flag: Arc<watch::Sender<bool>>,
    engine_groups: Arc<Mutex<Vec<i32>>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt {
            flag: Arc::new(watch::channel(false).0),
            engine_groups: Arc::default(),
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

    /// The process groups of the engines (replicas) the run launched, while they run.
    pub fn engine_groups(&self) -> Vec<i32> {
        self.engine_groups
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default()
    }

    /// A launched engine's group, running from now.
    pub(crate) fn add_engine_group(&self, pgid: i32) {
        if let Ok(mut g) = self.engine_groups.lock()
            && pgid > 0
        {
            g.push(pgid);
        }
    }

    /// A launched engine's group, stopped.
    pub(crate) fn remove_engine_group(&self, pgid: i32) {
        if let Ok(mut g) = self.engine_groups.lock() {
            g.retain(|p| *p != pgid);
        }
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
        a.add_engine_group(42);
        a.add_engine_group(43);
        assert_eq!(a.engine_groups(), [42, 43]);
        a.remove_engine_group(42);
        assert_eq!(a.engine_groups(), [43]);
    }
}
