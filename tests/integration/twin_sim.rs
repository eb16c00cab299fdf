//! A run in this process on a paused clock (`run_in_process`, what `predict --out` runs) and
//! the twin's prediction of it: cells that do not overlap, and one answer for one cell.

use benchspec::results::Record;

/// A spec on the simulated H200: prefill measured during each context's decode warm-up,
/// after the previous context's 32 streams of 4,096 tokens were cut at the window's close.
const AFTER_DECODE: &str = "version: 1
name: cells apart
engine: {kind: sim, sim: {profile: h200-gemma-4-e2b}}
model: {served_name: gemma}
workload: {max_output_tokens: 4096, ignore_eos: true}
matrix: {contexts: [8K, 16K, 32K], concurrency: [32]}
phases:
  prefill: {mode: decode-warmup}
  decode: {duration: 2s}
";

fn ttft(records: &[Record], cell: &str) -> f64 {
    let r = records.iter().find(|r| r.cell == cell).unwrap();
    r.ttft_ms.unwrap_or_else(|| panic!("{cell}: {r:?}")).p50
}

/// A prefill cell after a decode cell starts on an idle engine: the decode cell's cancelled
/// requests are gone (the server runs at most the cell's own request), and its TTFT is the
/// one the same prompt length gets on an engine that ran nothing before (a run of the
/// prefill cells alone), so TTFT grows with the context.
#[test]
fn a_prefill_cell_after_a_decode_cell_starts_on_an_idle_engine() {
    let (records, _dir) = super::open::run_spec_paused(AFTER_DECODE);
    let alone = AFTER_DECODE
        .replace("mode: decode-warmup", "mode: standalone, repeats: 1")
        .replace("decode: {duration: 2s}", "decode: {enabled: false}");
    let (reference, _dir2) = super::open::run_spec_paused(&alone);
    let mut last = 0.0;
    for cell in ["prefill/8K", "prefill/16K", "prefill/32K"] {
        let r = records.iter().find(|r| r.cell == cell).unwrap();
        let running = r.server.as_ref().and_then(|s| s.running_max);
        assert!(
            running.is_some_and(|n| n <= 1.0),
            "{cell}: running {running:?}"
        );
        let (got, want) = (ttft(&records, cell), ttft(&reference, cell));
        eprintln!("{cell}: TTFT {got} ms after decode cells, {want} ms alone");
        assert!((got - want).abs() / want <= 0.01, "{cell}: {got} vs {want}");
        assert!(got > last, "{cell}: {got} after {last}");
        last = got;
    }
}
