//! A Prometheus histogram as the simulator publishes it, with vLLM's bucket bounds (V1
//! engine, `vllm/v1/metrics/loggers.py`; the same bounds as a real vLLM 0.32 serves, see
//! `tests/fixtures/vllm/metrics-after.txt`).

use std::fmt::Write;

/// vLLM's `vllm:time_to_first_token_seconds` buckets.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// vLLM's `vllm:inter_token_latency_seconds` and
/// `vllm:request_time_per_output_token_seconds` buckets.
pub const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// vLLM's request-latency buckets: `vllm:e2e_request_latency_seconds` and
/// `vllm:request_queue_time_seconds`.
pub const REQUEST_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// A Prometheus histogram: counts per bucket (not cumulative), then the overflow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// Count one observation of `secs`.
    pub fn observe(&mut self, secs: f64) {
        let i = self.bounds.partition_point(|b| *b < secs);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.sum += secs;
    }

    /// The exposition of this histogram called `name`; every sample carries `labels`
    /// (`engine`, `model_name`) with `le` in its sorted place, as vLLM's Prometheus client
    /// writes them.
    pub fn render(&self, out: &mut String, name: &str, help: &str, labels: &[(&str, &str)]) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count;
            let le = self
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| format!("{b:?}"));
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            let _ = writeln!(out, "{name}_bucket{} {cumulative}.0", label_set(&with_le));
        }
        let set = label_set(labels);
        let _ = writeln!(out, "{name}_count{set} {cumulative}.0");
        let _ = writeln!(out, "{name}_sum{set} {:?}", self.sum);
    }
}

/// `{a="1",b="2"}` with the names sorted, as Python's Prometheus client writes them.
pub fn label_set(labels: &[(&str, &str)]) -> String {
    let mut sorted = labels.to_vec();
    sorted.sort_by_key(|(k, _)| *k);
    let inner: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{{{}}}", inner.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_count_into_vllm_buckets() {
        let mut h = Histogram::new(TTFT_BUCKETS);
        h.observe(0.001); // on a bound: counted in it (le)
        h.observe(0.03);
        h.observe(9999.0);
        let mut out = String::new();
        h.render(&mut out, "t", "help", &[("z", "b")]);
        assert!(out.contains("t_bucket{le=\"0.001\",z=\"b\"} 1.0"), "{out}");
        assert!(out.contains("t_bucket{le=\"0.02\",z=\"b\"} 1.0"), "{out}");
        assert!(out.contains("t_bucket{le=\"0.04\",z=\"b\"} 2.0"), "{out}");
        assert!(out.contains("t_bucket{le=\"2560.0\",z=\"b\"} 2.0"), "{out}");
        assert!(out.contains("t_bucket{le=\"+Inf\",z=\"b\"} 3.0"), "{out}");
        assert!(out.contains("t_count{z=\"b\"} 3.0"), "{out}");
        assert!(out.contains("t_sum{z=\"b\"} 9999.031"), "{out}");
    }
}
