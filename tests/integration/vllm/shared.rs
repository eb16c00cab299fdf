//! The checks that share one vLLM server the test starts: each a run of benchspec against
//! it, held to vLLM's own usage, counters and messages.

use super::super::Edit;
use super::super::cli::Bench;
use super::server::{Vllm, attached};
use super::{BLOCK, Env, finished, installed, usage_hit_rate};
use benchspec::results::Status;

/// One check against the shared server.
type Check = fn(&Vllm, &Env);

/// The checks that share one vLLM: each runs, and every failure is reported together.
#[test]
fn vllm_shared_server() {
    let Some(env) = installed() else { return };
    let _cpu = super::super::cpu();
    let vllm = Vllm::start(&env);
    let checks: [(&str, Check); 9] = [
        ("prompts sized exactly, completions and chat", exact_prompts),
        ("shared prefixes against vLLM's hits", shared_prefix),
        ("a 3-turn session from vLLM's cache", session),
        ("an open-loop cell against vLLM's counters", open_loop),
        ("a capacity search", capacity),
        ("a trace replay against vLLM's cache", replay),
        ("init --from the real server", init_from),
        ("a prompt over max_model_len", over_max_model_len),
        (
            "the twin's intervals on held-out cells",
            super::twin::held_out_cells,
        ),
    ];
    let mut failed = Vec::new();
    for (name, check) in checks {
        let t = std::time::Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&vllm, &env)));
        eprintln!(
            "vLLM check `{name}`: {:?} in {:.1?}",
            result.is_ok(),
            t.elapsed()
        );
        if result.is_err() {
            failed.push(name);
        }
    }
    assert!(
        failed.is_empty(),
        "failed against real vLLM: {failed:?} (each panic is above)"
    );
}

/// Prompts of exact length by the engine's `/tokenize` and by the model's own tokenizer file,
/// on completions and chat (vLLM applies the chat template): vLLM's usage agrees, and its
/// generation counter grew by at least the tokens the window counted.
fn exact_prompts(vllm: &Vllm, env: &Env) {
    for (api, tokenizer) in [
        ("completions", "server"),
        ("chat", "server"),
        ("chat", env[1].1.as_str()),
    ] {
        let before = vllm.metrics();
        let text = attached(
            &format!(", api: {api}, tokenizer: '{tokenizer}'"),
            "{contexts: [300, 1500], concurrency: [2]}",
            "  prefill: {enabled: false}\n  decode: {duration: 1s}",
        );
        let ran = vllm.run(&text, &[]);
        assert_eq!(ran.code, 0, "{api}/{tokenizer}: {}", ran.stderr);
        let after = vllm.metrics();
        let grown =
            |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
        let mut window_tokens = 0;
        for r in ran.records.iter().filter(|r| r.status != Status::Skipped) {
            assert_eq!(r.status, Status::Valid, "{api}: {r:#?}");
            assert_eq!(
                r.server_prompt_tokens,
                Some(r.context),
                "{api}/{tokenizer}: {r:#?}"
            );
            window_tokens += r.output_tokens.unwrap_or(0);
        }
        let finished: u64 = ran
            .reqs
            .iter()
            .filter(|q| q["usage_prompt_tokens"].is_u64())
            .count() as u64;
        assert!(
            grown("vllm:request_success_total") >= finished as f64,
            "{api}: {before:?} {after:?}"
        );
        assert!(
            grown("vllm:generation_tokens_total") >= window_tokens as f64,
            "{api}"
        );
    }
}

/// Two groups sharing 512 tokens (4 whole blocks of vLLM's 128), cold: benchspec's expected
/// hit rate beside vLLM's count, and each request's cached tokens from vLLM's usage.
fn shared_prefix(vllm: &Vllm, _: &Env) {
    let text = attached(
        ", prompt_cache: cold, prefix: {groups: 2, tokens: 512}",
        "{contexts: [1K], concurrency: [2]}",
        "  prefill: {enabled: false}\n  decode: {mode: request-count, requests: 6}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("decode/1K/c2");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let expected = r.prefix_hit_expected.unwrap();
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    let reqs = finished(&ran.reqs, &r.cell);
    let usage = usage_hit_rate(&reqs);
    eprintln!("shared prefix: expected {expected}, vLLM counters {hit}, vLLM usage {usage}");
    assert!(
        (hit - usage).abs() < 0.02,
        "counters {hit} vs usage {usage}"
    );
    assert!(
        (hit - expected).abs() < 0.1,
        "vLLM {hit} vs expected {expected}"
    );
    for q in reqs {
        let c = q["usage_cached_tokens"].as_u64().unwrap();
        assert!(c % BLOCK == 0 && c >= 512 - BLOCK, "{q}");
    }
}

/// Three turns, two users: each turn's prompt is the last one, its answer and 32 new tokens;
/// vLLM finds the previous turn's prompt in its cache in whole blocks.
fn session(vllm: &Vllm, _: &Env) {
    let text = attached(
        ", api: chat",
        "{contexts: [512], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         sessions: {users: [2], sessions: 2, turns: 3, user_tokens: 32, output_tokens: 16}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("sessions/512/u2");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let by = r.by_turn.as_deref().unwrap_or_default();
    assert_eq!(by.len(), 3, "{by:#?}");
    assert_eq!(
        by[0].input_tokens_mean,
        Some(512.0),
        "turn 1 is the context exactly"
    );
    for k in 1..3 {
        let p = by[k - 1].input_tokens_mean.unwrap();
        let n = by[k].input_tokens_mean.unwrap();
        assert!((n - p - 48.0).abs() <= 6.0, "turn {}: {p} -> {n}", k + 1);
        let cached = by[k].cached_tokens_mean.unwrap();
        let whole = (p / BLOCK as f64).floor() * BLOCK as f64;
        assert!(
            cached >= whole - BLOCK as f64 && cached <= n,
            "turn {}: vLLM cached {cached} of a previous prompt of {p}",
            k + 1
        );
        assert!(
            cached > by[k - 1].cached_tokens_mean.unwrap_or(0.0),
            "{by:#?}"
        );
    }
    // The cell's hit rate from vLLM's counters, against its usage request by request.
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    let usage = usage_hit_rate(&finished(&ran.reqs, &r.cell));
    assert!(
        (hit - usage).abs() < 0.01,
        "counters {hit} vs usage {usage}"
    );
    // Request by request, vLLM's cached tokens are whole blocks. (A turn can find one block
    // less than its whole previous prompt: the history's `assistant\n` followed by the
    // answer's text may tokenize differently at the join, e.g. "\n" + "\n\n" as one token.)
    let cached: Vec<u64> = ran
        .reqs
        .iter()
        .filter_map(|q| q["usage_cached_tokens"].as_u64())
        .collect();
    assert_eq!(cached.len(), 6, "{:#?}", ran.reqs);
    assert!(cached.iter().all(|c| c % BLOCK == 0), "{cached:?}");
}

/// Open loop at 4 req/s for 3 s: sent as offered, every request finished by vLLM's count.
fn open_loop(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [256], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         load: {rates: [4], arrivals: constant, duration: 3s}",
    );
    let before = vllm.metrics();
    let ran = vllm.run(&text, &[]);
    let after = vllm.metrics();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.cell("load/256/r4");
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    let sent = r.open.rate_sent.unwrap();
    assert!((sent - 4.0).abs() < 0.2, "sent {sent} req/s");
    let grown = after["vllm:request_success_total"] - before["vllm:request_success_total"];
    assert!(
        grown >= r.completed as f64 && r.completed >= 11,
        "vLLM finished {grown}, the record says {}",
        r.completed
    );
}

/// The shipped 120-request trace at 4× speed: its shared blocks of 512 tokens (4 of vLLM's) are
/// found in vLLM's cache about as often as the trace says they can be.
fn replay(vllm: &Vllm, _: &Env) {
    let trace = super::super::root().join("specs/traces/sample.jsonl");
    let text = attached(
        "",
        "{contexts: [4K], concurrency: [1]}",
        &format!(
            "  prefill: {{enabled: false}}\n  decode: {{enabled: false}}\n  \
             replay: {{trace: '{}', block_tokens: 512, speedup: 4.0}}",
            trace.display()
        ),
    );
    let before = vllm.metrics();
    let ran = vllm.run(&text, &[]);
    let after = vllm.metrics();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran
        .records
        .iter()
        .find(|r| r.phase == benchspec::plan::Phase::Replay)
        .unwrap_or_else(|| panic!("{:#?}", ran.records));
    assert_eq!(r.status, Status::Valid, "{r:#?}");
    assert_eq!(r.completed, 120, "{r:#?}");
    let grown = after["vllm:request_success_total"] - before["vllm:request_success_total"];
    assert!(grown >= 120.0, "vLLM finished {grown}");
    let expected = trace_hit_rate(&std::fs::read_to_string(&trace).unwrap(), 512);
    let hit = r.server.as_ref().and_then(|s| s.prefix_hit_rate).unwrap();
    eprintln!("replay: the trace's hit rate {expected:.4}, vLLM's {hit}");
    assert!(
        (hit - expected).abs() < 0.1,
        "vLLM {hit} vs expected {expected}"
    );
}

/// The fraction of a trace's prompt tokens a perfect prefix cache finds, worked from its
/// `hash_ids` alone: a request reuses its leading blocks sent before (whole `block` tokens).
fn trace_hit_rate(text: &str, block: u64) -> f64 {
    let mut seen = std::collections::HashSet::new();
    let (mut hit, mut all) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = v["input_length"].as_u64().unwrap();
        let ids: Vec<u64> = v["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i.as_u64())
            .collect();
        let leading = ids.iter().take_while(|i| seen.contains(*i)).count() as u64;
        hit += (leading * block).min(input.saturating_sub(1));
        all += input;
        seen.extend(ids);
    }
    hit as f64 / all as f64
}

/// A concurrency search under a TTFT bound vLLM meets at low load.
fn capacity(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [256], concurrency: [1]}",
        "  prefill: {enabled: false}\n  decode: {enabled: false}\n  \
         capacity: {search: concurrency, min: 1, max: 8, precision: 4, duration: 1s}\nslo:\n  ttft: {p90: 2s}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let summary = ran.cell("capacity/256");
    assert_eq!(summary.status, Status::Valid, "{summary:#?}");
    assert!(summary.open.capacity.is_some(), "{summary:#?}");
    let probes = ran
        .records
        .iter()
        .filter(|r| r.cell.starts_with("capacity/256/c"))
        .count();
    assert!(probes >= 1, "{:#?}", ran.records);
}

/// `init --from` the server: what vLLM says of itself, in a spec that validates and runs.
fn init_from(vllm: &Vllm, _: &Env) {
    let dir = super::super::cli::tempdir::Dir::new();
    let spec = dir.path().join("vllm.yaml");
    let done = Bench::new(&["init", "--from", &vllm.url(), "--duration", "1s", "--out"])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let written = std::fs::read_to_string(&spec).unwrap();
    for want in [
        "kind: vllm",
        "version: \"0.32.0\"",
        "served_name: \"tiny\"",
        "max_model_len: 4096",
    ] {
        assert!(written.contains(want), "`{want}` missing:\n{written}");
    }
    let valid = Bench::new(&["validate"]).arg(&spec).run();
    assert_eq!(valid.code, 0, "{}", valid.stderr);
    let text = written.replace(&vllm.url(), "BASE");
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.records.is_empty() && ran.records.iter().all(|r| r.status == Status::Valid));
}

/// A spec that says 8,192 where vLLM serves 4,096: warned of at the start, and the 6K cells
/// fail with vLLM's own words.
fn over_max_model_len(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [6K], concurrency: [1]}",
        "  decode: {duration: 1s}",
    )
    .edit(
        "served_name: tiny",
        "served_name: tiny, max_model_len: 8192",
    );
    let ran = vllm.run(&text, &[]);
    assert_ne!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("the spec says max_model_len 8192, the server serves 4096"),
        "{}",
        ran.stderr
    );
    for r in &ran.records {
        assert_eq!(r.status, Status::Failed, "{r:#?}");
        let why = r.reasons.join("; ");
        assert!(
            why.contains("maximum context length is 4096 tokens"),
            "{}: vLLM's message in the reasons: {why}",
            r.cell
        );
    }
}
