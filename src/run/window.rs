//! The measuring window of a decode cell (contract §5): it opens when all C streams produce
//! tokens and closes exactly `duration` later; only tokens arriving inside it count. This
//! collector consumes the stream events of a cell in arrival order and keeps bounded state:
//! histograms, one small record per request in flight, counters.

use super::client::{Chunk, Failure, Outcome};
use crate::results::stats::{Latencies, median};
use std::collections::{BTreeMap, HashMap};
use tokio::time::Instant;

/// A request of a cell: its slot and its number within the slot.
pub type ReqKey = (usize, u64);

/// What the slots report.
#[derive(Debug)]
pub enum SlotEvent {
    /// A request was sent.
    Start(ReqKey, Instant),
    /// A token-bearing chunk arrived.
    Chunk(ReqKey, Chunk),
    /// A request ended.
    End(ReqKey, Box<Outcome>, Instant),
}

#[derive(Debug)]
struct Track {
    sent: Instant,
    first: Option<Instant>,
    prev: Option<Instant>,
    last: Option<Instant>,
    gen_start: Option<Instant>,
    window_tokens: u64,
    rate_tokens: u64,
    gaps: Latencies,
}

/// The collector's totals, read when the window closes.
#[derive(Debug, Default)]
pub struct Window {
    slots: usize,
    producing: Vec<bool>,
    tracks: HashMap<ReqKey, Track>,
    /// When the window opened.
    pub open: Option<Instant>,
    /// When it closes (`None` while unknown or unbounded).
    pub close: Option<Instant>,
    in_flight: usize,
    active_since: Option<Instant>,
    active_integral: f64,
    /// Output tokens inside the window (reconciled with final usage).
    pub tokens: f64,
    /// Time to first token of the cell's requests.
    pub ttft: Latencies,
    /// Time between tokens inside the window.
    pub tbt: Latencies,
    rates: Vec<f64>,
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
    /// The last `usage.prompt_tokens` seen.
    pub server_prompt_tokens: Option<u64>,
    expected_prompt: u64,
    /// Requests that failed before the window opened.
    pub early_failures: u64,
    /// Server-counted and chunk-counted tokens of finished chunk-counted requests: the
    /// tokens per chunk applied to requests still in flight when the window closes.
    reconciled: (u64, u64),
    /// Per-request detail (`run --save-requests`), times from `saved_since`.
    pub saved: Option<Vec<serde_json::Value>>,
    saved_since: Option<Instant>,
}

impl Window {
    /// A collector for `slots` streams of prompts of `expected_prompt` tokens.
    pub fn new(slots: usize, expected_prompt: u64) -> Window {
        Window {
            slots,
            producing: vec![false; slots],
            all_usage: true,
            expected_prompt,
            ..Window::default()
        }
    }

    /// The server counted `p` prompt tokens for one of this cell's prompts.
    pub fn note_prompt(&mut self, p: u64) {
        self.server_prompt_tokens = Some(p);
        if p != self.expected_prompt {
            self.prompt_mismatches += 1;
        }
    }

    /// Keep one line of detail per request, with times relative to `since`.
    pub fn save_requests(&mut self, since: Instant) {
        self.saved = Some(Vec::new());
        self.saved_since = Some(since);
    }

    fn save(&mut self, key: ReqKey, t: &Track, out: Option<&Outcome>) {
        let (Some(saved), Some(since)) = (&mut self.saved, self.saved_since) else {
            return;
        };
        let rel = |i: Instant| (i.saturating_duration_since(since)).as_secs_f64();
        saved.push(serde_json::json!({
            "slot": key.0, "request": key.1,
            "sent_s": rel(t.sent), "first_token_s": t.first.map(rel), "last_token_s": t.last.map(rel),
            "ttft_ms": t.first.map(|f| (f - t.sent).as_secs_f64() * 1e3),
            "window_tokens": t.window_tokens,
            "chunks": out.map(|o| o.chunks), "usage_completion_tokens": out.and_then(|o| o.usage_completion),
            "usage_prompt_tokens": out.and_then(|o| o.usage_prompt),
            "error": out.and_then(|o| o.failure.as_ref().map(|f| f.kind())),
            "cancelled_at_close": out.is_none(),
        }));
    }

    /// Open the window now (request-count mode opens at the first send).
    pub fn open_at(&mut self, at: Instant, duration_s: Option<f64>) {
        self.open = Some(at);
        self.close = duration_s.map(|d| at + std::time::Duration::from_secs_f64(d));
        self.active_since = Some(at);
        self.started = self.in_flight as u64;
    }

    fn inside(&self, t: Instant) -> bool {
        self.open.is_some_and(|o| t > o) && self.close.is_none_or(|c| t <= c)
    }

    fn integrate(&mut self, at: Instant) {
        if let Some(since) = self.active_since {
            let until = self.close.map_or(at, |c| at.min(c));
            if until > since {
                self.active_integral += self.in_flight as f64 * (until - since).as_secs_f64();
                self.active_since = Some(until);
            }
        }
    }

    /// Take one event. `duration_s` is the window length to use when the event opens it.
    pub fn event(&mut self, ev: SlotEvent, duration_s: Option<f64>) {
        match ev {
            SlotEvent::Start(key, at) => {
                self.integrate(at);
                self.in_flight += 1;
                if self.open.is_some() && self.close.is_none_or(|c| at <= c) {
                    self.started += 1;
                }
                self.tracks.insert(
                    key,
                    Track {
                        sent: at,
                        first: None,
                        prev: None,
                        last: None,
                        gen_start: None,
                        window_tokens: 0,
                        rate_tokens: 0,
                        gaps: Latencies::default(),
                    },
                );
            }
            SlotEvent::Chunk(key, chunk) => self.chunk(key, chunk, duration_s),
            SlotEvent::End(key, outcome, at) => self.end(key, &outcome, at),
        }
    }

    fn chunk(&mut self, key: ReqKey, c: Chunk, duration_s: Option<f64>) {
        if self.close.is_some_and(|close| c.at > close) {
            return;
        }
        let Some(t) = self.tracks.get_mut(&key) else {
            return;
        };
        let first_chunk = t.first.is_none();
        if first_chunk {
            t.first = Some(c.at);
            self.ttft.record_s((c.at - t.sent).as_secs_f64());
        }
        if let Some(p) = self.producing.get_mut(key.0) {
            *p = true;
        }
        if self.open.is_none() && self.producing.iter().all(|p| *p) && self.slots > 0 {
            self.open_at(c.at, duration_s);
        }
        let inside = self.inside(c.at);
        let Some(t) = self.tracks.get_mut(&key) else {
            return;
        };
        if inside {
            self.tokens += c.tokens as f64;
            t.window_tokens += c.tokens;
            if let Some(prev) = t.prev {
                t.gaps
                    .record_s((c.at - prev).as_secs_f64() / c.tokens.max(1) as f64);
            }
            match t.gen_start {
                // A request already generating when the window opened counts from the open.
                None if !first_chunk => {
                    t.gen_start = self.open;
                    t.rate_tokens += c.tokens;
                }
                // One that starts inside the window counts from its first token, excluded.
                None => t.gen_start = Some(c.at),
                Some(_) => t.rate_tokens += c.tokens,
            }
        }
        t.prev = Some(c.at);
        t.last = Some(c.at);
    }

    fn end(&mut self, key: ReqKey, out: &Outcome, at: Instant) {
        self.integrate(at);
        self.in_flight = self.in_flight.saturating_sub(1);
        let Some(mut t) = self.tracks.remove(&key) else {
            return;
        };
        if let Some(p) = self.producing.get_mut(key.0) {
            // A slot whose request ended has produced; its next request keeps it so.
            *p = *p || t.first.is_some();
        }
        self.save(key, &t, Some(out));
        let before_close = self.close.is_none_or(|c| at <= c);
        if let Some(f) = &out.failure
            && before_close
        {
            self.fail(f);
            if self.open.is_none() {
                self.early_failures += 1;
            }
        }
        if let Some(p) = out.usage_prompt {
            self.note_prompt(p);
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
        self.tokens += (factor - 1.0) * t.window_tokens as f64;
        if out.failure.is_none() && t.last.is_some_and(|l| self.inside(l)) {
            self.completed += 1;
        }
        t.rate_tokens = (t.rate_tokens as f64 * factor).round() as u64;
        self.finish_track(t, factor);
    }

    fn fail(&mut self, f: &Failure) {
        self.errors += 1;
        *self.error_kinds.entry(f.kind()).or_default() += 1;
    }

    fn finish_track(&mut self, t: Track, factor: f64) {
        if let (Some(start), Some(last)) = (t.gen_start, t.last) {
            let span = (last - start).as_secs_f64();
            if span > 0.0 && t.rate_tokens > 0 {
                self.rates.push(t.rate_tokens as f64 / span);
            }
        }
        self.tbt.merge_scaled(&t.gaps, 1.0 / factor);
    }

    /// Close the window: requests still in flight are measured up to the close.
    pub fn finish(&mut self, at: Instant) {
        let end = self.close.unwrap_or(at);
        self.integrate(end);
        let factor = match self.reconciled {
            (u, k) if k > 0 && !self.all_usage => u as f64 / k as f64,
            _ => 1.0,
        };
        let tracks: Vec<(ReqKey, Track)> = self.tracks.drain().collect();
        for (key, mut t) in tracks {
            self.save(key, &t, None);
            self.tokens += (factor - 1.0) * t.window_tokens as f64;
            t.rate_tokens = (t.rate_tokens as f64 * factor).round() as u64;
            self.finish_track(t, factor);
        }
        if self.close.is_none() {
            self.close = Some(end);
        }
    }

    /// Window length in seconds.
    pub fn length_s(&self) -> f64 {
        match (self.open, self.close) {
            (Some(o), Some(c)) => (c - o).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// Time-weighted mean of requests in flight.
    pub fn avg_active(&self) -> f64 {
        let len = self.length_s();
        if len > 0.0 {
            self.active_integral / len
        } else {
            0.0
        }
    }

    /// Median per-request tok/s.
    pub fn per_request(&mut self) -> Option<f64> {
        median(&mut self.rates)
    }
}
