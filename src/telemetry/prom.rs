//! The Prometheus text exposition format (version 0.0.4), as engines and DCGM exporters
//! serve it: one sample per line, `name{label="value",…} value [timestamp]`, `#` comments.
//! A line that does not parse is skipped — a scrape is evidence, never a reason to fail. The
//! few readings a cell needs (a gauge summed over label sets, a counter, a histogram's
//! buckets and its quantile) are methods of [`Scrape`].

use tokio::time::Instant;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric name, with any `_total`/`_bucket` suffix as written.
    pub name: String,
    /// Label pairs in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

/// Parse a whole exposition; malformed lines are left out.
pub fn parse(text: &str) -> Vec<Sample> {
    parse_where(text, &|_| true)
}

/// Parse the samples whose name `keep` accepts; the others are skipped before their labels
/// are read (an engine's exposition is mostly metrics a cell does not need).
pub fn parse_where(text: &str, keep: &dyn Fn(&str) -> bool) -> Vec<Sample> {
    text.lines().filter_map(|l| parse_line(l, keep)).collect()
}

fn parse_line(line: &str, keep: &dyn Fn(&str) -> bool) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if !keep(name) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = parse_labels(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Labels up to the closing `}`; returns them and the text after it.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_string();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((key, value));
        s = &s[end + 1..];
    }
}

/// A scrape of one endpoint at one instant.
#[derive(Debug, Clone)]
pub struct Scrape {
    /// When the answer arrived.
    pub at: Instant,
    /// Its samples.
    pub samples: Vec<Sample>,
}

/// A cumulative histogram: `(upper bound, count ≤ bound)` ascending, `+Inf` last.
pub type Buckets = Vec<(f64, f64)>;

impl Scrape {
    /// Parse `text` scraped at `at`.
    pub fn new(at: Instant, text: &str) -> Scrape {
        Scrape {
            at,
            samples: parse(text),
        }
    }

    /// Parse the samples of `text` whose name `keep` accepts.
    pub fn only(at: Instant, text: &str, keep: &dyn Fn(&str) -> bool) -> Scrape {
        Scrape {
            at,
            samples: parse_where(text, keep),
        }
    }

    /// Whether any sample's name starts with `prefix`.
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.samples.iter().any(|s| s.name.starts_with(prefix))
    }

    /// The sum over label sets of the first of `names` that is present.
    pub fn sum(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| {
            let mut found = self.samples.iter().filter(|s| s.name == *n).peekable();
            found.peek()?;
            Some(found.map(|s| s.value).sum())
        })
    }

    /// The value of label `key` on the first sample named `name`.
    pub fn label(&self, name: &str, key: &str) -> Option<&str> {
        let s = self.samples.iter().find(|s| s.name == name)?;
        s.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The buckets of histogram `name` (without `_bucket`), summed over label sets.
    pub fn buckets(&self, name: &str) -> Option<Buckets> {
        let bucket = format!("{name}_bucket");
        let mut out: Buckets = Vec::new();
        for s in self.samples.iter().filter(|s| s.name == bucket) {
            let Some(le) = s.labels.iter().find(|(k, _)| k == "le") else {
                continue;
            };
            let le = match le.1.as_str() {
                "+Inf" | "Inf" => f64::INFINITY,
                v => match v.parse::<f64>() {
                    Ok(v) => v,
                    Err(_) => continue,
                },
            };
            match out.iter_mut().find(|(b, _)| *b == le) {
                Some(slot) => slot.1 += s.value,
                None => out.push((le, s.value)),
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        (!out.is_empty()).then_some(out)
    }
}

/// `later − earlier`, bucket by bucket (a counter reset leaves the later counts).
pub fn delta(later: &Buckets, earlier: Option<&Buckets>) -> Buckets {
    later
        .iter()
        .map(|&(le, n)| {
            let before = earlier
                .and_then(|e| e.iter().find(|(b, _)| *b == le))
                .map_or(0.0, |b| b.1);
            (le, if n >= before { n - before } else { n })
        })
        .collect()
}

/// Where the `q` quantile of cumulative buckets falls: its bucket's lower bound, the count
/// below it, its upper bound and count, and the rank sought; `None` without observations.
fn locate(b: &Buckets, q: f64) -> Option<(f64, f64, f64, f64, f64)> {
    let total = b.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for &(le, count) in b {
        if count >= rank {
            return Some((lower, below, le, count, rank));
        }
        (lower, below) = (le, count);
    }
    Some((lower, below, f64::INFINITY, total, rank))
}

/// The `q` quantile of cumulative buckets, interpolated linearly inside its bucket as
/// Prometheus's `histogram_quantile` does; `None` without observations. A quantile in the
/// `+Inf` bucket is the highest finite bound. An estimate: the true quantile is anywhere in
/// the bucket [`bucket`] gives.
pub fn quantile(b: &Buckets, q: f64) -> Option<f64> {
    let (lower, below, le, count, rank) = locate(b, q)?;
    if le.is_infinite() {
        return Some(lower);
    }
    let inside = count - below;
    let frac = if inside > 0.0 {
        (rank - below) / inside
    } else {
        1.0
    };
    Some(lower + (le - lower) * frac)
}

/// The bounds `(lower, upper)` of the bucket the `q` quantile falls in (`upper` infinite in
/// the `+Inf` bucket); `None` without observations.
pub fn bucket(b: &Buckets, q: f64) -> Option<(f64, f64)> {
    locate(b, q).map(|(lower, _, le, _, _)| (lower, le))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP vllm:num_requests_running Number of requests.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:cache_config_info{block_size="16",num_gpu_blocks="4096",note="a \"q\" b"} 1.0
ttft_bucket{le="0.01"} 1
ttft_bucket{le="0.1"} 3
ttft_bucket{le="+Inf"} 4
plain 7 1700000000000
broken{le="x} 1
"#;

    #[test]
    fn parses_samples_labels_and_escapes() {
        let s = Scrape::new(Instant::now(), TEXT);
        assert_eq!(s.sum(&["vllm:num_requests_running"]), Some(5.0));
        assert_eq!(s.sum(&["absent", "plain"]), Some(7.0));
        assert_eq!(s.sum(&["absent"]), None);
        assert_eq!(
            s.label("vllm:cache_config_info", "num_gpu_blocks"),
            Some("4096")
        );
        assert_eq!(s.label("vllm:cache_config_info", "note"), Some("a \"q\" b"));
        assert!(s.has_prefix("vllm:"));
        assert_eq!(s.samples.len(), 7, "the broken line is left out");
    }

    #[test]
    fn quantiles_interpolate_like_prometheus() {
        let s = Scrape::new(Instant::now(), TEXT);
        let b = s.buckets("ttft").unwrap_or_default();
        // rank 2 of 4: the second of two observations in (0.01, 0.1].
        let p50 = quantile(&b, 0.5).unwrap_or(f64::NAN);
        assert!((p50 - 0.055).abs() < 1e-12, "{p50}");
        // rank 3.96 is in +Inf: the highest finite bound.
        assert_eq!(quantile(&b, 0.99), Some(0.1));
        let d = delta(&b, Some(&b));
        assert_eq!(quantile(&d, 0.5), None);
        let earlier = vec![(0.01, 1.0), (0.1, 1.0), (f64::INFINITY, 1.0)];
        let d = delta(&b, Some(&earlier));
        assert_eq!(d, vec![(0.01, 0.0), (0.1, 2.0), (f64::INFINITY, 3.0)]);
        assert_eq!(quantile(&d, 0.5), Some(0.01 + 0.09 * 0.75));
    }

    /// Finite buckets, total, q, the quantile and its bucket's bounds.
    type Case = (&'static [(f64, f64)], f64, f64, f64, (f64, f64));

    /// Cumulative buckets from `(le, count)` pairs, `+Inf` last with the total.
    fn hist(pairs: &[(f64, f64)], total: f64) -> Buckets {
        let mut b = pairs.to_vec();
        b.push((f64::INFINITY, total));
        b
    }

    #[test]
    fn quantiles_match_histogram_quantile_worked_by_hand() {
        // (buckets, total, q, want, bucket): each `want` worked by hand with
        // histogram_quantile's formula lower + (upper − lower) × (rank − below) / inside.
        let cases: [Case; 6] = [
            // rank 5 of 10, all 10 in (1, 2.5]: 1 + 1.5 × 5/10 = 1.75.
            (&[(1.0, 0.0), (2.5, 10.0)], 10.0, 0.5, 1.75, (1.0, 2.5)),
            // rank 9 of 10: 1 + 1.5 × 9/10 = 2.35.
            (&[(1.0, 0.0), (2.5, 10.0)], 10.0, 0.9, 2.35, (1.0, 2.5)),
            // rank 10 of 20 where 4 are ≤ 1 and 10 ≤ 2.5: the bucket's upper bound
            // (1 + 1.5 × 6/6 = 2.5), as Prometheus says; the truth is anywhere in (1, 2.5].
            (
                &[(1.0, 4.0), (2.5, 10.0), (5.0, 20.0)],
                20.0,
                0.5,
                2.5,
                (1.0, 2.5),
            ),
            // rank 2 of 4, both below in the first bucket, which starts at 0: 0.1 × 2/3.
            (
                &[(0.1, 3.0), (1.0, 4.0)],
                4.0,
                0.5,
                0.1 * 2.0 / 3.0,
                (0.0, 0.1),
            ),
            // rank 15 of 20 in (2.5, 5] holding 10 from 10: 2.5 + 2.5 × 5/10 = 3.75.
            (
                &[(1.0, 4.0), (2.5, 10.0), (5.0, 20.0)],
                20.0,
                0.75,
                3.75,
                (2.5, 5.0),
            ),
            // rank 9 of 10 in +Inf (8 finite): the highest finite bound, 5.
            (
                &[(2.5, 2.0), (5.0, 8.0)],
                10.0,
                0.9,
                5.0,
                (5.0, f64::INFINITY),
            ),
        ];
        for (pairs, total, q, want, range) in cases {
            let b = hist(pairs, total);
            let got = quantile(&b, q).unwrap_or(f64::NAN);
            assert!(
                (got - want).abs() < 1e-12,
                "{pairs:?} q{q}: {got} vs {want}"
            );
            assert_eq!(bucket(&b, q), Some(range), "{pairs:?} q{q}");
        }
        assert_eq!(bucket(&hist(&[(1.0, 0.0)], 0.0), 0.5), None);
    }
}
