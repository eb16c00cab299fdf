//! Shared prefixes (`workload.prefix`): prompts of one group share exactly the prefix's
//! tokens on the server, and `prefix_hit_expected` says what a perfect cache would reuse.

use super::open::run_spec_paused;
use benchspec::results::{Record, Status};

fn shipped() -> String {
    std::fs::read_to_string(super::repo_path("specs/shared-prefix.yaml")).unwrap()
}

fn find<'a>(records: &'a [Record], id: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.cell == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

#[test]
fn the_server_reuses_exactly_the_shared_prefix_of_every_prompt() {
    let (records, dir) = run_spec_paused(&shipped());
    let ids = [
        ("prefill/1K", 0.5),
        ("prefill/4K", 0.125),
        ("decode/1K/c4", 0.5),
        ("decode/4K/c4", 0.125),
        ("load/1K/r4", 0.5),
        ("load/4K/r4", 0.125),
    ];
    for (id, want) in ids {
        let r = find(&records, id);
        assert_eq!(r.status, Status::Valid, "{id}: {:?}", r.reasons);
        assert_eq!(r.prefix_hit_expected, Some(want), "{id}");
        assert_eq!(
            r.server_prompt_tokens,
            Some(r.context),
            "{id}: exact lengths"
        );
        // The simulator's own count over the window (decode and load cells are watched):
        // the primes are before it, and each prompt finds exactly its 512 shared tokens
        // (32 blocks of 16) and nothing more.
        if !id.starts_with("prefill") {
            let server = r.server.as_ref().and_then(|s| s.prefix_hit_rate);
            assert_eq!(server, Some(want), "{id}: the server's hit rate");
        }
        // A prefill cell's figure is the prefill of the uncached rest, and says so.
        let prefix_note = |w: &String| id.starts_with("prefill") && w.contains("workload.prefix");
        assert!(r.warnings.iter().all(prefix_note), "{id}: {:?}", r.warnings);
        assert_eq!(!r.warnings.is_empty(), id.starts_with("prefill"), "{id}");
    }
    // Request by request, the server's own `cached_tokens`: exactly the shared 512.
    let text = std::fs::read_to_string(dir.path().join("run/requests.jsonl")).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["error"].is_null() && !v["usage_prompt_tokens"].is_null() {
            assert_eq!(v["usage_cached_tokens"], 512, "{line}");
            seen += 1;
        }
    }
    assert!(seen > 100, "{seen} requests");
}

#[test]
fn a_shared_prefix_shortens_time_to_first_token_and_without_one_nothing_is_expected() {
    // 6K of each 8K prompt shared: the prefill of the shared part is the server's to skip.
    let long = shipped()
        .replace("tokens: 512 ", "tokens: 6K  ")
        .replace("contexts: [1K, 4K]", "contexts: [8K]");
    let (with, _d1) = run_spec_paused(&long);
    let plain = long.replace(
        "  prefix:\n    groups: 2                 # requests spread evenly over two system prompts\n    tokens: 6K                # counted inside each context, BOS included\n    prime: true               # each prefix sent once before every window\n",
        "",
    );
    assert!(!plain.contains("prefix:\n"), "the prefix block was removed");
    let (without, _d2) = run_spec_paused(&plain);
    let ttft = |rs: &[Record], id: &str| find(rs, id).ttft_ms.map(|t| t.p50).unwrap();
    for id in ["prefill/8K", "load/8K/r4"] {
        let (a, b) = (ttft(&with, id), ttft(&without, id));
        assert!(
            a < 0.7 * b,
            "{id}: TTFT p50 {a} ms with the prefix, {b} ms without"
        );
        assert_eq!(find(&with, id).prefix_hit_expected, Some(0.75), "{id}");
    }
    for r in &without {
        assert_eq!(r.prefix_hit_expected, None, "{}", r.cell);
        if let Some(server) = r.server.as_ref().and_then(|s| s.prefix_hit_rate) {
            assert_eq!(server, 0.0, "{}: cold prompts share nothing", r.cell);
        }
    }
}

#[test]
fn plan_says_the_prompts_share_prefixes() {
    let done = super::cli::Bench::new(&["plan"])
        .spec("s.yaml", &shipped())
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stdout.contains(
            "shared prefixes: 2 × 512 tokens at the start of every prompt, each primed before every window"
        ),
        "{}",
        done.stdout
    );
}
