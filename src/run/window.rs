//! The measuring window of a decode cell (contract §5): it opens when all C streams produce
//! tokens and closes exactly `duration` later; only tokens arriving inside it count. This
//! collector consumes the stream events of a cell in arrival order and keeps bounded state:
//! histograms, one small record per request in flight, counters.

use super::outcome::{Chunk, Failure, Outcome};
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

    /// The number of streams.
    pub fn slots(&self) -> usize {
        self.slots
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

#[cfg(test)]
mod tests {
    //! The window as a state machine over instants the test passes in: a script of sends,
    //! chunks and ends at known milliseconds, and what the window must conclude from it.

    use super::{SlotEvent, Window};
    use crate::run::outcome::{Chunk, Failure, Outcome};
    use std::time::Duration;
    use tokio::time::Instant;

    /// One step of a script: at `ms`, slot `slot`'s request `n` …
    #[derive(Clone, Copy)]
    enum Step {
        Send(u64, usize, u64),
        Token(u64, usize, u64),
        Done(u64, usize, u64),
        Fail(u64, usize, u64),
    }
    use Step::{Done, Fail, Send, Token};

    fn play(slots: usize, window_s: Option<f64>, script: &[Step], finish_ms: u64) -> Window {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut w = Window::new(slots, 100);
        if window_s.is_none() {
            w.open_at(t0, None);
        }
        let mut sent = std::collections::HashMap::new();
        for step in script {
            let ev = match *step {
                Send(ms, s, n) => {
                    sent.insert((s, n), at(ms));
                    SlotEvent::Start((s, n), at(ms))
                }
                Token(ms, s, n) => SlotEvent::Chunk(
                    (s, n),
                    Chunk {
                        at: at(ms),
                        tokens: 1,
                        from_usage: true,
                    },
                ),
                Done(ms, s, n) | Fail(ms, s, n) => SlotEvent::End(
                    (s, n),
                    Box::new(Outcome {
                        sent: sent.get(&(s, n)).copied().unwrap_or(t0),
                        chunks: 0,
                        counted: 0,
                        usage_completion: None,
                        usage_prompt: Some(100),
                        all_usage: true,
                        failure: matches!(step, Fail(..)).then_some(Failure::Disconnect),
                    }),
                    at(ms),
                ),
            };
            w.event(ev, window_s);
        }
        w.finish(at(finish_ms));
        w
    }

    /// Slot 0 streams a token every 10 ms from 100 ms; slot 1 from 200 ms. The window opens at
    /// 200 ms (both produce) and, at 1 s long, closes at 1200 ms.
    fn two_streams() -> Vec<Step> {
        let mut s = vec![Send(0, 0, 0), Send(50, 1, 0)];
        for ms in (100..=1500).step_by(10) {
            s.push(Token(ms, 0, 0));
            if ms >= 200 {
                s.push(Token(ms, 1, 0));
            }
        }
        s
    }

    #[test]
    fn opens_when_every_stream_produces_and_closes_exactly_on_time() {
        let w = play(2, Some(1.0), &two_streams(), 1600);
        let t0 = w.open.map(|o| o - Duration::from_millis(200));
        assert!(t0.is_some(), "the window opened");
        assert!((w.length_s() - 1.0).abs() < 1e-9, "{}", w.length_s());
        // Tokens strictly after the open, up to and including the close: 100 per stream.
        assert_eq!(w.tokens, 200.0);
        assert!((w.avg_active() - 2.0).abs() < 1e-9, "{}", w.avg_active());
        assert_eq!(w.started, 2);
        assert_eq!(w.completed, 0, "nothing ended inside the window");
        let ttft = w.ttft.summary().map(|s| s.p50);
        assert!(ttft.is_some_and(|t| (t - 100.0).abs() < 0.5 || (t - 150.0).abs() < 0.5));
        let tbt = w.tbt.summary().map(|s| s.p50);
        assert!(tbt.is_some_and(|t| (t - 10.0).abs() < 0.1), "{tbt:?}");
    }

    #[test]
    fn per_request_rate_counts_from_the_open_or_from_the_first_token() {
        let mut w = play(2, Some(1.0), &two_streams(), 1600);
        // Both streams: 100 tokens over 1 s of the window → 100 tok/s.
        let rate = w.per_request();
        assert!(rate.is_some_and(|r| (r - 100.0).abs() < 1.5), "{rate:?}");
    }

    #[test]
    fn the_table() {
        // (name, slots, window, script, finish, tokens, avg_active, completed, errors, open?)
        type Case = (
            &'static str,
            usize,
            Option<f64>,
            Vec<Step>,
            u64,
            f64,
            f64,
            u64,
            u64,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "one stream never producing: the window never opens",
                2,
                Some(1.0),
                vec![Send(0, 0, 0), Send(0, 1, 0), Token(10, 0, 0)],
                500,
                0.0,
                0.0,
                0,
                0,
                false,
            ),
            (
                "a request ending inside the window is completed and its slot is replaced",
                1,
                Some(0.1),
                vec![
                    Send(0, 0, 0),
                    Token(10, 0, 0),
                    Token(20, 0, 0),
                    Token(30, 0, 0),
                    Done(30, 0, 0),
                    Send(30, 0, 1),
                    Token(50, 0, 1),
                    Token(120, 0, 1),
                ],
                200,
                // After the open at 10 ms: 20, 30, 50; 120 is past the close at 110.
                3.0,
                // In flight over [10, 110] except nothing: the replacement starts at once.
                1.0,
                1,
                0,
                true,
            ),
            (
                "a failure inside the window is counted; one after the close is not",
                1,
                Some(0.1),
                vec![
                    Send(0, 0, 0),
                    Token(10, 0, 0),
                    Fail(60, 0, 0),
                    Send(60, 0, 1),
                    Fail(200, 0, 1),
                ],
                300,
                0.0,
                1.0,
                0,
                1,
                true,
            ),
            (
                "request-count mode opens at the first send and spans to the last event",
                1,
                None,
                vec![
                    Send(0, 0, 0),
                    Token(100, 0, 0),
                    Token(200, 0, 0),
                    Done(200, 0, 0),
                ],
                400,
                2.0,
                // In flight 0..200 of a 400 ms span.
                0.5,
                1,
                0,
                true,
            ),
        ];
        for (name, slots, window, script, finish, tokens, active, completed, errors, open) in cases
        {
            let w = play(slots, window, &script, finish);
            assert_eq!(w.open.is_some(), open, "{name}: open");
            assert_eq!(w.tokens, tokens, "{name}: tokens");
            assert!(
                (w.avg_active() - active).abs() < 1e-6,
                "{name}: avg_active {}",
                w.avg_active()
            );
            assert_eq!(w.completed, completed, "{name}: completed");
            assert_eq!(w.errors, errors, "{name}: errors");
        }
    }

    #[test]
    fn requests_in_flight_at_close_are_measured_up_to_it() {
        // One long request: its tokens after the close never count, and it is no error.
        let mut script = vec![Send(0, 0, 0)];
        script.extend((10..=500).step_by(10).map(|ms| Token(ms, 0, 0)));
        let w = play(1, Some(0.2), &script, 600);
        assert_eq!(w.tokens, 20.0, "20..=210 by 10 ms");
        assert_eq!((w.completed, w.errors), (0, 0));
        assert!((w.length_s() - 0.2).abs() < 1e-9);
    }
}
