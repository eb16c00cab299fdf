//! The engine's own view when requests are spread over several servers (replicas,
//! endpoints): each server's `/metrics` is scraped and read alone, then summed where the
//! quantity adds up (running, waiting, preemptions), the highest kept where it does not (KV
//! usage), and each server's running mean and KV usage kept in its `by_endpoint` row.

use super::prom::Scrape;
use super::server::{Scrapes, Seen};
use crate::client::Client;
use crate::results::stats::round;
use crate::results::{Bucket, Record, ServerUse};
use tokio::time::Instant;

/// One scrape of every server, in the client's order (`None` where one did not answer).
pub(super) async fn scrape_all(clients: &[Client]) -> Vec<Option<Scrape>> {
    futures_util::future::join_all(clients.iter().map(super::scrape)).await
}

/// Each server's view of the window `open..close`, from its scrapes before, during and after
/// (gauges from those answered at or after `gauges_from`).
pub(super) fn each(
    before: Vec<Option<Scrape>>,
    mut during: Vec<Vec<Scrape>>,
    after: Vec<Option<Scrape>>,
    (open, close, gauges_from): (Instant, Instant, Instant),
) -> Vec<Option<Seen>> {
    during.resize_with(before.len(), Vec::new);
    before
        .into_iter()
        .zip(during)
        .zip(after.into_iter().chain(std::iter::repeat_with(|| None)))
        .map(|((before, during), after)| {
            let after = after.unwrap_or_else(|| Scrape {
                at: Instant::now(),
                samples: Vec::new(),
            });
            Scrapes {
                before: before?,
                during,
                after,
            }
            .summarize_from(open, close, gauges_from)
        })
        .collect()
}

/// The servers' views as one: running, waiting and preemptions summed over the servers,
/// the highest KV usage, the mean of their prefix hit rates and latency medians. `None` when
/// no server's view is known.
pub(super) fn combine(seen: &[Option<Seen>]) -> Option<Seen> {
    let known: Vec<&Seen> = seen.iter().flatten().collect();
    let first = known.first()?;
    if seen.len() == 1 {
        return Some((*first).clone());
    }
    let all = |f: fn(&ServerUse) -> Option<f64>| -> Vec<f64> {
        known.iter().filter_map(|s| f(&s.server)).collect()
    };
    let sum = |f: fn(&ServerUse) -> Option<f64>| {
        let v = all(f);
        (!v.is_empty()).then(|| round(v.iter().sum(), 2))
    };
    let mean = |f: fn(&ServerUse) -> Option<f64>| {
        let v = all(f);
        (!v.is_empty()).then(|| round(v.iter().sum::<f64>() / v.len() as f64, 4))
    };
    let server = ServerUse {
        running_mean: sum(|s| s.running_mean),
        running_max: sum(|s| s.running_max),
        waiting_max: sum(|s| s.waiting_max),
        kv_usage_max: all(|s| s.kv_usage_max).into_iter().reduce(f64::max),
        prefix_hit_rate: mean(|s| s.prefix_hit_rate),
        preemptions: sum(|s| s.preemptions),
        ttft_ms_p50: mean(|s| s.ttft_ms_p50),
        ttft_ms_p50_bucket: span(known.iter().filter_map(|s| s.server.ttft_ms_p50_bucket)),
        itl_ms_p50: mean(|s| s.itl_ms_p50),
        itl_ms_p50_bucket: span(known.iter().filter_map(|s| s.server.itl_ms_p50_bucket)),
        source: first.server.source.clone(),
    };
    Some(Seen {
        server,
        waiting_mean: known.iter().map(|s| s.waiting_mean).sum(),
        scrapes: known.iter().map(|s| s.scrapes).min().unwrap_or(0),
        lora: known.iter().find_map(|s| s.lora.clone()),
        spec: known
            .iter()
            .filter_map(|s| s.spec.clone())
            .reduce(|a, b| a.add(&b)),
    })
}

/// Each server's running mean and KV usage in its `by_endpoint` row.
pub(super) fn rows(rec: &mut Record, seen: &[Option<Seen>]) {
    let Some(rows) = rec.by_endpoint.as_mut() else {
        return;
    };
    for (row, s) in rows.iter_mut().zip(seen) {
        if let Some(s) = s {
            row.running_mean = s.server.running_mean;
            row.kv_usage_max = s.server.kv_usage_max;
        }
    }
}

/// The buckets of several servers' medians taken together: from the lowest lower bound to
/// the highest upper bound (unbounded if any is), within which their mean lies.
fn span(buckets: impl Iterator<Item = Bucket>) -> Option<Bucket> {
    buckets.reduce(|a, b| Bucket {
        low_ms: a.low_ms.min(b.low_ms),
        high_ms: a.high_ms.zip(b.high_ms).map(|(x, y)| x.max(y)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(running: f64, kv: f64, waiting: f64) -> Option<Seen> {
        Some(Seen {
            server: ServerUse {
                running_mean: Some(running),
                running_max: Some(running.ceil()),
                waiting_max: Some(waiting),
                kv_usage_max: Some(kv),
                prefix_hit_rate: Some(0.5),
                preemptions: Some(1.0),
                ttft_ms_p50: Some(10.0),
                ttft_ms_p50_bucket: None,
                itl_ms_p50: None,
                itl_ms_p50_bucket: None,
                source: "vllm".into(),
            },
            waiting_mean: waiting,
            scrapes: 3,
            lora: None,
            spec: None,
        })
    }

    #[test]
    fn servers_add_up_where_requests_do() {
        let got = combine(&[seen(3.5, 0.25, 1.0), seen(4.0, 0.5, 0.0), None]);
        let got = got.map(|s| s.server);
        assert_eq!(got.as_ref().and_then(|s| s.running_mean), Some(7.5));
        assert_eq!(got.as_ref().and_then(|s| s.running_max), Some(8.0));
        assert_eq!(got.as_ref().and_then(|s| s.waiting_max), Some(1.0));
        assert_eq!(got.as_ref().and_then(|s| s.kv_usage_max), Some(0.5));
        assert_eq!(got.as_ref().and_then(|s| s.preemptions), Some(2.0));
        assert_eq!(got.as_ref().and_then(|s| s.prefix_hit_rate), Some(0.5));
        assert_eq!(got.as_ref().and_then(|s| s.itl_ms_p50), None);
        assert!(combine(&[None, None]).is_none());
        let one = combine(&[seen(2.0, 0.1, 0.0)]).map(|s| s.server.running_mean);
        assert_eq!(one, Some(Some(2.0)));
    }
}
