//! A load cell (docs/results.md): the arrival schedule drawn from the seed, every request's body
//! prepared before the first arrival (so making prompts never delays a send), a warm pool
//! warmed first when the prompt cache is warm, then the open-loop skeleton
//! ([`super::open_loop`]) and the record with its verdict.

use super::open_loop::{Sends, judged, measure};
use super::{CellFailure, Ctx, Tick, failed, rand_tag};
use crate::client::Prepared;
use crate::plan::arrivals::{lengths, schedule};
use crate::plan::vocab::Entry;
use crate::plan::{Cell, OpenLoad};
use crate::results::Record;
use crate::rng::Rng;
use crate::run::pacer::dispatch::Progress;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Prompts a warm load cell cycles through when it sets no `max_concurrency`.
const WARM_POOL: usize = 16;

/// Measure the load cell `cell` under `load`.
pub async fn load(
    cx: Arc<Ctx>,
    cell: &Cell,
    load: OpenLoad,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    let seed = cx.workload.seed ^ fnv(&cell.id);
    let times = schedule(&load, seed);
    let (bodies, prompts) = match bodies(&cx, cell, &load, times.len(), &mut rec).await {
        Ok(b) => b,
        Err(why) => return failed(rec, &why),
    };
    let expected = expected(&cx.workload, cell, &prompts);
    // `--start-at`: the first arrival at the instant, once the prompts are made (making them
    // takes each shard its own time).
    let at = cx
        .first_arrival_at
        .lock()
        .map(|mut a| a.take())
        .ok()
        .flatten();
    if let Some(at) = at {
        crate::run::start_at::sleep_until(&at).await;
    }
    let sends = Sends {
        bodies,
        prompts,
        schedule: times,
    };
    let progress = Arc::new(Progress::default());
    let finished = measure(&cx, cell, &mut rec, sends, &load, progress, &ticks).await;
    rec.open.window_started_at = Some(wall_clock(finished.start));
    rec.prefix_hit_expected = expected;
    judged(rec, &cx)
}

/// The wall-clock time (RFC 3339, ms) of `at`, an instant of the past.
fn wall_clock(at: tokio::time::Instant) -> String {
    let ago = tokio::time::Instant::now().saturating_duration_since(at);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    crate::results::rfc3339_ms(now.saturating_sub(ago).as_secs_f64())
}

/// Every arrival's request and its exact prompt length. Lengths are drawn from the seed
/// when `phases.load.input`/`output` ask for a spread. With a warm cache, a pool of slot
/// prompts (those the decode cells of the context use) is sent once first and the arrivals
/// cycle through it (a drawn length shares its slot prompt's prefix); with a cold one, each
/// arrival gets a new prompt.
async fn bodies(
    cx: &Ctx,
    cell: &Cell,
    load: &OpenLoad,
    n: usize,
    rec: &mut Record,
) -> Result<(Vec<Prepared>, Vec<u64>), CellFailure> {
    let w = &cx.workload;
    let seed = w.seed ^ fnv(&cell.id);
    let outs = lengths(w.max_output_tokens, load.output, n, seed ^ 1, u64::MAX);
    if let Some(entries) = &cx.dataset {
        return Ok(from_dataset(cx, entries, &outs, seed));
    }
    cx.prime(rec).await?;
    let longest = outs.iter().copied().max().unwrap_or(0);
    let room = w
        .max_model_len
        .map_or(u64::MAX, |m| m.saturating_sub(longest));
    let ins = lengths(cell.prompt_tokens, load.input, n, seed ^ 2, room);
    let mut bodies = Vec::with_capacity(n);
    if w.warm() {
        let pool = load
            .max_concurrency
            .map_or(WARM_POOL, |c| c as usize)
            .min(n);
        let mut warm = Vec::with_capacity(pool);
        for slot in 0..pool {
            let p = cx
                .slot_prompt(cell.context, cell.prompt_tokens, slot)
                .await?;
            warm.push(cx.client.prepare(&p, 1));
        }
        warm_up(cx, &warm, rec).await?;
        for (i, (&len, &out)) in ins.iter().zip(&outs).enumerate() {
            let slot = i % pool.max(1);
            let body = match warm.get(slot) {
                Some(b) if len == cell.prompt_tokens => b.with_max_tokens(out),
                _ => {
                    let p = cx.slot_prompt(cell.context, len, slot).await?;
                    cx.client.prepare(&p, out)
                }
            };
            bodies.push(body);
        }
        return Ok((bodies, ins));
    }
    let tag = rand_tag();
    for (i, (&len, &out)) in ins.iter().zip(&outs).enumerate() {
        let prompt = cx
            .fresh_prompt(len, &format!("{}n{i}x{tag}", cell.id))
            .await?;
        bodies.push(cx.client.prepare(&prompt, out));
    }
    Ok((bodies, ins))
}

/// `prefix_hit_expected` of arrivals of `prompts` tokens each: with a warm cache an
/// arrival resends its slot's prompt, or shares it up to the shorter of the two (same
/// header and body); with a cold one it shares its group's prefix.
fn expected(w: &crate::plan::Workload, cell: &Cell, prompts: &[u64]) -> Option<f64> {
    let tokens: u64 = prompts.iter().sum();
    let reusable = if w.warm() {
        prompts.iter().map(|&p| p.min(cell.prompt_tokens)).sum()
    } else {
        super::fresh_reusable(w, prompts.len() as u64)
    };
    super::hit_expected(w, reusable, tokens)
}

/// The dataset's requests, cycled in an order drawn from the seed; their prompts keep their
/// own lengths (0: not exact, nothing to check against).
fn from_dataset(cx: &Ctx, entries: &[Entry], outs: &[u64], seed: u64) -> (Vec<Prepared>, Vec<u64>) {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    let mut rng = Rng::new(seed);
    for i in (1..order.len()).rev() {
        let j = (rng.unit() * (i + 1) as f64) as usize;
        order.swap(i, j.min(i));
    }
    let bodies = outs
        .iter()
        .enumerate()
        .filter_map(|(i, &out)| {
            let e = entries.get(*order.get(i % order.len().max(1))?)?;
            let out = e.output_tokens.unwrap_or(out);
            Some(match (&e.messages, &e.prompt) {
                (Some(m), _) => cx.client.prepare_messages(m, out),
                (None, p) => cx.client.prepare(p.as_deref().unwrap_or_default(), out),
            })
        })
        .collect::<Vec<_>>();
    let targets = vec![0; bodies.len()];
    (bodies, targets)
}

/// Send each warm prompt once, together; an error when every one failed.
async fn warm_up(cx: &Ctx, warm: &[Prepared], rec: &mut Record) -> Result<(), CellFailure> {
    cx.send_once(warm, rec)
        .await
        .map(|_| ())
        .map_err(|kinds| CellFailure::WarmUp { kinds })
}

/// FNV-1a of `text`: a cell's own arrival seed from the run's seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
