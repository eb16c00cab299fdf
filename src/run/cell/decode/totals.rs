//! The slots' tallies merged when the window closes: tokens (requests cut at the close
//! reconciled with the cell's tokens-per-chunk), latency summaries, per-request rates,
//! request counts, errors and the time-weighted mean of requests in flight, as the
//! [`Totals`] the record is filled from, and the window's per-request detail.

use super::{Clock, Sink, Tally};
use crate::results::fill::window::Totals;
use crate::rundir::WindowRequest;

/// Merge the tallies of a window that ended at `at` (its close, or the cell's end when
/// unbounded). `prompts` are prompt lengths the server counted outside the tallies (the
/// warm-up), `expected` the length sent. Returns the totals and the per-request detail
/// (`--save-requests`).
pub fn merge(
    clock: &Clock,
    sink: &Sink,
    mut tallies: Vec<Tally>,
    prompts: &[u64],
    expected: u64,
) -> (Totals, Vec<WindowRequest>) {
    let mut all_usage = true;
    let mut reconciled = (0, 0);
    for s in &tallies {
        all_usage &= s.all_usage;
        reconciled.0 += s.reconciled.0;
        reconciled.1 += s.reconciled.1;
    }
    // Requests cut at the close carry the tokens per chunk of the finished ones.
    let factor = match reconciled {
        (u, k) if k > 0 && !all_usage => u as f64 / k as f64,
        _ => 1.0,
    };
    for s in &mut tallies {
        if let Some(mut track) = s.leftover.take() {
            s.reconcile(&track, factor);
            track.rate_tokens = (track.rate_tokens as f64 * factor).round() as u64;
            s.finish_track(&mut track, factor);
        }
    }
    let (ttft, tbt) = sink.take();
    let mut t = Totals {
        all_usage,
        ttft,
        tbt,
        ..Totals::default()
    };
    if let (Some(o), Some(c)) = (clock.open(), clock.close()) {
        t.length_s = (c - o).as_secs_f64();
    }
    let mut saved = Vec::new();
    for s in tallies {
        saved.extend(add(&mut t, s, expected));
    }
    for &p in prompts {
        note_prompt(&mut t, p, expected);
    }
    (t, saved)
}

/// Add one slot's tally to `t`; its per-request detail, if it kept any.
fn add(t: &mut Totals, s: Tally, expected: u64) -> Vec<WindowRequest> {
    t.tokens += s.tokens;
    t.rates.extend(s.rates);
    t.bursts += s.bursts;
    t.started += s.started;
    t.completed += s.completed;
    t.errors += s.errors;
    for (k, n) in s.error_kinds {
        *t.error_kinds.entry(k).or_default() += n;
    }
    for p in s.prompts {
        note_prompt(t, p, expected);
    }
    t.active_s += s.active_s;
    t.judged.extend(s.judged);
    t.shares.merge(&s.shares);
    s.saved.map(|(_, lines)| lines).unwrap_or_default()
}

fn note_prompt(t: &mut Totals, p: u64, expected: u64) {
    t.server_prompt_tokens = Some(p);
    if p != expected {
        t.prompt_mismatches += 1;
    }
}
