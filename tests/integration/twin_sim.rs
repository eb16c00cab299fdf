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
        // A single prompt's window may be too short for a gauge (none is read in a cold
        // cell's first 250 ms); where one is read, only the cell's own request runs.
        assert!(
            running.is_none_or(|n| n <= 1.0),
            "{cell}: running {running:?}"
        );
        let (got, want) = (ttft(&records, cell), ttft(&reference, cell));
        eprintln!("{cell}: TTFT {got} ms after decode cells, {want} ms alone");
        assert!((got - want).abs() / want <= 0.01, "{cell}: {got} vs {want}");
        assert!(got > last, "{cell}: {got} after {last}");
        last = got;
    }
}

/// One model, one answer: the seed twin's printed prediction and its `--out` run are the
/// same numbers on every cell, and the twin run as an engine gives the fitted cells
/// (decode/8K/c8 and decode/32K/c32) the total tok/s measured on the seed page within 3%.
#[test]
fn the_table_and_the_predicted_run_are_one_answer() {
    let _cpu = super::cpu();
    let dir = super::cli::tempdir::Dir::new();
    let (twin, _) = super::twin::fit_seed(&dir);
    let spec = dir.path().join("s.yaml");
    std::fs::write(
        &spec,
        "version: 1
name: one answer
engine: {kind: vllm, base_url: 'http://127.0.0.1:9'}
model: {served_name: gemma}
workload: {max_output_tokens: 4096, ignore_eos: true}
matrix: {contexts: [8K, 32K], concurrency: [8, 32]}
phases: {prefill: {mode: decode-warmup}, decode: {duration: 30s}}
report: {formats: [markdown]}
",
    )
    .unwrap();
    let out = dir.path().join("predicted");
    let p = super::cli::Bench::new(&["predict", "--format", "json", "--out"])
        .arg(&out)
        .arg(&spec)
        .arg("--twin")
        .arg(&twin)
        .run();
    assert_eq!(p.code, 0, "{}", p.stderr);
    let doc: serde_json::Value = serde_json::from_str(&p.stdout).unwrap();
    let run = benchspec::rundir::RunDir::open(&out)
        .unwrap()
        .records()
        .unwrap();
    for r in &run {
        let c = doc["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cell"] == r.cell.as_str())
            .unwrap_or_else(|| panic!("{}: {doc:#}", r.cell));
        let pairs = [
            ("total_tok_s", r.total_tok_s),
            ("ttft_ms_p50", r.ttft_ms.map(|t| t.p50)),
        ];
        for (key, written) in pairs {
            let printed = c[key].as_f64();
            eprintln!("{} {key}: printed {printed:?}, written {written:?}", r.cell);
            match (printed, written) {
                (Some(a), Some(b)) => assert!(near(a, b, 0.02), "{} {key}: {a} vs {b}", r.cell),
                (a, b) => assert_eq!(a.is_some(), b.is_some(), "{} {key}", r.cell),
            }
        }
    }
    the_fitted_cells_give_the_seeds_tok_s(&run);
}

/// Whether `a` is within `tol` (a fraction) of `b`.
fn near(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

/// The twin run as an engine (the predicted `run`) gives the fitted cells decode/8K/c8 and
/// decode/32K/c32 the total tok/s measured on the seed page within 3%.
fn the_fitted_cells_give_the_seeds_tok_s(run: &[benchspec::results::Record]) {
    let seed = benchspec::rundir::RunDir::open(std::path::Path::new(&super::repo_path(
        "tests/fixtures/seed-run",
    )))
    .unwrap()
    .records()
    .unwrap();
    for cell in ["decode/8K/c8", "decode/32K/c32"] {
        let got = run
            .iter()
            .find(|r| r.cell == cell)
            .unwrap()
            .total_tok_s
            .unwrap();
        let want = seed
            .iter()
            .find(|r| r.cell == cell)
            .unwrap()
            .total_tok_s
            .unwrap();
        eprintln!("{cell}: the twin as an engine {got} tok/s, measured {want}");
        assert!(near(got, want, 0.03), "{cell}: {got} vs {want}");
    }
}
