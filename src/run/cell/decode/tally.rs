//! One slot's accounting, owned by the task that reads its streams: each chunk is placed
//! against the shared [`Clock`] and counted here — tokens, gaps, first tokens, the request's
//! time in the window — with no message to another task. Latency samples are batched into
//! the cell's shared histograms a few hundred at a time; the rest is merged when the window
//! closes (`Totals`).

use super::clock::{Clock, Where};
use super::{Gauge, Sink};
use crate::client::{Chunk, Failure, Outcome};
use crate::results::{Shares, slo};
use crate::rundir::WindowRequest;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::time::Instant;

/// Latency samples kept before they are added to the shared histograms.
const BATCH: usize = 256;

/// The request a slot has in flight (a closed-loop slot has at most one).
#[derive(Debug)]
pub struct Track {
    n: u64,
    /// The server it went to (its place in the client's list).
    pub(super) endpoint: usize,
    /// The LoRA adapter it went to (its place in the mix).
    pub(super) adapter: Option<usize>,
    sent: Instant,
    /// Just before the request was written (the start of its TTFT).
    wrote: Option<Instant>,
    first: Option<Instant>,
    prev: Option<Instant>,
    pub(super) last: Option<Instant>,
    pub(super) gen_start: Option<Instant>,
    pub(super) window_tokens: u64,
    pub(super) rate_tokens: u64,
    /// Gaps (µs) of chunks counted one token each, scaled once the server's total is known.
    pub(super) gaps: Vec<u64>,
    /// Every gap of the request (µs per token), kept when an ITL objective judges it.
    itl: Vec<u32>,
}

/// What one slot counted.
#[derive(Debug)]
pub struct Tally {
    slot: usize,
    clock: Arc<Clock>,
    sink: Arc<Sink>,
    gauge: Arc<[Gauge]>,
    producing: bool,
    events: u64,
    current: Option<Track>,
    ttft: Vec<u64>,
    tbt: Vec<u64>,
    /// Output tokens inside the window (chunk-counted ones reconciled at each request's end).
    pub(super) tokens: f64,
    pub(super) rates: Vec<f64>,
    /// Requests whose tokens after the first arrived too close together to be generated
    /// (delivered at once: see `results::bursts`), whose rate is therefore not counted.
    pub(super) bursts: u64,
    pub(super) started: u64,
    pub(super) completed: u64,
    pub(super) errors: u64,
    pub(super) error_kinds: BTreeMap<String, u64>,
    pub(super) all_usage: bool,
    pub(super) prompts: Vec<u64>,
    /// Server-counted and chunk-counted tokens of finished chunk-counted requests.
    pub(super) reconciled: (u64, u64),
    /// Request-seconds in flight inside the window.
    pub(super) active_s: f64,
    pub(super) saved: Option<(Instant, Vec<WindowRequest>)>,
    /// The request still in flight when the window closed.
    pub(super) leftover: Option<Track>,
    /// The latencies of requests that ended inside the window, for the SLO.
    pub(super) judged: Vec<slo::RequestLatencies>,
    /// Requests, tokens and TTFT server by server (`by_endpoint`).
    pub(super) shares: Shares,
    keep_itl: bool,
}

impl Tally {
    /// The tally of `slot`.
    pub fn new(slot: usize, clock: Arc<Clock>, sink: Arc<Sink>, gauge: Arc<[Gauge]>) -> Tally {
        Tally {
            slot,
            clock,
            sink,
            gauge,
            producing: false,
            events: 0,
            current: None,
            ttft: Vec::new(),
            tbt: Vec::new(),
            tokens: 0.0,
            rates: Vec::new(),
            bursts: 0,
            started: 0,
            completed: 0,
            errors: 0,
            error_kinds: BTreeMap::new(),
            all_usage: true,
            prompts: Vec::new(),
            reconciled: (0, 0),
            active_s: 0.0,
            saved: None,
            leftover: None,
            judged: Vec::new(),
            shares: Shares::default(),
            keep_itl: false,
        }
    }

    /// Keep every gap of each request, for an ITL objective.
    pub fn keep_itl(&mut self) {
        self.keep_itl = true;
    }

    /// Keep one line of detail per request, times from `since` (`--save-requests`).
    pub fn save_requests(&mut self, since: Instant) {
        self.saved = Some((since, Vec::new()));
    }

    fn event(&mut self) {
        self.events += 1;
        if let Some(g) = self.gauge.get(self.slot) {
            g.events.store(self.events, Relaxed);
        }
    }

    /// Request `n` was sent at `at` to server `endpoint` (and LoRA `adapter`).
    pub fn start(&mut self, n: u64, at: Instant, (endpoint, adapter): (usize, Option<usize>)) {
        self.event();
        self.current = Some(Track {
            n,
            endpoint,
            adapter,
            sent: at,
            wrote: None,
            first: None,
            prev: None,
            last: None,
            gen_start: None,
            window_tokens: 0,
            rate_tokens: 0,
            gaps: Vec::new(),
            itl: Vec::new(),
        });
    }

    /// A token-bearing chunk of the request in flight.
    pub fn chunk(&mut self, c: Chunk) {
        if self.clock.after_close(c.at) {
            return;
        }
        self.event();
        if !self.producing {
            self.producing = true;
            self.clock.produced(c.at);
        }
        let place = self.clock.place(c.at);
        let open = self.clock.open();
        let Some(t) = &mut self.current else {
            return;
        };
        let first_chunk = t.first.is_none();
        if self.keep_itl
            && let Some(prev) = t.prev
        {
            t.itl
                .push((micros(c.at - prev) / c.tokens.max(1)).min(u64::from(u32::MAX)) as u32);
        }
        if first_chunk {
            t.first = Some(c.at);
            t.wrote = Some(c.sent);
            let ttft = micros(c.at.saturating_duration_since(c.sent));
            self.ttft.push(ttft);
            self.shares
                .each(t.endpoint, t.adapter, |s| s.ttft.record_us(ttft));
        }
        if place == Where::Inside {
            self.tokens += c.tokens as f64;
            self.shares
                .each(t.endpoint, t.adapter, |s| s.tokens += c.tokens as f64);
            t.window_tokens += c.tokens;
            if let Some(g) = self.gauge.get(self.slot) {
                g.tokens.fetch_add(c.tokens, Relaxed);
            }
            if let Some(prev) = t.prev {
                let gap = micros(c.at - prev) / c.tokens.max(1);
                if c.from_usage {
                    self.tbt.push(gap);
                } else {
                    t.gaps.push(gap);
                }
            }
            match t.gen_start {
                // A request already generating when the window opened counts from the open.
                None if !first_chunk => {
                    t.gen_start = open;
                    t.rate_tokens += c.tokens;
                }
                // One that starts inside the window counts from its first token, excluded.
                None => t.gen_start = Some(c.at),
                Some(_) => t.rate_tokens += c.tokens,
            }
        }
        t.prev = Some(c.at);
        t.last = Some(c.at);
        if self.ttft.len() >= BATCH || self.tbt.len() >= BATCH {
            self.flush();
        }
    }

    /// Add the batched latency samples to the cell's histograms.
    fn flush(&mut self) {
        self.sink.add(&self.ttft, &self.tbt);
        self.ttft.clear();
        self.tbt.clear();
    }

    /// Time the request sent at `sent` and ending at `end` spent in the window, and whether
    /// it was in flight inside it at all.
    fn in_window(&self, sent: Instant, end: Instant) -> (f64, bool) {
        let Some(open) = self.clock.open() else {
            return (0.0, false);
        };
        let close = self.clock.close();
        let until = close.map_or(end, |c| end.min(c));
        let from = sent.max(open);
        let span = if until > from {
            (until - from).as_secs_f64()
        } else {
            0.0
        };
        (span, end >= open && close.is_none_or(|c| sent <= c))
    }

    /// The request in flight ended at `at` with `out`.
    pub fn end(&mut self, out: &Outcome, at: Instant) {
        self.event();
        let Some(mut t) = self.current.take() else {
            return;
        };
        let (span, counted) = self.in_window(t.sent, at);
        self.active_s += span;
        self.started += u64::from(counted);
        self.shares
            .each(t.endpoint, t.adapter, |s| s.requests += u64::from(counted));
        self.save(&t, Some(out));
        if let Some(f) = &out.failure
            && !self.clock.after_close(at)
        {
            self.fail(f);
            if self.clock.open().is_none() {
                self.clock.early_failures.fetch_add(1, Relaxed);
            }
        }
        if let Some(p) = out.usage_prompt {
            self.prompts.push(p);
        }
        self.all_usage &= out.all_usage;
        // Chunk-counted tokens are reconciled with the final usage.
        let factor = match (out.all_usage, out.usage_completion) {
            (false, Some(u)) if out.counted > 0 => {
                self.reconciled.0 += u;
                self.reconciled.1 += out.counted;
                u as f64 / out.counted as f64
            }
            _ => 1.0,
        };
        self.reconcile(&t, factor);
        if out.failure.is_none() && t.last.is_some_and(|l| self.clock.place(l) == Where::Inside) {
            self.completed += 1;
            self.judge(&t, out.usage_completion.unwrap_or(out.counted), factor);
        } else if out.failure.is_some() && self.clock.place(at) == Where::Inside {
            self.judged.push(slo::RequestLatencies::default());
        }
        t.rate_tokens = (t.rate_tokens as f64 * factor).round() as u64;
        self.finish_track(&mut t, factor);
    }

    /// A request's chunk-counted tokens in the window made the server's count (`factor`).
    pub(super) fn reconcile(&mut self, t: &Track, factor: f64) {
        let more = (factor - 1.0) * t.window_tokens as f64;
        self.tokens += more;
        self.shares
            .each(t.endpoint, t.adapter, |s| s.tokens += more);
    }

    /// The latencies of a request that finished inside the window, for the SLO.
    fn judge(&mut self, t: &Track, tokens: u64, factor: f64) {
        let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
        let (Some(first), Some(last)) = (t.first, t.last) else {
            return;
        };
        let mut itl: Vec<f64> = t.itl.iter().map(|&g| f64::from(g) / 1e3 / factor).collect();
        itl.sort_by(f64::total_cmp);
        self.judged.push(slo::RequestLatencies {
            ok: true,
            ttft: Some(ms(t.wrote.unwrap_or(t.sent), first)),
            tpot: (tokens > 1).then(|| ms(first, last) / (tokens - 1) as f64),
            e2e: Some(ms(t.wrote.unwrap_or(t.sent), last)),
            itl,
        });
    }

    fn fail(&mut self, f: &Failure) {
        self.errors += 1;
        *self.error_kinds.entry(f.kind()).or_default() += 1;
    }

    /// A finished request's rate and its chunk-counted gaps, scaled by the server's count.
    pub(super) fn finish_track(&mut self, t: &mut Track, factor: f64) {
        if let (Some(start), Some(last)) = (t.gen_start, t.last) {
            let span = (last - start).as_secs_f64();
            if t.rate_tokens > 0 {
                if crate::results::bursts::generated(t.rate_tokens, span) {
                    self.rates.push(t.rate_tokens as f64 / span);
                } else {
                    self.bursts += 1;
                }
            }
        }
        for g in t.gaps.drain(..) {
            self.tbt.push(((g as f64) / factor).round() as u64);
        }
        self.flush();
    }

    /// The window closed (or the slot is done) at `at`: a request still in flight is
    /// measured up to the close and left for the merge to reconcile.
    pub fn close(mut self, at: Instant) -> Tally {
        if let Some(t) = self.current.take() {
            let (span, counted) = self.in_window(t.sent, self.clock.close().unwrap_or(at));
            self.active_s += span;
            self.started += u64::from(counted);
            self.shares
                .each(t.endpoint, t.adapter, |s| s.requests += u64::from(counted));
            self.save(&t, None);
            self.leftover = Some(t);
        }
        self.flush();
        self
    }

    fn save(&mut self, t: &Track, out: Option<&Outcome>) {
        let Some((since, saved)) = &mut self.saved else {
            return;
        };
        let rel = |i: Instant| (i.saturating_duration_since(*since)).as_secs_f64();
        saved.push(WindowRequest {
            slot: self.slot,
            request: t.n,
            sent_s: rel(t.sent),
            first_token_s: t.first.map(rel),
            last_token_s: t.last.map(rel),
            ttft_ms: t.first.map(|f| (f - t.sent).as_secs_f64() * 1e3),
            window_tokens: t.window_tokens,
            chunks: out.map(|o| o.chunks),
            usage_completion_tokens: out.and_then(|o| o.usage_completion),
            usage_prompt_tokens: out.and_then(|o| o.usage_prompt),
            usage_cached_tokens: out.and_then(|o| o.usage_cached),
            error: out.and_then(|o| o.failure.clone()),
            cancelled_at_close: out.is_none(),
        });
    }
}

fn micros(d: std::time::Duration) -> u64 {
    d.as_micros() as u64
}
