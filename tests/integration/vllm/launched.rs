//! Real vLLM launched by benchspec through `engine.launch`: the shipped spec measured and
//! stopped by a scheduler's SIGTERM, and engine variants relaunching it with their flags.

use super::super::Edit;
use super::super::cli::Bench;
use super::{
    BLOCK, BLOCKS, finished, installed, processes_in_env, requests, shipped, usage_hit_rate,
};
use benchspec::results::limit::LimitKind;
use benchspec::results::{Record, Status};

/// Launched by benchspec from the shipped spec, measured, and stopped by a scheduler's SIGTERM
/// during the last cell: the finished cells are kept and checked against vLLM's own numbers,
/// and no vLLM process (API server, engine core) is left.
#[test]
fn vllm_launched_measured_and_stopped() {
    let Some(env) = installed() else { return };
    let _cpu = super::super::cpu();
    let port = super::super::free_port();
    let dir = super::super::cli::tempdir::Dir::new();
    let job = dir.path().join("job");
    let spec = dir.path().join("vllm.yaml");
    std::fs::write(
        &spec,
        shipped(port, &job).edit("duration: 3s", "duration: 2s"),
    )
    .unwrap();
    let out = dir.path().join("run");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("benchspec"))
        .args(["run", "--save-requests", "--out"])
        .args([&out, &spec])
        .current_dir(super::super::root())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (seen, rest, code) = super::super::sigterm_when(
        child,
        "decode/2K/c4 ...",
        std::time::Duration::from_millis(700),
    );
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap_or_default();
    assert_eq!(code, Some(1), "{seen}{rest}\n{log}");
    assert!(
        rest.contains("error: interrupted during decode/2K/c4"),
        "{rest}"
    );
    assert!(out.join("report.md").is_file(), "{rest}");
    // Readiness: benchspec waited for vLLM's own "ready", and the log is kept.
    assert!(log.contains("Application startup complete"), "{log}");
    // The stop: SIGTERM to the launch's process group; vLLM shuts down on it (no SIGKILL
    // needed) and none of its processes is left.
    assert!(log.contains("Application shutdown complete"), "{log}");
    assert_eq!(
        processes_in_env(&job.to_string_lossy()),
        0,
        "a vLLM process is left"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    the_finished_cells_match_vllm(&out);
}

/// The run in `out`: the manifest holds vLLM's version, context and KV size; the 5 cells
/// finished before the SIGTERM are valid, their prompts exact, each against vLLM's numbers.
fn the_finished_cells_match_vllm(out: &std::path::Path) {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let engine = &manifest["engine"];
    assert_eq!(engine["reported_version"], "0.32.0", "{manifest:#}");
    assert_eq!(engine["max_model_len"], 4096, "{manifest:#}");
    assert_eq!(engine["kv_tokens"], BLOCK * BLOCKS, "{manifest:#}");
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let cells: Vec<&str> = records.iter().map(|r| r.cell.as_str()).collect();
    assert_eq!(
        cells,
        [
            "prefill/256",
            "decode/256/c1",
            "decode/256/c4",
            "prefill/2K",
            "decode/2K/c1"
        ]
    );
    let reqs = requests(out);
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{r:#?}");
        assert_eq!(r.prompt_tokens, r.context, "{}", r.cell);
        assert_eq!(
            r.server_prompt_tokens,
            Some(r.context),
            "vLLM's usage counts the prompt exactly: {r:#?}"
        );
        if r.phase == benchspec::plan::Phase::Decode {
            decode_against_vllm(r, &finished(&reqs, &r.cell));
        } else {
            prefill_against_vllm(r);
        }
    }
}

/// Two variants: `--max-num-seqs 2` and vLLM's default.
const VARIANTS: &str = "    stop_timeout: 20s\n  variants:\n    - name: mns2\n      args: {--max-num-seqs: 2}\n    - name: default";
/// A decode cell, and a capacity search from 3 to 4 under an SLO every probe meets (probes
/// at 3, then 4).
const PHASES: &str = "  prefill: {enabled: false}\n  decode:\n    duration: 2s\n  capacity: {min: 3, max: 4, duration: 2s}\nslo: {tpot: {p90: 10s}}";

/// Engine variants relaunch vLLM with their flags, and vLLM's own gauges show each took:
/// `--max-num-seqs 2` runs 2 of the 4 requests sent at once and queues the rest (the cell is
/// invalid, saying so), the default runs all 4.
#[test]
fn vllm_variants_relaunch_with_their_flags() {
    let Some(env) = installed() else { return };
    let _cpu = super::super::cpu();
    let port = super::super::free_port();
    let dir = super::super::cli::tempdir::Dir::new();
    let job = dir.path().join("job");
    let text = shipped(port, &job)
        .edit("contexts: [256, 2K]", "contexts: [256]")
        .edit("concurrency: [1, 4]", "concurrency: [4]")
        .edit("    stop_timeout: 20s", VARIANTS)
        .edit("  decode:\n    duration: 3s", PHASES);
    let out = dir.path().join("run");
    let mut bench = Bench::new(&["run", "--out", out.to_str().unwrap()]).spec("vllm.yaml", &text);
    for (k, v) in &env {
        bench = bench.env(k, v);
    }
    let done = bench.run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    let cell = |id: &str| {
        records
            .iter()
            .find(|r| r.cell == id)
            .unwrap_or_else(|| panic!("no {id}: {}\n{records:#?}", done.stderr))
    };
    let capped = cell("mns2/decode/256/c4");
    let server = capped.server.as_ref().unwrap();
    // Never more than the flag lets it run (a scrape may catch one between requests).
    assert!(
        server.running_max.is_some_and(|m| (1.0..=2.0).contains(&m)),
        "{capped:#?}"
    );
    assert!(server.waiting_max.is_some_and(|w| w >= 1.0), "{capped:#?}");
    assert_eq!(capped.status, Status::Invalid, "{capped:#?}");
    assert!(
        capped.reasons.iter().any(|r| r.contains("the server ran")),
        "{capped:#?}"
    );
    let full = cell("default/decode/256/c4");
    assert_eq!(full.status, Status::Valid, "{full:#?}");
    // More than the capped variant could (4 in flight; seen 4, or 3 when a scrape caught a
    // request in vLLM's API server between the engine's steps).
    assert!(
        full.server
            .as_ref()
            .unwrap()
            .running_max
            .is_some_and(|m| m > 2.0 && m <= 4.0),
        "{full:#?}"
    );
    limits_against_vllm(
        cell("mns2/capacity/256/c4"),
        cell("default/capacity/256/c4"),
    );
    let logs = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(logs.contains("--max-num-seqs 2"), "{logs}");
    assert_eq!(
        processes_in_env(&job.to_string_lossy()),
        0,
        "a vLLM process is left"
    );
}

/// What limits the capacity probe at 4, from vLLM's own gauges: `--max-num-seqs 2` is the
/// scheduler (running at the flag's 2 with requests waiting), the default is not.
fn limits_against_vllm(capped: &Record, full: &Record) {
    let limit = capped
        .limit
        .as_ref()
        .unwrap_or_else(|| panic!("{capped:#?}"));
    assert_eq!(limit.kind, Some(LimitKind::Scheduler), "{capped:#?}");
    assert!(limit.suggestion.contains("--max-num-seqs"), "{limit:?}");
    assert!(
        full.limit
            .as_ref()
            .is_none_or(|l| l.kind != Some(LimitKind::Scheduler)),
        "{full:#?}"
    );
}

/// A prefill cell (one request of a few ms) against vLLM: its gauges only from a scrape inside
/// its window (never the idle engine's zeros after it); vLLM's TTFT histogram saw its one
/// request, in a bucket near the client's TTFT.
fn prefill_against_vllm(r: &Record) {
    let server = r
        .server
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no server", r.cell));
    // A scrape that answered inside the window saw 0 or 1 running (the request may still be
    // in vLLM's API server); with none inside, nothing is said.
    assert_eq!(
        server.running_max.is_none(),
        server.kv_usage_max.is_none(),
        "{server:#?}"
    );
    assert!(server.running_max.is_none_or(|m| m <= 1.0), "{server:#?}");
    let client = r.ttft_ms.unwrap().p50;
    let bucket = server
        .ttft_ms_p50_bucket
        .unwrap_or_else(|| panic!("{}: {server:#?}", r.cell));
    let high = bucket.high_ms.unwrap_or(f64::INFINITY);
    assert!(
        client >= bucket.low_ms / 2.0 && client <= high * 2.0,
        "{}: client TTFT {client} ms, vLLM's bucket {bucket:?}",
        r.cell
    );
}

/// A decode cell of the launched run against vLLM's own numbers for the same requests.
fn decode_against_vllm(r: &Record, reqs: &[&serde_json::Value]) {
    let cell = &r.cell;
    assert!(
        reqs.len() >= r.completed as usize / 2,
        "{cell}: {} saved",
        reqs.len()
    );
    // vLLM's prefix cache works in whole blocks, and the warm cell's prompts are resent
    // (each slot its own): all but the block that holds the last prompt token is found.
    let cached = (r.context - 1) / BLOCK * BLOCK;
    for q in reqs {
        assert_eq!(q["usage_prompt_tokens"], r.context, "{cell}: {q}");
        assert_eq!(q["usage_cached_tokens"], cached, "{cell}: {q}");
    }
    let server = r
        .server
        .as_ref()
        .unwrap_or_else(|| panic!("{cell}: no server"));
    assert_eq!(server.source, "vllm", "{server:#?}");
    // The hit rate from vLLM's counters over the window, against its per-request usage.
    let hit = server.prefix_hit_rate.unwrap();
    let usage = usage_hit_rate(reqs);
    assert!(
        (hit - usage).abs() < 0.01,
        "{cell}: counters {hit} vs usage {usage}"
    );
    // vLLM's running gauge: never more than the requests in flight (on a quiet machine it
    // reads all of them; a scrape can catch one in vLLM's API server between steps).
    let c = f64::from(r.concurrency);
    let running = server
        .running_max
        .unwrap_or_else(|| panic!("{cell}: {server:#?}"));
    assert!((1.0..=c).contains(&running), "{cell}: {server:#?}");
    // KV in use: each running request's prompt and output, in whole blocks, of the 4,096
    // (seen: 68 blocks, 0.0166, at 2K × 4): at most every slot's, at least the running ones'
    // prompts (a request just admitted holds 2 of 256 + 32's 3 blocks).
    let per_request = (r.context + 32).div_ceil(BLOCK) as f64 / BLOCKS as f64;
    let got = server.kv_usage_max.unwrap();
    assert!(
        got <= c * per_request * 1.05 + 0.0001 && got >= running * per_request * 0.6 - 0.0001,
        "{cell}: KV usage {got}, {per_request} a request, {running} running of {c}"
    );
    // vLLM's TTFT histogram counts from the request's arrival, as the client does: the
    // client's p50 lies in (or near) the server's bucket.
    let client = r.ttft_ms.unwrap().p50;
    let bucket = server.ttft_ms_p50_bucket.unwrap();
    let high = bucket.high_ms.unwrap_or(f64::INFINITY);
    assert!(
        client >= bucket.low_ms / 2.0 && client <= high * 2.0,
        "{cell}: client TTFT p50 {client} ms, server bucket {bucket:?}"
    );
}
