//! Multi-turn sessions (`phases.sessions`): every later turn resends the conversation so far
//! with each answer as received, so the server's prefix cache covers the history; TTFT by
//! turn shows it.

use super::open::run_spec_paused;
use benchspec::results::{Record, Status, TurnStats};

fn shipped() -> String {
    std::fs::read_to_string(super::repo_path("specs/sessions.yaml")).unwrap()
}

fn find<'a>(records: &'a [Record], id: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.cell == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

fn turns(r: &Record) -> &[TurnStats] {
    r.by_turn.as_deref().unwrap_or_default()
}

#[test]
fn each_turn_resends_the_history_and_the_server_finds_it_cached() {
    let (records, dir) = run_spec_paused(&shipped());
    for id in ["sessions/2K/u4", "sessions/2K/u16", "sessions/2K/r2"] {
        let r = find(&records, id);
        assert_eq!(r.status, Status::Valid, "{id}: {:?}", r.reasons);
        let by = turns(r);
        assert_eq!(by.len(), 4, "{id}: {by:#?}");
        let s = r.sessions.unwrap();
        assert!(s.completed > 0 && s.started >= s.completed, "{id}: {s:?}");
        assert_eq!(s.turns_mean, Some(4.0), "{id}");
        for (k, t) in by.iter().enumerate() {
            // Turn 1 is the context exactly; each later turn adds the 64-token answer as
            // received and the 128-token user message, as the server counts them.
            let want = 2048.0 + k as f64 * (64.0 + 128.0);
            assert_eq!(t.input_tokens_mean, Some(want), "{id} turn {}", t.turn);
            // The server's own count: the whole previous prompt and its answer are found in
            // its prefix cache (everything but the new message), the first turn's nothing.
            let cached = if k == 0 { 0.0 } else { want - 128.0 };
            assert_eq!(t.cached_tokens_mean, Some(cached), "{id} turn {}", t.turn);
        }
    }
    // TTFT by turn: the cold first prompt against a history found in the cache.
    let by = turns(find(&records, "sessions/2K/u4"));
    let ttft = |t: &TurnStats| t.ttft_ms.unwrap().p50;
    assert!(
        ttft(&by[0]) > 1.5 * ttft(&by[1]),
        "TTFT p50 turn 1 {} ms, turn 2 {} ms",
        ttft(&by[0]),
        ttft(&by[1])
    );
    // The reports: a table of turns per session cell, and the turns in the CSV.
    let run = dir.path().join("run");
    let done = super::cli::Bench::new(&["report", run.to_str().unwrap()]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("## Sessions"), "{md}");
    assert!(
        md.contains("| Turn | Requests | Input tokens | Cached tokens (server) | TTFT p50 / p90 | TPOT p50 / p90 |"),
        "{md}"
    );
    assert!(
        md.contains("| 2 | ") && md.contains("| 2,240 | 2,112 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("<h2>Sessions</h2>"));
    // The chart: a line per cell and percentile, a dot per turn.
    let chart = html
        .split("TTFT by turn of each session cell")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .unwrap_or_default();
    assert_eq!(chart.matches("<polyline").count(), 6, "{chart}");
    assert_eq!(chart.matches("<circle").count(), 24, "{chart}");
    assert!(
        chart.contains("4 users p50: ") && chart.contains(" ms at turn 2</title>"),
        "{chart}"
    );
    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let head = csv.lines().next().unwrap_or_default();
    assert!(
        head.contains(",by_turn_input_tokens_mean,by_turn_ttft_ms_p50,by_turn_tpot_ms_p50,"),
        "{head}"
    );
    assert!(csv.contains("2048; 2240; 2432; 2624"), "{csv}");
}

#[test]
fn chat_sessions_keep_the_roles_and_a_long_history_ends_at_max_model_len() {
    let text = shipped()
        .replace("  max_output_tokens: 64\n", "  max_output_tokens: 64\n  api: chat\n")
        .replace("max_model_len: 131072", "max_model_len: 2500")
        .replace("users: [4, 16]", "users: [2]")
        .replace("    rates: [2]                # open loop: 2 new sessions per second (sessions/2K/r2)\n", "");
    let (records, _dir) = run_spec_paused(&text);
    let r = find(&records, "sessions/2K/u2");
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    // No SLO: nothing judged.
    assert!(r.open.slo_met.is_none() && r.by_turn.as_ref().unwrap()[0].slo_fraction.is_none());
    let by = turns(r);
    assert_eq!(by[0].input_tokens_mean, Some(2048.0), "{by:#?}");
    // Turns 1 and 2 fit in 2500 tokens; turn 3 (about 2.4K + 64 output) does not.
    assert_eq!(by.len(), 2, "{by:#?}");
    assert!(by[1].input_tokens_mean > Some(2048.0 + 192.0), "{by:#?}");
    let s = r.sessions.unwrap();
    assert!(s.ended_at_max_len > 0 && s.completed == 0, "{s:?}");
}

#[test]
fn an_slo_judges_every_turn_and_the_cell() {
    // Turn 1 is a cold 2K prefill (~100 ms TTFT on the simulated H200), later turns find
    // their history cached (~55 ms): an 80 ms TTFT objective splits them.
    let text = shipped().replace("phases:\n", "slo:\n  ttft: {p50: 80ms}\nphases:\n");
    let (records, dir) = run_spec_paused(&text);
    let r = find(&records, "sessions/2K/u4");
    let by = turns(r);
    let run = dir.path().join("run");
    let done = super::cli::Bench::new(&["report", run.to_str().unwrap()]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("| TPOT p50 / p90 | Within the SLO |"), "{md}");
    let f = |t: &TurnStats| t.slo_fraction.unwrap();
    assert!(f(&by[0]) < 0.5, "turn 1: {}", f(&by[0]));
    assert!(by[1..].iter().all(|t| f(t) > 0.9), "{by:#?}");
    let (fraction, goodput) = (r.open.slo_fraction.unwrap(), r.open.goodput_rps.unwrap());
    assert!(fraction > 0.6 && fraction < 0.95, "{fraction}");
    assert!(
        goodput > 0.0 && r.open.slo_met == Some(true),
        "{:?}",
        r.open
    );
}

#[test]
fn every_turn_is_saved_with_its_gaps_and_the_cell_has_an_itl() {
    let spec = shipped()
        .replace("users: [4, 16]", "users: [4]")
        .replace("rates: [2] ", "# rates: [2] ")
        .replace("duration: 15s", "duration: 5s");
    let (records, dir) = run_spec_paused(&spec);
    let r = find(&records, "sessions/2K/u4");
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    let text = std::fs::read_to_string(dir.path().join("run/requests.jsonl")).unwrap();
    let lines: Vec<benchspec::rundir::RequestLine> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &benchspec::rundir::RequestLine| l.cell == r.cell)
        .collect();
    // One line per turn that ended in the window: the record's own counts.
    assert_eq!(lines.len() as u64, r.requests_started, "{text}");
    let turns: Vec<&benchspec::rundir::TurnRequest> = lines
        .iter()
        .map(|l| match &l.request {
            benchspec::rundir::Request::Turn(t) => t,
            other => panic!("not a turn: {other:?}"),
        })
        .collect();
    let tokens: u64 = turns.iter().map(|t| t.output_tokens).sum();
    assert_eq!(Some(tokens), r.output_tokens);
    let mut all = Vec::new();
    for t in &turns {
        assert!(t.turn >= 1 && t.turn <= 4, "{t:?}");
        // One token a chunk: a gap between each two of the 64 tokens.
        assert_eq!(t.itl_us.len() as u64, t.output_tokens - 1, "{t:?}");
        // The gaps add up to the span from the first token to the last, timed apart.
        let span_us = (t.last_token_s.unwrap() - t.first_token_s.unwrap()) * 1e6;
        let sum: u64 = t.itl_us.iter().map(|&g| u64::from(g)).sum();
        assert!(
            (sum as f64 - span_us).abs() <= t.itl_us.len() as f64 + 1.0,
            "{sum} vs {span_us}"
        );
        all.extend(t.itl_us.iter().map(|&g| f64::from(g) / 1e3));
    }
    // The record's ITL (and TBT) is the distribution of every saved gap.
    let itl = r.open.itl_ms.expect("a session cell has an ITL");
    assert_eq!(r.tbt_ms, Some(itl));
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    assert!(
        (itl.mean - mean).abs() / mean < 0.01,
        "{} vs {mean}",
        itl.mean
    );
}

/// report.md of a sessions run (`tests/fixtures/sessions-run`, recorded from
/// `specs/sessions.yaml` with 2 and 4 users, 1 session/s, 3 turns, 4 s windows): one table
/// per cell with a row per turn, the cells' TPOT where they have no TBT, and no prompt-cache
/// setting (sessions do not use it).
#[test]
fn a_sessions_report_has_a_row_per_turn() {
    let run = super::root().join("tests/fixtures/sessions-run");
    let out = super::cli::tempdir::Dir::new();
    let done = super::cli::Bench::new(&[
        "report",
        run.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--format",
        "markdown",
    ])
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    // The fixture's figures: u2's turns 1–3 with 4 requests each, TPOT p50 3.8, 3.9, 3.8 ms.
    for row in [
        "| 1 | 4 | 2,048 | 0 | 62 ms / 82 ms | 3.8 ms / 4.1 ms |",
        "| 2 | 4 | 2,240 | 2,112 | 48 ms / 57 ms | 3.9 ms / 3.9 ms |",
        "| 3 | 4 | 2,432 | 2,304 | 48 ms / 53 ms | 3.8 ms / 3.9 ms |",
    ] {
        assert!(md.lines().any(|l| l == row), "missing row {row}:\n{md}");
    }
    assert!(!md.contains("||"), "rows run together:\n{md}");
    assert!(!md.contains("Prompt cache"), "{md}");
    // All measurements: the time between tokens is the cell's TPOT p50, said so.
    assert!(md.contains(" (TPOT) |"), "{md}");
    insta::assert_snapshot!("sessions_report_md", md);
}

/// The server's TTFT means what vLLM's does: from the request's arrival at its HTTP server.
/// In sessions/2K/u4 the simulated API server's wait (its fixed part, the queue into the
/// engine, the streams it serves) is most of a later turn's TTFT, whose history is cached:
/// the engine's own histogram, counting from the request's entry into the engine, said 14 ms
/// where the client measured 57 ms. Its p50 (read from vLLM's buckets) is now within 15% of
/// the client's.
#[test]
fn the_servers_ttft_counts_from_the_arrival_as_vllms_does() {
    let spec = shipped()
        .replace("users: [4, 16]", "users: [4]")
        .replace("rates: [2] ", "# rates: [2] ")
        .replace("duration: 15s", "duration: 5s");
    let (records, _dir) = run_spec_paused(&spec);
    let r = find(&records, "sessions/2K/u4");
    assert_eq!(r.status, Status::Valid, "{:?}", r.reasons);
    let client = r.ttft_ms.unwrap().p50;
    let server = r.server.as_ref().and_then(|s| s.ttft_ms_p50).unwrap();
    assert!(
        (server - client).abs() <= 0.15 * client,
        "server TTFT p50 {server} ms, client {client} ms"
    );
}
