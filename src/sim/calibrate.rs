//! Calibration: the seed page's cells replayed against a profile in virtual time, the way
//! `benchspec run` measures them (warm prompt cache, closed loop of C streams, a window that
//! opens when all C streams produce tokens), compared with the seed's numbers.
//! `cargo bench --bench calibrate` prints the table.

use super::engine::{NewRequest, ReqId, Scheduler};
use super::profile::Profile;
use std::collections::HashMap;

/// Prefill tok/s of the seed page by context.
pub const SEED_PREFILL: [(u64, f64); 6] = [
    (8192, 62_000.0),
    (16_384, 56_800.0),
    (32_768, 51_400.0),
    (65_536, 41_100.0),
    (125_952, 27_600.0),
    (131_072, 26_400.0),
];

/// The seed's concurrency levels.
pub const SEED_CONCURRENCY: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// Decode total tok/s of the seed page: one row per context, one column per concurrency.
pub const SEED_DECODE: [(u64, [f64; 8]); 5] = [
    (
        8192,
        [
            260.3, 514.0, 1001.5, 1903.3, 3529.7, 5982.0, 9049.3, 13_100.0,
        ],
    ),
    (
        16_384,
        [256.1, 507.0, 975.3, 1809.1, 3243.9, 5150.8, 7255.1, 9854.8],
    ),
    (
        32_768,
        [250.1, 489.5, 923.6, 1650.8, 2761.0, 4029.2, 5330.1, 6468.1],
    ),
    (
        65_536,
        [242.1, 463.6, 839.3, 1394.8, 2077.7, 2875.2, 3419.3, 3796.1],
    ),
    (
        125_952,
        [227.1, 415.8, 709.4, 1063.6, 1497.9, 1859.2, 2047.6, 2151.0],
    ),
];

/// Decode TTFT p50 of the seed page, milliseconds: rows and columns as [`SEED_DECODE`].
pub const SEED_TTFT_MS: [[f64; 8]; 5] = [
    [71.0, 87.0, 113.0, 134.0, 180.0, 248.0, 310.0, 1051.0],
    [97.0, 116.0, 118.0, 207.0, 205.0, 268.0, 869.0, 1600.0],
    [145.0, 180.0, 233.0, 247.0, 208.0, 302.0, 1784.0, 3480.0],
    [211.0, 289.0, 268.0, 279.0, 302.0, 2018.0, 3670.0, 7401.0],
    [473.0, 541.0, 517.0, 573.0, 2692.0, 4997.0, 8685.0, 16_966.0],
];

/// One compared cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationRow {
    /// `prefill/8K` or `decode/8K/c4`.
    pub cell: String,
    /// The seed's value (tok/s, or ms for TTFT).
    pub seed: f64,
    /// The simulated value (tok/s, or ms for TTFT).
    pub sim: f64,
}

impl CalibrationRow {
    /// sim / seed.
    pub fn ratio(&self) -> f64 {
        self.sim / self.seed
    }
}

/// Every cell of the seed table, simulated with `profile`, a `window_s` window and
/// `max_tokens` per request.
pub fn seed_table(profile: &Profile, window_s: f64, max_tokens: usize) -> Vec<CalibrationRow> {
    let mut rows = Vec::new();
    for (ctx, seed) in SEED_PREFILL {
        let cell = format!("prefill/{}K", ctx / 1024);
        // As the plan does, a prompt is clamped to max_model_len - 1.
        let prompt = ctx.min(profile.max_model_len - 1) as usize;
        rows.push(CalibrationRow {
            cell,
            seed,
            sim: prefill_tok_s(profile, prompt),
        });
    }
    for (ctx, values) in SEED_DECODE {
        for (c, seed) in SEED_CONCURRENCY.iter().zip(values) {
            let sim = decode_tok_s(profile, ctx as usize, *c as usize, window_s, max_tokens);
            rows.push(CalibrationRow {
                cell: format!("decode/{}K/c{c}", ctx / 1024),
                seed,
                sim,
            });
        }
    }
    rows
}

/// Decode TTFT p50 of every seed cell (`decode/8K/c4`), seed and simulated, milliseconds.
/// The simulated one is counted as the seed page counts it, which is not how `run` does:
/// over the requests sent inside the window where there are any, else over all. (Its cells
/// whose requests complete inside the window report a few hundred ms where the first
/// round's C prompts, sent together, must queue for seconds, as its other cells show.)
pub fn ttft_table(profile: &Profile, window_s: f64, max_tokens: usize) -> Vec<CalibrationRow> {
    let mut rows = Vec::new();
    for ((ctx, _), seed_row) in SEED_DECODE.iter().zip(SEED_TTFT_MS) {
        for (c, seed) in SEED_CONCURRENCY.iter().zip(seed_row) {
            let t = decode_cell(profile, *ctx as usize, *c as usize, window_s, max_tokens);
            rows.push(CalibrationRow {
                cell: format!("decode/{}K/c{c}", ctx / 1024),
                seed,
                sim: t.ttft_seed_p50_s * 1e3,
            });
        }
    }
    rows
}

/// A prompt unique to (`ctx`, `slot`), sharing no block with any other slot's.
fn slot_prompt(ctx: usize, slot: usize) -> Vec<u32> {
    let base = (ctx as u32).wrapping_mul(2_654_435_761) ^ (slot as u32).wrapping_mul(40_503);
    (0..ctx as u32)
        .map(|i| base.wrapping_add(i.wrapping_mul(97)))
        .collect()
}

/// Prompt tokens / TTFT of one cold request.
pub fn prefill_tok_s(profile: &Profile, ctx: usize) -> f64 {
    let mut e = Scheduler::new(profile.clone());
    e.add(NewRequest {
        tokens: slot_prompt(ctx, 0),
        target: 1,
        output_seed: None,
        adapter: None,
    });
    while e.has_work() {
        e.step();
    }
    ctx as f64 / (e.now + profile.api_delay_s(ctx) + profile.tokenizer_s(ctx))
}

/// Output tokens in the window / window length, for C closed-loop streams on a warm cache.
pub fn decode_tok_s(
    profile: &Profile,
    ctx: usize,
    c: usize,
    window_s: f64,
    max_tokens: usize,
) -> f64 {
    decode_cell(profile, ctx, c, window_s, max_tokens).total_tok_s
}

/// What a decode cell measures when replayed in virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeTruth {
    /// Output tokens in the window / window length.
    pub total_tok_s: f64,
    /// Median time to first token of the cell's requests (from the send), seconds.
    pub ttft_p50_s: f64,
    /// Mean time to first token, seconds.
    pub ttft_mean_s: f64,
    /// Median TTFT as the seed page counts it: of the requests sent inside the window where
    /// any were, else of all, seconds.
    pub ttft_seed_p50_s: f64,
}

/// Replay a decode cell: C closed-loop streams on a warm cache, the window opening when all
/// C produce tokens.
pub fn decode_cell(
    profile: &Profile,
    ctx: usize,
    c: usize,
    window_s: f64,
    max_tokens: usize,
) -> DecodeTruth {
    let mut r = Replay::warm(profile, ctx, c, max_tokens);
    while r.advance(window_s) {}
    r.truth(window_s)
}

/// One decode cell being replayed.
struct Replay<'a> {
    profile: &'a Profile,
    e: Scheduler,
    ctx: usize,
    max_tokens: usize,
    /// Each slot's prompt.
    prompts: Vec<Vec<u32>>,
    /// When the API server's one tokenizer is next free.
    tokenizer_free: f64,
    /// Requests on their way through the API server: (reaches the engine, slot, sent).
    arrivals: Vec<(f64, usize, f64)>,
    slot_of: HashMap<ReqId, usize>,
    sent_at: HashMap<ReqId, f64>,
    /// (sent, TTFT) of every request with a first token.
    ttfts: Vec<(f64, f64)>,
    /// Which slots have produced a token.
    started: Vec<bool>,
    /// When the window opened.
    open: Option<f64>,
    /// Output tokens inside the window.
    tokens: u64,
}

impl<'a> Replay<'a> {
    /// An engine whose cache holds each slot's prompt (the warm-up: each once, max_tokens
    /// 1), and the C requests sent together.
    fn warm(profile: &'a Profile, ctx: usize, c: usize, max_tokens: usize) -> Replay<'a> {
        let mut e = Scheduler::new(profile.clone());
        let prompts: Vec<Vec<u32>> = (0..c).map(|s| slot_prompt(ctx, s)).collect();
        for p in &prompts {
            e.add(NewRequest {
                tokens: p.clone(),
                target: 1,
                output_seed: None,
                adapter: None,
            });
        }
        while e.has_work() {
            e.step();
        }
        let mut r = Replay {
            profile,
            e,
            ctx,
            max_tokens,
            prompts,
            tokenizer_free: 0.0,
            arrivals: Vec::new(),
            slot_of: HashMap::new(),
            sent_at: HashMap::new(),
            ttfts: Vec::new(),
            started: vec![false; c],
            open: None,
            tokens: 0,
        };
        (0..c).for_each(|s| r.send(s));
        r
    }

    /// Send slot `s`'s request now: it reaches the engine after the API server's one
    /// tokenizer has taken it (in arrival order) and the rest of its delay.
    fn send(&mut self, s: usize) {
        let (p, now) = (self.profile, self.e.now);
        self.tokenizer_free = self.tokenizer_free.max(now) + p.tokenizer_s(self.ctx);
        let ready = self.tokenizer_free + p.api_delay_s(self.ctx) + p.api_load_s(self.e.running());
        self.arrivals.push((ready, s, now));
    }

    /// Hand the engine the requests that have reached it.
    fn admit_due(&mut self) {
        self.arrivals.sort_by(|a, b| b.0.total_cmp(&a.0));
        while let Some(&(ready, s, sent)) = self.arrivals.last() {
            if ready > self.e.now {
                break;
            }
            self.arrivals.pop();
            let id = self.e.add(NewRequest {
                tokens: self.prompts[s].clone(),
                target: self.max_tokens,
                output_seed: None,
                adapter: None,
            });
            self.slot_of.insert(id, s);
            self.sent_at.insert(id, sent);
        }
    }

    /// One engine step, or a jump to the next arrival; false when the window has closed.
    fn advance(&mut self, window_s: f64) -> bool {
        self.admit_due();
        if !self.e.has_work() {
            return match self.arrivals.last() {
                Some(a) => {
                    self.e.now = a.0;
                    true
                }
                None => false,
            };
        }
        let out = self.e.step();
        for id in &out.emitted {
            if let Some(sent) = self.sent_at.remove(id) {
                self.ttfts.push((sent, self.e.now - sent));
            }
        }
        if let Some(t0) = self.open {
            if self.e.now > t0 + window_s {
                return false;
            }
            self.tokens += out.emitted.len() as u64;
        } else {
            for id in &out.emitted {
                if let Some(&s) = self.slot_of.get(id) {
                    self.started[s] = true;
                }
            }
            if self.started.iter().all(|s| *s) {
                self.open = Some(self.e.now);
            }
        }
        for id in &out.finished {
            if let Some(s) = self.slot_of.remove(id) {
                self.send(s);
            }
        }
        true
    }

    /// What the cell measured.
    fn truth(self, window_s: f64) -> DecodeTruth {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let all: Vec<f64> = self.ttfts.iter().map(|t| t.1).collect();
        let inside: Vec<f64> = self
            .ttfts
            .iter()
            .filter(|t| self.open.is_some_and(|o| t.0 >= o))
            .map(|t| t.1)
            .collect();
        DecodeTruth {
            total_tok_s: self.tokens as f64 / window_s,
            ttft_p50_s: median(all.clone()),
            ttft_mean_s: all.iter().sum::<f64>() / all.len().max(1) as f64,
            ttft_seed_p50_s: median(if inside.is_empty() { all } else { inside }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::profile::profile;

    /// The calibration target of issue 3: every seed cell within 15%. Not a timing test: the
    /// model runs in virtual time and is deterministic.
    #[test]
    fn h200_profile_reproduces_the_seed_table_within_15_percent() {
        let p = profile(crate::sim::profile::DEFAULT).unwrap_or_else(|| unreachable!());
        let rows = seed_table(&p, 30.0, 4096);
        assert_eq!(rows.len(), 46);
        let off: Vec<String> = rows
            .iter()
            .filter(|r| (r.ratio() - 1.0).abs() > 0.15)
            .map(|r| {
                format!(
                    "{} seed {} sim {:.1} ({:.3})",
                    r.cell,
                    r.seed,
                    r.sim,
                    r.ratio()
                )
            })
            .collect();
        assert!(off.is_empty(), "{off:#?}");
    }

    /// Issue 13's targets: tok/s within 6% in all 46 cells, and decode TTFT within 25% in
    /// all but two of the 40. The two: `16K/c8`, whose seed value (207 ms) sits between
    /// 118 ms at c4 and 205 ms at c16; `32K/c32`, where the seed completed a round of
    /// 4,096-token requests inside a 30 s window at its own 127 tok/s per request (32 s),
    /// which this replay cannot do.
    #[test]
    fn h200_profile_reproduces_seed_ttft_within_25_percent_and_tok_s_within_6() {
        let p = profile(crate::sim::profile::DEFAULT).unwrap_or_else(|| unreachable!());
        let far = |rows: Vec<CalibrationRow>, tol: f64| -> Vec<String> {
            rows.into_iter()
                .filter(|r| (r.ratio() - 1.0).abs() > tol)
                .map(|r| format!("{} seed {} sim {:.1}", r.cell, r.seed, r.sim))
                .collect()
        };
        let tok_s = far(seed_table(&p, 30.0, 4096), 0.06);
        assert!(tok_s.is_empty(), "{tok_s:#?}");
        let ttft = far(ttft_table(&p, 30.0, 4096), 0.25);
        assert!(
            ttft.iter()
                .all(|c| c.starts_with("decode/16K/c8 ") || c.starts_with("decode/32K/c32 ")),
            "{ttft:#?}"
        );
    }
}
