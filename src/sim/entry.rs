//! The queue from the simulator's API server into its engine: each request takes a ticket when
//! it arrives and enters the engine only once every earlier ticket has entered, or been given
//! up (a request dropped while it waits hands its turn on, so it holds nobody up).

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

/// The tickets of the requests not yet in the engine.
pub(super) struct EntryQueue {
    tickets: Mutex<Tickets>,
    /// Woken whenever a ticket leaves the queue.
    turn: Notify,
}

#[derive(Default)]
struct Tickets {
    next: u64,
    waiting: BTreeSet<u64>,
}

/// A request's place in the queue; dropping it (once the request is submitted, or when the
/// request is given up) lets the next one go.
pub(super) struct Ticket<'a> {
    queue: &'a EntryQueue,
    n: u64,
}

impl EntryQueue {
    /// An empty queue.
    pub fn new() -> EntryQueue {
        EntryQueue {
            tickets: Mutex::new(Tickets::default()),
            turn: Notify::new(),
        }
    }

    /// The next place in arrival order.
    /// Requests holding a ticket: in the API server, not yet submitted to the engine.
    pub fn held(&self) -> usize {
        self.lock().waiting.len()
    }

    pub fn ticket(&self) -> Ticket<'_> {
        let mut t = self.lock();
        let n = t.next;
        t.next += 1;
        t.waiting.insert(n);
        Ticket { queue: self, n }
    }

    fn lock(&self) -> MutexGuard<'_, Tickets> {
        // The set stays consistent even if a holder panicked: each change is one call.
        self.tickets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Ticket<'_> {
    /// Ends when no earlier ticket is still waiting.
    pub async fn turn(&self) {
        loop {
            let notified = self.queue.turn.notified();
            tokio::pin!(notified);
            // Registered before the check, so a ticket leaving in between still wakes us.
            notified.as_mut().enable();
            if self.queue.lock().waiting.first() == Some(&self.n) {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.queue.lock().waiting.remove(&self.n);
        self.queue.turn.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::EntryQueue;
    use std::time::Duration;

    /// Whether `t`'s turn has come within a millisecond of the paused clock.
    async fn due(t: &super::Ticket<'_>) -> bool {
        tokio::time::timeout(Duration::from_millis(1), t.turn())
            .await
            .is_ok()
    }

    /// Turns come in ticket order; a ticket given up while waiting (the middle one here)
    /// neither holds the later one up nor lets it past an earlier one still waiting.
    #[tokio::test(start_paused = true)]
    async fn turns_follow_arrival_and_a_dropped_ticket_hands_its_turn_on() {
        let q = EntryQueue::new();
        let (a, b, c) = (q.ticket(), q.ticket(), q.ticket());
        assert!(due(&a).await, "the first ticket goes at once");
        assert!(!due(&b).await && !due(&c).await, "both wait for the first");
        drop(b);
        assert!(!due(&c).await, "b given up: c still waits for a");
        let start = tokio::time::Instant::now();
        let enter_a = async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(a);
        };
        tokio::join!(enter_a, c.turn());
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(5),
            "c goes when a enters"
        );
        drop(c);
        let d = q.ticket();
        assert!(due(&d).await, "an empty queue lets a new ticket go at once");
    }
}
