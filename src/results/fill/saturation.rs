//! Whether a load cell saturated the server, from its requests' times alone: the rate at
//! which they completed fell behind the rate they were sent at, or the client's own queue
//! (`max_concurrency`) kept growing. A load sweep skips the rates above the first that
//! saturates (`phases.load.stop_when_saturated`).
//!
//! The rates compare the same requests' sends and completions between their 10th and 90th
//! percentile ranks (a server keeping up completes them as fast as they were sent; neither
//! the ramp nor the drain after the last send counts, and Poisson arrivals add no noise:
//! the same requests are on both sides), and a server falling behind also shows a latency
//! that grows: the median time from send to end of the last quarter of sends (failed requests
//! included: one that timed out waited longest) is more than 1.2× the first quarter's. A
//! burst (every request sent at once) is not judged.

/// One request's times, in seconds from the cell's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Times {
    /// When its arrival was due.
    pub due: f64,
    /// When it left the client's queue (`due` without a cap).
    pub admitted: f64,
    /// When it was sent.
    pub sent: f64,
    /// When it ended.
    pub end: f64,
    /// Whether it completed (no failure, at least one token).
    pub ok: bool,
}

/// Fewer requests, or completions, than this: too few to judge.
const MIN_SENDS: usize = 8;

/// Why the requests `reqs` saturated the server, or none.
pub fn judge(reqs: &[Times]) -> Option<String> {
    behind(reqs).or_else(|| queue_grows(reqs))
}

/// Completions behind sends, and a latency that grows.
fn behind(reqs: &[Times]) -> Option<String> {
    let mut sent: Vec<&Times> = reqs.iter().collect();
    sent.sort_by(|a, b| a.sent.total_cmp(&b.sent));
    let mut ends: Vec<f64> = reqs.iter().filter(|r| r.ok).map(|r| r.end).collect();
    ends.sort_by(f64::total_cmp);
    if sent.len() < MIN_SENDS || ends.len() < MIN_SENDS {
        return None;
    }
    let sends: Vec<f64> = sent.iter().map(|r| r.sent).collect();
    let (sent_rate, done_rate) = (rate(&sends)?, rate(&ends)?);
    let q = sent.len() / 4;
    let (early, late) = (latency(&sent[..q])?, latency(&sent[sent.len() - q..])?);
    (done_rate < 0.9 * sent_rate && late > 1.2 * early).then(|| {
        format!(
            "{done_rate:.2} req/s completed of {sent_rate:.2} req/s sent, latency {:.0} ms → {:.0} ms",
            early * 1e3,
            late * 1e3
        )
    })
}

/// Events per second between the 10th and 90th percentile ranks of sorted times `t`.
fn rate(t: &[f64]) -> Option<f64> {
    let (lo, hi) = (t.len() / 10, t.len() - 1 - t.len() / 10);
    let span = t[hi] - t[lo];
    (span > 0.0).then(|| (hi - lo) as f64 / span)
}

/// The median time from send to end of the requests of `part`, failed ones included (a
/// request that timed out waiting is the longest wait of all).
fn latency(part: &[&Times]) -> Option<f64> {
    let mut l: Vec<f64> = part.iter().map(|r| r.end - r.sent).collect();
    l.sort_by(f64::total_cmp);
    l.get(l.len() / 2).copied()
}

/// The client's queue wait of the last third of arrivals beyond the first third's by more
/// than a quarter of the arrivals' span.
fn queue_grows(reqs: &[Times]) -> Option<String> {
    if reqs.len() < MIN_SENDS {
        return None;
    }
    let mut waits: Vec<(f64, f64)> = reqs.iter().map(|r| (r.due, r.admitted - r.due)).collect();
    waits.sort_by(|a, b| a.0.total_cmp(&b.0));
    let third = waits.len() / 3;
    let mean = |w: &[(f64, f64)]| w.iter().map(|x| x.1).sum::<f64>() / w.len() as f64;
    let (early, late) = (mean(&waits[..third]), mean(&waits[waits.len() - third..]));
    let span = waits[waits.len() - 1].0 - waits[0].0;
    (late - early > 0.25 * span).then(|| {
        format!(
            "the client's queue wait grew from {:.0} ms to {:.0} ms",
            early * 1e3,
            late * 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` requests sent every `gap` s, each served in `e2e` s by a server taking at most
    /// `slots` at once in order (`slots` 0: no limit), behind a client cap of `cap`.
    fn sweep(n: usize, gap: f64, e2e: f64, slots: usize, cap: usize) -> Vec<Times> {
        let mut free: Vec<f64> = vec![0.0; if slots == 0 { n } else { slots }];
        let mut ends: Vec<f64> = Vec::new();
        (0..n)
            .map(|i| {
                let due = i as f64 * gap;
                // The client sends once one of its `cap` places is free.
                let admitted = if cap > 0 && i >= cap {
                    let mut e = ends.clone();
                    e.sort_by(f64::total_cmp);
                    due.max(e[i - cap])
                } else {
                    due
                };
                let k = (0..free.len())
                    .min_by(|&a, &b| free[a].total_cmp(&free[b]))
                    .unwrap_or(0);
                let end = admitted.max(free[k]) + e2e;
                free[k] = end;
                ends.push(end);
                Times {
                    due,
                    admitted,
                    sent: admitted,
                    end,
                    ok: true,
                }
            })
            .collect()
    }

    /// The server falls behind and the requests that waited longest time out: still
    /// saturated, judged on the ones that completed and on how long all of them took.
    #[test]
    fn timed_out_requests_count_as_waiting() {
        let mut reqs = sweep(64, 1.0 / 16.0, 0.5, 2, 0);
        for r in reqs.iter_mut().skip(20) {
            r.ok = false;
            r.end = r.sent + 30.0;
        }
        assert!(judge(&reqs).is_some());
    }

    #[test]
    fn saturation_by_completions_and_by_the_client_queue() {
        // (requests, gap s, e2e s, server slots, client cap, saturated)
        let table: [(usize, f64, f64, usize, usize, bool); 7] = [
            // 4 req/s, 0.5 s each, no limit: keeping up.
            (32, 0.25, 0.5, 0, 0, false),
            // The same against 2 slots (capacity 4/s): just keeping up.
            (32, 0.25, 0.5, 2, 0, false),
            // 16 req/s against capacity 4/s: saturated.
            (64, 1.0 / 16.0, 0.5, 2, 0, true),
            // A third over capacity (16 req/s against 12): saturated.
            (48, 1.0 / 16.0, 1.0 / 6.0, 2, 0, true),
            // A latency longer than the window: too few sends after the first completion.
            (6, 0.25, 5.0, 0, 0, false),
            // 16 req/s behind a client cap of 2 against 2 slots: the client's queue grows.
            (64, 1.0 / 16.0, 0.5, 2, 2, true),
            // 2 req/s behind the cap: no queue.
            (32, 0.5, 0.5, 2, 2, false),
        ];
        for (i, &(n, gap, e2e, slots, cap, want)) in table.iter().enumerate() {
            let got = judge(&sweep(n, gap, e2e, slots, cap));
            assert_eq!(got.is_some(), want, "row {i}: {got:?}");
        }
    }

    /// Poisson sends at 8 req/s to a server that always keeps up, each request 1.0–1.3 s:
    /// over 30 seeds, none looks saturated (the ramp and the drain are not counted).
    #[test]
    fn a_server_keeping_up_under_poisson_arrivals_is_not_saturated() {
        let mut flagged = Vec::new();
        for seed in 1..=30u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut uniform = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as f64 / (1u64 << 53) as f64
            };
            let mut t = 0.0;
            let reqs: Vec<Times> = (0..64)
                .map(|_| {
                    t += -(1.0 - uniform()).ln() / 8.0;
                    let end = t + 1.0 + 0.3 * uniform();
                    Times {
                        due: t,
                        admitted: t,
                        sent: t,
                        end,
                        ok: true,
                    }
                })
                .collect();
            if let Some(why) = judge(&reqs) {
                flagged.push((seed, why));
            }
        }
        assert!(flagged.is_empty(), "{flagged:?}");
    }
}
