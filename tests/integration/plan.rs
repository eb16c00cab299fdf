//! The plan: the seed spec's cells, YAML/TOML twins, skip reasons, clamping, order and shards.

use benchspec::plan::{self, Mode, Phase, Plan, Rates, Shard};
use benchspec::spec::{self, Stage};

fn seed(ext: &str) -> Plan {
    let path = super::repo_path(&format!("specs/h200-nvl-gemma-4-e2b.{ext}"));
    let set = |_: &str| Some("x".to_string());
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded = spec::parse(&path, &text, Stage::Validate, &set)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    plan::expand(&loaded.spec, &|_| Rates::default())
}

#[test]
fn yaml_and_toml_twins_give_identical_plans() {
    assert_eq!(seed("yaml"), seed("toml"));
}

#[test]
fn seed_plan_has_6_prefill_and_40_decode_cells() {
    let p = seed("yaml");
    let run: Vec<_> = p.runnable().collect();
    assert_eq!(
        run.iter().filter(|c| c.phase() == Phase::Prefill).count(),
        6
    );
    assert_eq!(
        run.iter().filter(|c| c.phase() == Phase::Decode).count(),
        40
    );
    let skipped: Vec<_> = p.skipped().map(|c| c.id.as_str()).collect();
    assert_eq!(skipped.len(), 8);
    assert!(skipped.iter().all(|id| id.starts_with("decode/128K/c")));
}

#[test]
fn prefill_128k_is_clamped_and_standalone() {
    let p = seed("yaml");
    let cell = p.cells.iter().find(|c| c.id == "prefill/128K").unwrap();
    assert_eq!(
        (cell.prompt_tokens, cell.clamped, cell.mode()),
        (131_071, true, Mode::Standalone)
    );
    let cell = p.cells.iter().find(|c| c.id == "prefill/123K").unwrap();
    assert_eq!(
        (cell.prompt_tokens, cell.clamped, cell.mode()),
        (125_952, false, Mode::DecodeWarmup)
    );
}

#[test]
fn order_keeps_each_context_together_lowest_first() {
    let p = seed("yaml");
    let ids: Vec<&str> = p.runnable().map(|c| c.id.as_str()).take(10).collect();
    assert_eq!(
        ids,
        [
            "prefill/8K",
            "decode/8K/c1",
            "decode/8K/c2",
            "decode/8K/c4",
            "decode/8K/c8",
            "decode/8K/c16",
            "decode/8K/c32",
            "decode/8K/c64",
            "decode/8K/c128",
            "prefill/16K"
        ]
    );
    let contexts: Vec<u64> = p.runnable().map(|c| c.context).collect();
    assert!(contexts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn shards_partition_the_runnable_cells() {
    let full = seed("yaml");
    let all: Vec<String> = full.runnable().map(|c| c.id.clone()).collect();
    for n in 1..=9u32 {
        let mut seen = Vec::new();
        for k in 1..=n {
            let shard = full.clone().shard(Shard { k, n });
            assert_eq!(shard, full.clone().shard(Shard { k, n }), "deterministic");
            let ids: Vec<String> = shard.runnable().map(|c| c.id.clone()).collect();
            // A decode-warmup prefill stays with the decode cell whose warm-up measures it.
            for (i, c) in shard.runnable().enumerate() {
                if c.mode() == Mode::DecodeWarmup {
                    let next = shard.runnable().nth(i + 1).unwrap();
                    assert_eq!((next.phase(), next.context), (Phase::Decode, c.context));
                }
            }
            if k > 1 {
                assert_eq!(shard.skipped().count(), 0, "skipped cells live in shard 1");
            }
            seen.extend(ids);
        }
        assert_eq!(
            seen, all,
            "{n} shards must cover every runnable cell once, in order"
        );
    }
}

#[test]
fn shards_are_balanced_by_estimate() {
    let full = seed("yaml");
    let times: Vec<f64> = (1..=4)
        .map(|k| full.clone().shard(Shard { k, n: 4 }).estimate_s)
        .collect();
    let max = times.iter().cloned().fold(0.0, f64::max);
    let mean = times.iter().sum::<f64>() / 4.0;
    assert!(max < mean * 1.6, "{times:?}");
}

#[test]
fn shard_text_is_checked() {
    for bad in ["0/2", "3/2", "x/2", "1", "1/0", ""] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Shard::parse("2/4").ok(), Some(Shard { k: 2, n: 4 }));
}

#[test]
fn matrix_defaults_and_skips() {
    let text = "version: 1\nname: t\nengine: {kind: vllm}\nmodel: {served_name: m, max_model_len: 16K}\nmatrix:\n  contexts: [8K, 16K]\n  concurrency: [1, 2]\nphases:\n  decode:\n    concurrency: [2]\n";
    let loaded = spec::parse("t.yaml", text, Stage::Validate, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let p = plan::expand(&loaded.spec, &|_| Rates::default());
    let table: Vec<(String, Option<String>)> = p
        .cells
        .iter()
        .map(|c| (c.id.clone(), c.skip.clone()))
        .collect();
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        table,
        vec![
            ("prefill/8K".into(), None),
            (
                "decode/8K/c1".into(),
                s("concurrency 1 is not in `phases.decode.concurrency`")
            ),
            ("decode/8K/c2".into(), None),
            ("prefill/16K".into(), None),
            (
                "decode/16K/c1".into(),
                s("16384 + 4096 output tokens > max_model_len 16384")
            ),
            (
                "decode/16K/c2".into(),
                s("16384 + 4096 output tokens > max_model_len 16384")
            ),
        ]
    );
    let prefill16 = &p.cells[3];
    assert_eq!(
        (prefill16.prompt_tokens, prefill16.clamped, prefill16.mode()),
        (16_383, true, Mode::Standalone)
    );
    // The decode-warmup prefill of 8K is measured during decode/8K/c2, its first decode cell.
    assert_eq!(p.cells[0].mode(), Mode::DecodeWarmup);
}

#[test]
fn plan_json_is_stable() {
    let p = seed("yaml");
    insta::assert_json_snapshot!(&p.cells[..3]);
}

/// `plan` knows a simulator profile's max_model_len (`tiny`: 8192): the 8K prefill is
/// clamped there, as the run will clamp it.
#[test]
fn plan_knows_a_sim_profiles_max_model_len() {
    let text = "version: 1\nname: t\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [256, 8K], concurrency: [1]}\n";
    let done = super::cli::Bench::new(&["plan"]).spec("s.yaml", text).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let table = &done.stdout;
    assert!(
        table.contains("max_model_len 8192, max output 32 tokens"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains(" prefill/8K ") && l.contains(" 8191* ")),
        "{table}"
    );
    assert!(
        table.contains("decode/8K/c1 skipped: 8192 + 32 output tokens > max_model_len 8192"),
        "{table}"
    );
}

/// An engine whose max_model_len is only known once it answers (here a launched `benchspec
/// sim --profile tiny`, 8192) clamps the 8K prefill at run time; the reports mark the clamp
/// as `plan` marks its own.
#[test]
fn a_prefill_clamped_at_run_time_is_marked_in_the_reports() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bin = assert_cmd::cargo::cargo_bin("benchspec");
    let text = format!(
        "version: 1\nname: clamped\nengine:\n  kind: vllm\n  base_url: http://127.0.0.1:{port}\n  launch:\n    command: ['{}', sim, --port, '{port}', --profile, tiny, --served-name, m]\n    ready_timeout: 20s\n    stop_timeout: 2s\nmodel: {{served_name: m}}\nworkload: {{max_output_tokens: 32}}\nmatrix: {{contexts: [256, 8K], concurrency: [1]}}\nphases: {{prefill: {{mode: standalone}}, decode: {{duration: 300ms}}}}\n",
        bin.display()
    );
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let plan = super::cli::Bench::new(&["plan"])
        .spec("s.yaml", &text)
        .run();
    assert!(
        plan.stdout
            .contains("max_model_len read from the server at run time"),
        "the plan cannot know: {}",
        plan.stdout
    );
    let done = super::cli::Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| 8K |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.ends_with("| Valid | 8,191\\* |"), "{row}");
    let row = md.lines().find(|l| l.starts_with("| 256 |")).unwrap();
    assert!(row.ends_with("| Valid | 256 |"), "{row}");
    assert!(md.contains("\\* clamped to max_model_len − 1"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("8K* context"), "{html}");
}
