//! A replay cell (docs/results.md): a Mooncake trace's requests sent at their timestamps ÷
//! `speedup` by the open-loop driver, every prompt made to exactly its `input_length` before
//! the first send, so that equal `hash_ids` are equal token blocks (the same text wherever
//! they appear) and the engine sees the trace's real prefix reuse. The sending and the record
//! are the open-loop skeleton's ([`super::open_loop`]), as a load cell's.

use super::open_loop::{Sends, judged, measure};
use super::{CellFailure, Ctx, Tick, failed};
use crate::client::Prepared;
use crate::plan::replay::ReplayLoad;
use crate::plan::vocab::{Arrivals, Rate, TraceEntry};
use crate::plan::{Bound, Cell, OpenLoad};
use crate::prompt::{PromptError, user_words};
use crate::results::fill::Finished;
use crate::results::stats::round;
use crate::results::{Record, TraceInfo};
use crate::run::pacer::dispatch::Progress;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// `arrivals` of a replay cell's record: the trace's times.
pub const TRACE_ARRIVALS: &str = "trace";

/// Most tokenize round trips spent on one prompt.
const MAX_TRIES: usize = 12;

/// Measure the replay cell `cell`: the first `max_requests` of the trace.
pub async fn replay(
    cx: Arc<Ctx>,
    cell: &Cell,
    r: ReplayLoad,
    mut rec: Record,
    ticks: mpsc::UnboundedSender<Tick>,
) -> Record {
    let Some((file, trace)) = cx.trace.clone() else {
        return failed(rec, &"the run has no trace to replay");
    };
    let n = r
        .max_requests
        .map_or(trace.len(), |m| (m as usize).min(trace.len()));
    if let Some(why) = unfit(&cx, &trace[..n], &file, &r) {
        return failed(rec, &why);
    }
    let progress = Arc::new(Progress::default());
    let mut resume = Resume::at(&cx, cell, progress.clone());
    let entries = &trace[resume.base.min(n)..n];
    if resume.base > 0 {
        rec.warnings.push(format!(
            "resumed: the first {} of the trace's {n} requests were sent before the stop and are not in this record",
            resume.base
        ));
    }
    if let Err(e) = cx.prime(&mut rec).await {
        return failed(rec, &e);
    }
    let (bodies, prompts) = match bodies(&cx, entries, r.block_tokens, resume.base).await {
        Ok(b) => b,
        Err(e) => return failed(rec, &e),
    };
    let (schedule, load) = timing(entries, r.speedup);
    let sends = Sends {
        bodies,
        prompts,
        schedule: schedule.clone(),
    };
    let finished = measure(&cx, cell, &mut rec, sends, &load, progress, &ticks).await;
    // The trace's own times, not drawn.
    rec.open.arrivals = Some(TRACE_ARRIVALS.to_string());
    resume.finished();
    rec.trace = Some(TraceInfo {
        file,
        resumed_after: (resume.base > 0).then_some(resume.base as u64),
        ..trace_info(&finished, &schedule, r, entries)
    });
    judged(rec, &cx)
}

/// Why the trace's first requests `entries` cannot be replayed as written: what validate
/// could not judge without the server's `max_model_len`, refused before anything is sent,
/// never sent to fail and be averaged in.
fn unfit(cx: &Ctx, entries: &[TraceEntry], file: &str, r: &ReplayLoad) -> Option<String> {
    let unfit = crate::spec::trace::fit(entries, file, r.block_tokens, cx.workload.max_model_len);
    if unfit.is_empty() {
        return None;
    }
    let why: Vec<String> = unfit.iter().map(ToString::to_string).collect();
    Some(format!(
        "the trace cannot be replayed as written: {}",
        why.join("; ")
    ))
}

/// When each of `entries` is due (from the first, ÷ `speedup`), and the open-loop load they
/// make: N requests over their span offer (N − 1) / span req/s (N − 1 gaps, as a load
/// cell's schedule; one request: all at once), sent as scheduled.
fn timing(entries: &[TraceEntry], speedup: f64) -> (Vec<Duration>, OpenLoad) {
    let t0 = entries.first().map_or(0.0, |e| e.timestamp);
    let speed = if speedup > 0.0 { speedup } else { 1.0 };
    let schedule: Vec<Duration> = entries
        .iter()
        .map(|e| Duration::from_secs_f64((e.timestamp - t0).max(0.0) / 1000.0 / speed))
        .collect();
    let span = schedule.last().map_or(0.0, Duration::as_secs_f64);
    let gaps = entries.len().saturating_sub(1) as f64;
    let load = OpenLoad {
        rate: Rate(if span > 0.0 {
            gaps / span
        } else {
            f64::INFINITY
        }),
        arrivals: Arrivals::Constant,
        burstiness: 1.0,
        max_concurrency: None,
        bound: Bound::Requests(entries.len() as u32),
        input: None,
        output: None,
    };
    (schedule, load)
}

/// Where a stopped replay leaves how many of its trace's requests it sent, for `--resume`.
const PROGRESS: &str = "replay-progress.json";

/// How far an earlier attempt got, and, when this cell is dropped unfinished (a stop), the
/// record of how far this one got.
struct Resume {
    path: Option<std::path::PathBuf>,
    cell: String,
    /// Requests sent by earlier attempts.
    base: usize,
    progress: Arc<Progress>,
    done: bool,
}

impl Resume {
    fn at(cx: &Ctx, cell: &Cell, progress: Arc<Progress>) -> Resume {
        let path = cx.out.as_ref().map(|d| d.join(PROGRESS));
        let base = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .filter(|v| v["cell"].as_str() == Some(cell.id.as_str()))
            .and_then(|v| v["sent"].as_u64())
            .unwrap_or(0) as usize;
        Resume {
            path,
            cell: cell.id.clone(),
            base,
            progress,
            done: false,
        }
    }

    /// The replay ended: nothing to resume.
    fn finished(&mut self) {
        self.done = true;
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Resume {
    /// A stop dropped the cell: keep how many requests were sent, for `--resume`.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let sent = self
            .progress
            .sent
            .load(std::sync::atomic::Ordering::Relaxed) as usize;
        if let Some(p) = &self.path {
            let line = serde_json::json!({"cell": self.cell, "sent": self.base + sent});
            let _ = std::fs::write(p, line.to_string());
        }
    }
}

/// Every request's body and exact prompt length (`first`: the first entry's index in the
/// trace, which a request's own words follow).
async fn bodies(
    cx: &Ctx,
    entries: &[TraceEntry],
    block: u64,
    first: usize,
) -> Result<(Vec<Prepared>, Vec<u64>), CellFailure> {
    // Tokens the engine adds to any prompt (a BOS): the first block holds that many fewer
    // words, so that block i is tokens [i × block, (i + 1) × block) of the prompt.
    let added = cx
        .client
        .count_tokens("the")
        .await
        .map_err(PromptError::from)?;
    let added = added.saturating_sub(1);
    let mut bodies = Vec::with_capacity(entries.len());
    let mut prompts = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let text = exact(cx, e, (first + i) as u64, block, added).await?;
        bodies.push(cx.client.prepare(&text, e.output_length));
        prompts.push(e.input_length);
    }
    Ok((bodies, prompts))
}

/// The words of a prompt of `words` words: each block's own words (a block's first word is
/// its id's, so different ids differ from their first token), then words of the request
/// itself past the blocks its `hash_ids` name.
fn words(e: &TraceEntry, request: u64, block: u64, added: u64, words: u64) -> String {
    let mut text = String::with_capacity(words as usize * 5);
    let mut left = words;
    let mut first = true;
    for (i, id) in e.hash_ids.iter().enumerate() {
        if left == 0 {
            break;
        }
        let size = if i == 0 {
            block.saturating_sub(added)
        } else {
            block
        };
        let take = size.min(left);
        push(&mut text, &mut first, &block_words(*id, take));
        left -= take;
    }
    if left > 0 {
        let tag = format!("r{}", base36(request));
        let rest = format!(
            "{tag} {}",
            user_words(left.saturating_sub(1), request ^ 0x7e57)
        );
        let rest: Vec<&str> = rest.split(' ').take(left as usize).collect();
        push(&mut text, &mut first, &rest.join(" "));
    }
    text
}

fn push(text: &mut String, first: &mut bool, part: &str) {
    if part.is_empty() {
        return;
    }
    if !*first {
        text.push(' ');
    }
    text.push_str(part);
    *first = false;
}

/// The first `take` words of the block `id`: its tag, then words drawn from the id.
fn block_words(id: u64, take: u64) -> String {
    let tag = format!("h{}", base36(id));
    if take <= 1 {
        return if take == 1 { tag } else { String::new() };
    }
    format!("{tag} {}", user_words(take - 1, id))
}

/// `id` in base 36, at most 5 digits (a one-token word of the simulator's, with its letter).
fn base36(id: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut v = id % 36u64.pow(5);
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(v % 36) as usize]);
        v /= 36;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// The prompt of `e`, exactly `input_length` tokens as the engine counts them: the words
/// the blocks give, then as many more or fewer words at the end as the count asks.
async fn exact(
    cx: &Ctx,
    e: &TraceEntry,
    request: u64,
    block: u64,
    added: u64,
) -> Result<String, CellFailure> {
    let mut n = e.input_length.saturating_sub(added);
    for _ in 0..MAX_TRIES {
        let text = words(e, request, block, added, n);
        let count = cx
            .client
            .count_tokens(&text)
            .await
            .map_err(PromptError::from)?;
        if count == e.input_length {
            return Ok(text);
        }
        let next = n as i64 + e.input_length as i64 - count as i64;
        if next < 1 {
            break;
        }
        n = next as u64;
    }
    Err(PromptError::NoExact {
        tokens: e.input_length,
        tries: MAX_TRIES,
    }
    .into())
}

/// The trace's figures: its file, requests, speed and length ranges, and the offered against the achieved
/// rate second by second (requests due in each second of the trace, requests that ended in
/// it).
fn trace_info(
    f: &Finished,
    schedule: &[Duration],
    r: ReplayLoad,
    entries: &[TraceEntry],
) -> TraceInfo {
    let span = schedule.last().map_or(0.0, Duration::as_secs_f64);
    // Every completion has a bin: the series run on to the last request's end.
    let ended = f
        .done
        .iter()
        .map(|d| d.end.saturating_duration_since(f.start));
    let last_end = ended.max().map_or(0.0, |d| d.as_secs_f64());
    let bins = (span.max(last_end).ceil() as usize).max(1);
    let mut offered = vec![0.0; bins];
    for d in schedule {
        offered[(d.as_secs_f64() as usize).min(bins - 1)] += 1.0;
    }
    let mut achieved = vec![0.0; bins];
    for d in f.done.iter().filter(|d| d.failure.is_none()) {
        let at = d.end.saturating_duration_since(f.start).as_secs_f64() as usize;
        achieved[at.min(bins - 1)] += 1.0;
    }
    let range = |of: fn(&TraceEntry) -> u64| {
        let lengths = entries.iter().map(of);
        Some([lengths.clone().min()?, lengths.max()?])
    };
    TraceInfo {
        file: String::new(),
        input_length: range(|e| e.input_length),
        output_length: range(|e| e.output_length),
        requests: entries.len() as u64,
        speedup: r.speedup,
        span_s: round(span, 3),
        offered_per_s: offered,
        achieved_per_s: achieved,
        resumed_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_ids_are_equal_blocks_and_different_ids_differ_from_the_first_word() {
        let e = |ids: Vec<u64>| TraceEntry {
            timestamp: 0.0,
            input_length: 40,
            output_length: 1,
            hash_ids: ids,
            line: 1,
        };
        // Blocks of 16 words, one token added by the engine (a BOS): the first block has 15.
        let a = words(&e(vec![7, 8, 9]), 0, 16, 1, 39);
        let b = words(&e(vec![7, 8, 5]), 1, 16, 1, 39);
        let c = words(&e(vec![6, 8, 9]), 2, 16, 1, 39);
        let wa: Vec<&str> = a.split(' ').collect();
        let wb: Vec<&str> = b.split(' ').collect();
        assert_eq!(wa.len(), 39);
        assert_eq!(wa[..31], wb[..31], "blocks 7 and 8 are shared");
        assert_ne!(
            wa[31], wb[31],
            "block 9 and block 5 differ from their first word"
        );
        assert_ne!(a.split(' ').next(), c.split(' ').next());
        // Past its hash ids, a prompt's words are its own.
        let short = words(&e(vec![7]), 3, 16, 1, 20);
        let other = words(&e(vec![7]), 4, 16, 1, 20);
        assert_eq!(short.split(' ').count(), 20);
        assert_ne!(short, other);
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }
}
