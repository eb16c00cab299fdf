//! Tokens that arrive in bursts (docs/results.md, TBT): a server that batches several
//! token-bearing chunks into one network write (or a proxy that buffers them) delivers them
//! at one instant, so the gaps between chunks are mostly zero (read as 1 µs) while the
//! request still takes its time per token. TBT (and ITL) then measure the gaps inside a
//! burst, not the generation speed: a record says so in a warning when its TBT p50 is under
//! a tenth of the time per token its per-request tok/s gives.

use super::Record;

/// The shortest time a token takes to be generated for one request: 50 µs, 20,000 tok/s per
/// request, beyond any engine's decode of one sequence. Tokens after a request's first that
/// arrived faster than this were delivered at once (the whole answer buffered, by a starved
/// API server or a proxy), and the client cannot see how fast they were generated.
pub const MIN_TOKEN_S: f64 = 50e-6;

/// Whether `tokens` arriving over `span_s` seconds after a request's first token can have
/// been generated in that time (not delivered at once).
pub fn generated(tokens: u64, span_s: f64) -> bool {
    span_s > 0.0 && span_s >= tokens as f64 * MIN_TOKEN_S
}

/// The median per-request tok/s of requests whose time per output token is `tpots_ms`, the
/// ones delivered at once left out (`None` when they are most), and the warning saying so.
pub fn per_request(tpots_ms: &[f64]) -> (Option<f64>, Option<String>) {
    let (mut speeds, mut bursts) = (Vec::new(), 0);
    for &t in tpots_ms.iter().filter(|t| **t > 0.0) {
        if generated(1, t / 1e3) {
            speeds.push(1e3 / t);
        } else {
            bursts += 1;
        }
    }
    let median = if bursts > speeds.len() as u64 {
        None
    } else {
        super::stats::median(&mut speeds)
    };
    (median, delivered_at_once(bursts, speeds.len()))
}

/// The warning for a cell where `bursts` of its requests (out of `bursts + measured`) had
/// their tokens delivered at once; `None` when none did.
pub fn delivered_at_once(bursts: u64, measured: usize) -> Option<String> {
    let all = bursts + measured as u64;
    (bursts > 0).then(|| {
        let left = if bursts > measured as u64 {
            "per-request tok/s is left out (most requests), "
        } else {
            "their rate is left out of per-request tok/s, "
        };
        format!(
            "{bursts} of {all} requests had their tokens delivered at once (faster than 20,000 \
             tok/s for one request: the server's API process or a proxy buffered the stream): \
             {left}and TTFT, TBT and TPOT measure the delivery, not the generation"
        )
    })
}

/// How far below 1000 ÷ per-request tok/s the TBT p50 may fall before it is flagged.
const FACTOR: f64 = 10.0;

/// The warning for `r` when its TBT p50 disagrees with its per-request tok/s by more than
/// [`FACTOR`]; `None` when they agree or either is missing.
pub fn burst_warning(r: &Record) -> Option<String> {
    let tbt = r.tbt_ms?.p50;
    let per_request = r.per_request_tok_s.filter(|v| *v > 0.0)?;
    let per_token_ms = 1000.0 / per_request;
    (tbt * FACTOR < per_token_ms).then(|| {
        format!(
            "time between tokens p50 {tbt} ms is under a tenth of the {per_token_ms:.2} ms per \
             token that {per_request} tok/s per request gives: the server sent its tokens in \
             bursts (several chunks arriving at once), so TBT and ITL measure the gaps inside \
             a burst; per-request tok/s and TPOT give the generation speed"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Summary;

    fn record(tbt_p50: Option<f64>, per_request: Option<f64>) -> Record {
        let mut r: Record = serde_json::from_str(
            r#"{"schema":"benchspec.result.v1","cell":"decode/1K/c1","phase":"decode",
                "context":1024,"concurrency":1,"status":"valid","reasons":[],
                "started_at":"2026-01-01T00:00:00Z","prompt_tokens":1024,
                "requests_started":1,"completed":1,"errors":0,"error_kinds":{},"labels":{}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        r.tbt_ms = tbt_p50.map(|p50| Summary {
            p50,
            ..Summary::default()
        });
        r.per_request_tok_s = per_request;
        r
    }

    /// Tokens after the first that arrive faster than 50 µs each were delivered, not
    /// generated: a real vLLM whose starved API server sent 32 tokens in one read read as
    /// 441,508 tok/s per request.
    #[test]
    fn tokens_delivered_at_once_have_no_rate() {
        // (tokens, span s, generated): 31 tokens need 1.55 ms at 50 µs each.
        for (tokens, span, want) in [
            (31, 0.0000702, false),
            (31, 0.0016, true),
            (31, 0.0015, false),
            (31, 0.070, true),
            (1, 0.0, false),
        ] {
            assert_eq!(generated(tokens, span), want, "{tokens} in {span} s");
        }
        // TPOTs in ms: two generated (2 ms, 4 ms: 500 and 250 tok/s), one delivered.
        let (median, warning) = per_request(&[2.0, 4.0, 0.001]);
        assert_eq!(median, Some(375.0));
        assert!(warning.is_some_and(|w| w.starts_with("1 of 3 requests")));
        let (median, warning) = per_request(&[2.0, 0.001, 0.002]);
        assert_eq!(median, None, "most were delivered at once");
        assert!(warning.is_some_and(|w| w.contains("per-request tok/s is left out")));
        assert_eq!(per_request(&[2.0, 4.0]), (Some(375.0), None));
    }

    #[test]
    fn a_tbt_far_below_the_per_token_time_is_flagged() {
        // (TBT p50 ms, per-request tok/s, flagged). 724 tok/s is 1000 / 724 = 1.381 ms a
        // token: 0.001 ms is 1/1381 of it; 0.14 ms just above a tenth (0.138 ms), 0.13 below.
        let cases = [
            (Some(0.001), Some(724.0), true),
            (Some(0.13), Some(724.0), true),
            (Some(0.14), Some(724.0), false),
            // The simulator's own pace: 3.8 ms a token, 263 tok/s.
            (Some(3.8), Some(263.2), false),
            (None, Some(724.0), false),
            (Some(0.001), None, false),
            (Some(0.001), Some(0.0), false),
        ];
        for (tbt, per_request, flagged) in cases {
            let w = burst_warning(&record(tbt, per_request));
            assert_eq!(w.is_some(), flagged, "{tbt:?} {per_request:?}: {w:?}");
        }
        let w = burst_warning(&record(Some(0.001), Some(724.0))).unwrap_or_default();
        assert!(w.contains("0.001 ms") && w.contains("1.38 ms"), "{w}");
        assert!(w.contains("bursts"), "{w}");
    }
}
