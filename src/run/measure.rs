//! Measuring one runnable cell: its kind's measurement (prefill, decode, load), its ticks
//! forwarded as events, and the engine and GPUs watched around it (`crate::telemetry`).

use super::cell;
use super::event::Event;
use crate::plan::{self, Measure};
use crate::results::Record;
use std::sync::Arc;

/// Measure one runnable cell, forwarding a decode cell's ticks as events.
pub(super) async fn measure(
    cx: &Arc<cell::Ctx>,
    c: &plan::Cell,
    rec: Record,
    on: &(dyn Fn(Event) + Sync),
) -> Record {
    // Each cell starts on an engine the earlier cells' requests have left, as a real one.
    cx.client.settle().await;
    let watching = cx.observer.begin(&cx.marks).await;
    // The images of this cell's requests alone (`workload.images`).
    let _ = cx.client.take_images();
    let mut rec = measure_only(cx, c, rec, on).await;
    let text = rec
        .open
        .input_tokens_mean
        .unwrap_or(rec.prompt_tokens as f64);
    rec.images = crate::results::ImageUse::of(cx.client.take_images(), text);
    let fraction = cx.workload.validity.min_active_fraction;
    cx.observer
        .finish(watching, &cx.marks, rec, fraction, &|n| on(Event::Note(n)))
        .await
}

async fn measure_only(
    cx: &Arc<cell::Ctx>,
    c: &plan::Cell,
    rec: Record,
    on: &(dyn Fn(Event) + Sync),
) -> Record {
    match c.measure {
        Measure::Prefill(how) => cell::prefill(cx, c, how, rec).await,
        Measure::Load(load) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            forward(cell::load(cx.clone(), c, load, rec, tx), rx, &c.id, on).await
        }
        // A search is run probe by probe by the cell loop (`capacity.rs`), never here.
        Measure::Capacity(_) => rec,
        Measure::Decode(load) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            forward(cell::decode(cx.clone(), c, load, rec, tx), rx, &c.id, on).await
        }
        Measure::Replay(r) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            forward(cell::replay(cx.clone(), c, r, rec, tx), rx, &c.id, on).await
        }
        Measure::Sessions(load) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            forward(cell::sessions(cx.clone(), c, load, rec, tx), rx, &c.id, on).await
        }
    }
}

/// Measure with `measuring`, forwarding its ticks as events.
async fn forward(
    measuring: impl std::future::Future<Output = Record>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<cell::Tick>,
    id: &str,
    on: &(dyn Fn(Event) + Sync),
) -> Record {
    tokio::pin!(measuring);
    loop {
        tokio::select! {
            rec = &mut measuring => break rec,
            Some(tick) = rx.recv() => on(Event::Tick { id: id.to_string(), tick }),
        }
    }
}
