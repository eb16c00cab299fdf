//! The slots' tallies merged when the window closes: tokens (requests cut at the close
//! reconciled with the cell's tokens-per-chunk), latency summaries, per-request rates,
//! request counts, errors and the time-weighted mean of requests in flight.

use super::{Clock, Sink, Tally};
use crate::results::stats::{Latencies, median};
use std::collections::BTreeMap;

/// A cell's measurements, from all its slots.
#[derive(Debug, Default)]
pub struct Totals {
    /// Window length in seconds.
    pub length_s: f64,
    /// Output tokens inside the window (reconciled with final usage).
    pub tokens: f64,
    /// Time to first token of the cell's requests.
    pub ttft: Latencies,
    /// Time between tokens inside the window.
    pub tbt: Latencies,
    rates: Vec<f64>,
    /// Requests whose tokens were delivered at once, their rate not counted.
    pub bursts: u64,
    /// Requests in flight at some time during the window.
    pub started: u64,
    /// Requests whose last token arrived inside the window.
    pub completed: u64,
    /// Failed requests by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// Failed requests.
    pub errors: u64,
    /// Every token-bearing chunk carried usage.
    pub all_usage: bool,
    /// `usage.prompt_tokens` values that differ from the prompt sent.
    pub prompt_mismatches: u64,
    /// A `usage.prompt_tokens` the server reported.
    pub server_prompt_tokens: Option<u64>,
    active_s: f64,
    /// Per-request detail (`--save-requests`).
    pub saved: Vec<crate::rundir::WindowRequest>,
    /// Latencies of the requests that ended inside the window, for the SLO.
    pub judged: Vec<crate::results::slo::Request>,
    /// Requests, tokens and TTFT server by server.
    pub shares: crate::results::Shares,
}

impl Totals {
    /// Merge the tallies of a window that ended at `at` (its close, or the cell's end when
    /// unbounded). `prompts` are prompt lengths the server counted outside the tallies (the
    /// warm-up), `expected` the length sent.
    pub fn merge(
        clock: &Clock,
        sink: &Sink,
        mut tallies: Vec<Tally>,
        prompts: &[u64],
        expected: u64,
    ) -> Totals {
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
        for s in tallies {
            t.add(s, expected);
        }
        for &p in prompts {
            t.note_prompt(p, expected);
        }
        t
    }

    fn add(&mut self, s: Tally, expected: u64) {
        self.tokens += s.tokens;
        self.rates.extend(s.rates);
        self.bursts += s.bursts;
        self.started += s.started;
        self.completed += s.completed;
        self.errors += s.errors;
        for (k, n) in s.error_kinds {
            *self.error_kinds.entry(k).or_default() += n;
        }
        for p in s.prompts {
            self.note_prompt(p, expected);
        }
        self.active_s += s.active_s;
        self.judged.extend(s.judged);
        self.shares.merge(&s.shares);
        if let Some((_, lines)) = s.saved {
            self.saved.extend(lines);
        }
    }

    fn note_prompt(&mut self, p: u64, expected: u64) {
        self.server_prompt_tokens = Some(p);
        if p != expected {
            self.prompt_mismatches += 1;
        }
    }

    /// Time-weighted mean of requests in flight.
    pub fn avg_active(&self) -> f64 {
        if self.length_s > 0.0 {
            self.active_s / self.length_s
        } else {
            0.0
        }
    }

    /// Median per-request tok/s.
    /// Requests whose rate was measured (not delivered at once).
    pub fn measured_rates(&self) -> usize {
        self.rates.len()
    }

    pub fn per_request(&mut self) -> Option<f64> {
        // Most requests delivered at once: the client did not see the generation speed.
        if self.bursts as usize > self.rates.len() {
            return None;
        }
        median(&mut self.rates)
    }
}
