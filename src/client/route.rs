//! Where each generation request goes when there are several servers (replicas, or
//! endpoints to attach to): the set of servers, each with its own keep-alive pool and a count
//! of the requests it has in flight, and the [`Balance`] that picks one per request. A
//! [`Route`] holds its server's count up until it is dropped, when its request has ended. A
//! server that refuses a connection is left out for [`DOWN_FOR`] (as a router ejects it), so
//! that a dead replica — which fails at once, and so always has the fewest in flight — does
//! not draw every request while the others serve; when every server is out, all are tried.

use super::h1;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How long a server that refused a connection is left out of the balance.
pub const DOWN_FOR: Duration = Duration::from_secs(1);

/// How requests are spread over several servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Balance {
    /// Each request to the server with the fewest in flight (ties taken in turn).
    #[default]
    LeastOutstanding,
    /// Each request to the next server in turn.
    RoundRobin,
}

/// One server.
#[derive(Debug)]
pub(super) struct Target {
    /// `http://host:port`, no trailing slash.
    pub(super) base: String,
    /// The lean HTTP/1.1 path to it (plain `http://`, not in process).
    pub(super) lean: Option<Arc<h1::Pool>>,
    outstanding: AtomicUsize,
    /// Until when it is left out, after it refused a connection.
    down_until: Mutex<Option<Instant>>,
}

impl Target {
    pub(super) fn new(base: &str, pool: usize, in_process: bool) -> Target {
        let base = base.trim_end_matches('/').to_string();
        let lean = match in_process {
            true => None,
            false => h1::Endpoint::parse(&base).map(|ep| Arc::new(h1::Pool::new(ep, pool))),
        };
        Target {
            base,
            lean,
            outstanding: AtomicUsize::new(0),
            down_until: Mutex::new(None),
        }
    }

    /// Whether it is left out at `now`.
    fn down(&self, now: Instant) -> bool {
        self.down_until
            .lock()
            .is_ok_and(|d| d.is_some_and(|until| now < until))
    }

    /// The same server (its pool shared), counted apart.
    pub(super) fn alone(&self) -> Target {
        Target {
            base: self.base.clone(),
            lean: self.lean.clone(),
            outstanding: AtomicUsize::new(0),
            down_until: Mutex::new(None),
        }
    }
}

/// The servers of a run and how requests are spread over them.
#[derive(Debug)]
pub(super) struct Targets {
    pub(super) list: Vec<Target>,
    balance: Balance,
    next: AtomicUsize,
    /// The LoRA adapters each request draws one of (`workload.adapters`).
    pub(super) mix: Option<Arc<super::adapters::Mix>>,
}

impl Targets {
    pub(super) fn new(list: Vec<Target>, balance: Balance) -> Targets {
        Targets {
            list,
            balance,
            next: AtomicUsize::new(0),
            mix: None,
        }
    }

    /// These servers, each request sent to an adapter drawn from `mix`.
    pub(super) fn with_mix(mut self, mix: Option<Arc<super::adapters::Mix>>) -> Targets {
        self.mix = mix;
        self
    }
}

/// The server one request goes to, counted in flight there until dropped.
#[derive(Debug)]
pub struct Route {
    targets: Arc<Targets>,
    index: usize,
    /// The adapter drawn for the request, by its place in the mix (`by_adapter`).
    adapter: Option<usize>,
}

impl Route {
    /// A server for the next request, by the balance.
    pub(super) fn pick(targets: &Arc<Targets>) -> Route {
        let n = targets.list.len().max(1);
        let turn = targets.next.fetch_add(1, Relaxed);
        let index = if n == 1 {
            0
        } else {
            let now = Instant::now();
            let up = |i: &usize| !targets.list[*i].down(now);
            let order = (0..n).map(|k| (turn + k) % n);
            let open: Vec<usize> = match order.clone().filter(up).count() {
                0 => order.collect(),
                _ => order.filter(up).collect(),
            };
            match targets.balance {
                // The next in turn that is not left out.
                Balance::RoundRobin => open.first().copied().unwrap_or(0),
                // The fewest in flight; among equals, the first from this turn's start, so
                // that ties rotate instead of always going to the first server.
                Balance::LeastOutstanding => open
                    .into_iter()
                    .min_by_key(|&i| targets.list[i].outstanding.load(Relaxed))
                    .unwrap_or(0),
            }
        };
        if let Some(t) = targets.list.get(index) {
            t.outstanding.fetch_add(1, Relaxed);
        }
        let adapter = targets.mix.as_ref().map(|m| m.pick());
        Route {
            targets: targets.clone(),
            index,
            adapter,
        }
    }

    /// A route to server `index` itself (a session's later turns go where its first went).
    pub(super) fn to(targets: &Arc<Targets>, index: usize) -> Route {
        let index = index.min(targets.list.len().saturating_sub(1));
        if let Some(t) = targets.list.get(index) {
            t.outstanding.fetch_add(1, Relaxed);
        }
        let adapter = targets.mix.as_ref().map(|m| m.pick());
        Route {
            targets: targets.clone(),
            index,
            adapter,
        }
    }

    /// The server's place in the run's list (`by_endpoint`).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The adapter drawn for the request, by its place in the run's mix (`by_adapter`).
    pub fn adapter(&self) -> Option<usize> {
        self.adapter
    }

    /// The adapter's name: the request's `model`.
    pub(super) fn adapter_name(&self) -> Option<&str> {
        let mix = self.targets.mix.as_ref()?;
        mix.names().get(self.adapter?).map(String::as_str)
    }

    pub(super) fn target(&self) -> Option<&Target> {
        self.targets.list.get(self.index)
    }

    /// Its server refused a connection: leave it out for [`DOWN_FOR`] (with several).
    pub(super) fn server_down(&self) {
        if self.targets.list.len() < 2 {
            return;
        }
        if let Some(mut d) = self.target().and_then(|t| t.down_until.lock().ok()) {
            *d = Some(Instant::now() + DOWN_FOR);
        }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        if let Some(t) = self.targets.list.get(self.index) {
            t.outstanding.fetch_sub(1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(n: usize, balance: Balance) -> Arc<Targets> {
        let list = (0..n)
            .map(|i| Target::new(&format!("http://127.0.0.1:{}", 9000 + i), 1, true))
            .collect();
        Arc::new(Targets::new(list, balance))
    }

    #[test]
    fn round_robin_takes_each_in_turn() {
        let t = targets(3, Balance::RoundRobin);
        let got: Vec<usize> = (0..7).map(|_| Route::pick(&t).index()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn least_outstanding_avoids_the_busy_server() {
        let t = targets(2, Balance::LeastOutstanding);
        // Server 0 holds a long request; the next three go to server 1 as long as it has
        // fewer in flight, then they are even.
        let long = Route::pick(&t);
        assert_eq!(long.index(), 0);
        let a = Route::pick(&t);
        assert_eq!(a.index(), 1);
        let b = Route::pick(&t);
        let c = Route::pick(&t);
        assert_eq!((b.index() + c.index()), 1, "one to each once they are even");
        drop((a, b, c));
        // Server 1 finished all of its requests: the next two go to it before server 0.
        let d = Route::pick(&t);
        assert_eq!(d.index(), 1);
        drop((long, d));
        // Even again: ties rotate, both servers are used.
        let seen: std::collections::BTreeSet<usize> =
            (0..4).map(|_| Route::pick(&t).index()).collect();
        assert_eq!(seen.len(), 2);
    }

    /// A server that refused a connection gets no request for a second, then is tried again;
    /// with every server out, the balance goes on as if none were.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_refuses_is_left_out_for_a_while() {
        for balance in [Balance::LeastOutstanding, Balance::RoundRobin] {
            let t = targets(3, balance);
            Route::to(&t, 1).server_down();
            let got: Vec<usize> = (0..6).map(|_| Route::pick(&t).index()).collect();
            assert!(!got.contains(&1), "{balance:?}: {got:?}");
            assert!(got.contains(&0) && got.contains(&2), "{balance:?}: {got:?}");
            tokio::time::advance(DOWN_FOR + Duration::from_millis(1)).await;
            let got: Vec<usize> = (0..6).map(|_| Route::pick(&t).index()).collect();
            assert!(
                got.contains(&1),
                "{balance:?}, back after {DOWN_FOR:?}: {got:?}"
            );
            for i in 0..3 {
                Route::to(&t, i).server_down();
            }
            let got: Vec<usize> = (0..6).map(|_| Route::pick(&t).index()).collect();
            assert_eq!(got.len(), 6, "all out: still sent");
        }
    }

    #[test]
    fn a_dropped_route_frees_its_server() {
        let t = targets(2, Balance::LeastOutstanding);
        for _ in 0..10 {
            let r = Route::pick(&t);
            drop(r);
        }
        assert!(t.list.iter().all(|s| s.outstanding.load(Relaxed) == 0));
    }
}
