//! The verdict every cell's record ends with (docs/results.md, verdict): valid, invalid
//! with its reasons, or failed when every request failed; and the reasons that cells share
//! (a saturated client, too many errors, no tokens).

use crate::plan::vocab::Validity;
use crate::results::{Record, Status};

/// `rec` with `reasons` added and its status: failed when every one of `attempts` failed
/// and nothing came back, invalid with reasons, else valid.
pub fn verdict(mut rec: Record, errors: u64, attempts: u64, reasons: &[String]) -> Record {
    rec.reasons.extend(reasons.iter().cloned());
    rec.status = if errors >= attempts
        && attempts > 0
        && rec.completed == 0
        && rec.output_tokens.unwrap_or(0) == 0
    {
        rec.reasons.push("every request failed".into());
        Status::Failed
    } else if rec.reasons.is_empty() {
        Status::Valid
    } else {
        Status::Invalid
    };
    rec
}

/// The validity rules every measured cell shares: a client that was itself the bottleneck,
/// and an error rate above the spec's.
pub fn shared_reasons(rec: &Record, errors: u64, started: u64, v: &Validity) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(c) = rec.client
        && c.cpu_busy > v.max_client_busy
    {
        reasons.push(format!(
            "client saturated: {:.0}% busy (more than validity.max_client_busy {:.0}%; give it more --client-threads or cores)",
            c.cpu_busy * 100.0,
            v.max_client_busy * 100.0
        ));
    }
    let rate = errors as f64 / started.max(1) as f64;
    if rate > v.max_error_rate {
        reasons.push(format!("error rate {rate:.3} > {}", v.max_error_rate));
    }
    reasons
}

/// Why an open-loop, session or replay cell is not valid, if it is not.
pub fn open_reasons(rec: &Record, validity: &Validity) -> Vec<String> {
    let mut reasons = Vec::new();
    if rec.output_tokens.unwrap_or(0) == 0 {
        reasons.push("no tokens were generated".into());
    }
    reasons.extend(shared_reasons(
        rec,
        rec.errors,
        rec.requests_started,
        validity,
    ));
    reasons
}
