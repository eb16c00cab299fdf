//! A cell's requests server by server, when a run spreads them over several (replicas,
//! endpoints), and adapter by adapter, when a run spreads them over LoRA adapters
//! (`workload.adapters`): `by_endpoint` and `by_adapter` in the record (docs/results.md).

use super::stats::{Latencies, round};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One server's share of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EndpointUse {
    /// The server's base URL.
    pub url: String,
    /// Requests started in the window that went to it (as `requests_started` counts them).
    pub requests: u64,
    /// Its output tokens over the window, per second.
    pub total_tok_s: Option<f64>,
    /// The median TTFT of its requests, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Its own running requests, mean over the window's scrapes (`telemetry.server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_mean: Option<f64>,
    /// Its own highest KV-cache usage, 0 to 1 (`telemetry.server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage_max: Option<f64>,
}

/// One LoRA adapter's share of a cell (`workload.adapters`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdapterUse {
    /// The adapter's name (the requests' `model`).
    pub adapter: String,
    /// Requests started in the window that went to it (as `requests_started` counts them).
    pub requests: u64,
    /// Its output tokens over the window, per second.
    pub total_tok_s: Option<f64>,
    /// The median TTFT of its requests, ms.
    pub ttft_ms_p50: Option<f64>,
}

/// What is counted of one server (or one adapter) while a cell runs.
#[derive(Debug, Clone, Default)]
pub struct Share {
    /// Requests started in the window.
    pub requests: u64,
    /// Output tokens in the window.
    pub tokens: f64,
    /// TTFT of its requests.
    pub ttft: Latencies,
}

/// Each server's [`Share`] of a cell, by its place in the run's list, and each adapter's,
/// by its place in the mix.
#[derive(Debug, Clone, Default)]
pub struct Shares(Vec<Share>, Vec<Share>);

/// The share at `index` of `list`, grown to hold it.
fn grown(list: &mut Vec<Share>, index: usize) -> &mut Share {
    if list.len() <= index {
        list.resize_with(index + 1, Share::default);
    }
    &mut list[index]
}

impl Shares {
    /// The share of server `index`.
    pub fn of(&mut self, index: usize) -> &mut Share {
        grown(&mut self.0, index)
    }

    /// Count `f` in the share of server `endpoint` and in that of `adapter`, if any.
    pub fn each(&mut self, endpoint: usize, adapter: Option<usize>, f: impl Fn(&mut Share)) {
        f(self.of(endpoint));
        if let Some(a) = adapter {
            f(grown(&mut self.1, a));
        }
    }

    /// Add `other`'s counts (another slot's, another shard's).
    pub fn merge(&mut self, other: &Shares) {
        for (mine, theirs) in [(&mut self.0, &other.0), (&mut self.1, &other.1)] {
            for (i, o) in theirs.iter().enumerate() {
                let s = grown(mine, i);
                s.requests += o.requests;
                s.tokens += o.tokens;
                s.ttft.merge(&o.ttft);
            }
        }
    }

    /// The record's `by_adapter` over a window of `span_s` seconds, the adapters named in
    /// the mix's order: `None` without a mix.
    pub fn adapter_fields(&self, names: &[String], span_s: f64) -> Option<Vec<AdapterUse>> {
        if names.is_empty() {
            return None;
        }
        let none = Share::default();
        let rows = names.iter().enumerate().map(|(i, name)| {
            let (requests, total_tok_s, ttft_ms_p50) = self.1.get(i).unwrap_or(&none).row(span_s);
            AdapterUse {
                adapter: name.clone(),
                requests,
                total_tok_s,
                ttft_ms_p50,
            }
        });
        Some(rows.collect())
    }

    /// The record's `by_endpoint` over a window of `span_s` seconds: `None` with one server.
    pub fn fields(&self, urls: &[String], span_s: f64) -> Option<Vec<EndpointUse>> {
        if urls.len() < 2 {
            return None;
        }
        let none = Share::default();
        let rows = urls.iter().enumerate().map(|(i, url)| {
            let (requests, total_tok_s, ttft_ms_p50) = self.0.get(i).unwrap_or(&none).row(span_s);
            EndpointUse {
                url: url.clone(),
                requests,
                total_tok_s,
                ttft_ms_p50,
                running_mean: None,
                kv_usage_max: None,
            }
        });
        Some(rows.collect())
    }
}

impl Share {
    /// Its row's figures over `span_s` seconds: requests, output tok/s, TTFT p50 (ms).
    fn row(&self, span_s: f64) -> (u64, Option<f64>, Option<f64>) {
        let tok_s = (span_s > 0.0).then(|| round(self.tokens / span_s, 1));
        (self.requests, tok_s, self.ttft.summary().map(|t| t.p50))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_merge_and_become_fields() {
        let mut a = Shares::default();
        a.of(0).requests = 3;
        a.of(0).tokens = 30.0;
        a.of(0).ttft.record_s(0.010);
        let mut b = Shares::default();
        b.of(1).requests = 2;
        b.of(1).tokens = 10.0;
        b.of(0).ttft.record_s(0.030);
        a.merge(&b);
        let urls = ["http://a:1".to_string(), "http://b:2".to_string()];
        let got = a.fields(&urls, 2.0).unwrap_or_default();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].requests, got[0].total_tok_s), (3, Some(15.0)));
        assert_eq!((got[1].requests, got[1].total_tok_s), (2, Some(5.0)));
        assert!(
            got[0]
                .ttft_ms_p50
                .is_some_and(|t| (9.9..=30.1).contains(&t))
        );
        assert_eq!(got[1].ttft_ms_p50, None);
        assert!(a.fields(&urls[..1], 2.0).is_none(), "one server: no field");
    }

    /// Adapter shares count beside the server's, merge, and become `by_adapter` rows in the
    /// mix's order; without a mix, no field.
    #[test]
    fn adapter_shares_become_their_rows() {
        let mut a = Shares::default();
        a.each(0, Some(1), |s| s.requests += 1);
        a.each(0, Some(1), |s| s.tokens += 8.0);
        a.each(0, None, |s| s.requests += 1);
        let mut b = Shares::default();
        b.each(0, Some(0), |s| s.requests += 2);
        a.merge(&b);
        assert_eq!(a.of(0).requests, 4, "the server counts every request");
        let names = ["x".to_string(), "y".to_string()];
        let got = a.adapter_fields(&names, 4.0).unwrap_or_default();
        let rows: Vec<(&str, u64, Option<f64>)> = got
            .iter()
            .map(|r| (r.adapter.as_str(), r.requests, r.total_tok_s))
            .collect();
        assert_eq!(rows, [("x", 2, Some(0.0)), ("y", 1, Some(2.0))]);
        assert!(a.adapter_fields(&[], 4.0).is_none());
    }
}
