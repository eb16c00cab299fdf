//! The prefix cache's reuse as the client expected it against the server's own count.

/// A warning when the server reused far fewer prompt tokens from its prefix cache than the
/// prompts sent let it (less than half of `expected`, itself 10% or more).
pub(super) fn prefix_warning(expected: Option<f64>, server: Option<f64>) -> Option<String> {
    let (e, s) = (expected?, server?);
    (e >= 0.1 && s < e / 2.0).then(|| {
        format!(
            "prefix caching looks disabled: server hit rate {:.0}% vs {:.0}% expected (is the engine's prefix caching on, and its KV cache large enough to keep the shared prefixes?)",
            s * 100.0,
            e * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_server_reusing_far_less_than_expected_is_warned_about() {
        let cases = [
            (Some(0.5), Some(0.03), true),
            (Some(0.5), Some(0.26), false),
            (Some(0.5), Some(0.24), true),
            (Some(0.05), Some(0.0), false),
            (None, Some(0.0), false),
            (Some(0.5), None, false),
        ];
        for (expected, server, warned) in cases {
            let w = super::prefix_warning(expected, server);
            assert_eq!(w.is_some(), warned, "{expected:?} {server:?}: {w:?}");
        }
        let w = super::prefix_warning(Some(0.5), Some(0.03)).unwrap_or_default();
        assert!(
            w.starts_with("prefix caching looks disabled: server hit rate 3% vs 50% expected"),
            "{w}"
        );
    }
}
