//! A cell's requests server by server, when a run spreads them over several (replicas,
//! endpoints): `by_endpoint` in the record (docs/results.md).

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

/// What is counted of one server while a cell runs.
#[derive(Debug, Clone, Default)]
pub struct Share {
    /// Requests started in the window.
    pub requests: u64,
    /// Output tokens in the window.
    pub tokens: f64,
    /// TTFT of its requests.
    pub ttft: Latencies,
}

/// Each server's [`Share`] of a cell, by its place in the run's list.
#[derive(Debug, Clone, Default)]
pub struct Shares(Vec<Share>);

impl Shares {
    /// The share of server `index`.
    pub fn of(&mut self, index: usize) -> &mut Share {
        if self.0.len() <= index {
            self.0.resize_with(index + 1, Share::default);
        }
        &mut self.0[index]
    }

    /// Add `other`'s counts (another slot's, another shard's).
    pub fn merge(&mut self, other: &Shares) {
        for (i, o) in other.0.iter().enumerate() {
            let s = self.of(i);
            s.requests += o.requests;
            s.tokens += o.tokens;
            s.ttft.merge(&o.ttft);
        }
    }

    /// The record's `by_endpoint` over a window of `span_s` seconds: `None` with one server.
    pub fn fields(&self, urls: &[String], span_s: f64) -> Option<Vec<EndpointUse>> {
        if urls.len() < 2 {
            return None;
        }
        let none = Share::default();
        let rows = urls.iter().enumerate().map(|(i, url)| {
            let s = self.0.get(i).unwrap_or(&none);
            EndpointUse {
                url: url.clone(),
                requests: s.requests,
                total_tok_s: (span_s > 0.0).then(|| round(s.tokens / span_s, 1)),
                ttft_ms_p50: s.ttft.summary().map(|t| t.p50),
                running_mean: None,
                kv_usage_max: None,
            }
        });
        Some(rows.collect())
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
}
