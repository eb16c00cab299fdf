//! Images in prompts (`workload.images`): what the records claim against the simulator's
//! own counters, the text's exact length with images present, vLLM's 400 for too many
//! images as a failed request, and bad image specs refused where they are written.

use benchspec::results::{Record, Status};
use benchspec::spec::{self, Stage};

/// A spec of `images` (a YAML flow map) against the server at `base`, chat, 256-token
/// prompts: three cold prefill requests and a second of decode at concurrency 2.
pub(super) fn spec_for(base: &str, images: &str) -> String {
    format!(
        "version: 1\nname: images\nengine: {{kind: vllm, base_url: '{base}'}}\n\
         model: {{served_name: tiny}}\n\
         workload: {{api: chat, max_output_tokens: 16, images: {images}}}\n\
         matrix: {{contexts: [256], concurrency: [2]}}\n\
         phases: {{prefill: {{mode: standalone, repeats: 3}}, decode: {{duration: 1s}}}}\n"
    )
}

/// An external simulator (`tiny`) with `rule`'s images, and its runtime.
pub(super) fn sim_with(
    rule: benchspec::sim::images::ImageRule,
) -> (tokio::runtime::Runtime, benchspec::sim::Sim) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let profile = benchspec::sim::profile::profile("tiny").unwrap();
        let mut opts = benchspec::sim::Options::new(profile);
        opts.images = rule;
        benchspec::sim::start(listener, opts).unwrap()
    });
    (rt, sim)
}

/// The simulator's counter `name` from its `/metrics`.
pub(super) fn counter(rt: &tokio::runtime::Runtime, sim: &benchspec::sim::Sim, name: &str) -> u64 {
    let text = rt.block_on(async {
        let c = benchspec::client::http_builder()
            .no_proxy()
            .build()
            .unwrap();
        let r = c.get(format!("{}/metrics", sim.base_url())).send().await;
        r.unwrap().text().await.unwrap()
    });
    text.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Run `yaml` for real (the simulator is a server of its own): its records.
fn run(yaml: &str) -> Vec<Record> {
    let dir = super::cli::tempdir::Dir::new();
    let loaded = spec::parse("spec.yaml", yaml, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics()));
    let out = dir.path().join("run");
    let opts = benchspec::run::RunOptions {
        out: Some(out.clone()),
        ..Default::default()
    };
    let config = benchspec::plan::RunConfig::new(&loaded);
    super::open::run_config(&config, &opts, &|_| {}, false);
    benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap()
}

pub(super) fn patch16() -> benchspec::sim::images::ImageRule {
    benchspec::sim::images::ImageRule {
        tokens: benchspec::sim::images::ImageTokens::Patch(16),
        ..Default::default()
    }
}

#[test]
fn the_records_images_agree_with_the_simulators_own_counts() {
    let _cpu = super::cpu();
    let (rt, sim) = sim_with(patch16());
    let images = "{count: 2, width: 64, height: 48}";
    let records = run(&spec_for(&sim.base_url(), images));
    assert_eq!(records.len(), 2);
    let (mut total, mut charged) = (0, 0);
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{}: {:?}", r.cell, r.reasons);
        let i = r.images.unwrap_or_else(|| panic!("{}: no images", r.cell));
        // By hand: ⌈64/16⌉ · ⌈48/16⌉ = 12 tokens an image, 24 for two, after 256 of text.
        assert_eq!(i.per_request, 2.0, "{}", r.cell);
        assert_eq!(i.total, 2 * i.requests, "{}", r.cell);
        assert_eq!(i.text_prompt_tokens, 256.0, "{}", r.cell);
        assert_eq!(i.server_prompt_tokens, Some(280.0), "{}", r.cell);
        assert_eq!(i.image_tokens, Some(24.0), "{}", r.cell);
        assert_eq!(r.prompt_tokens, 256, "{}: the text is still exact", r.cell);
        total += i.total;
        charged += i.total * 12;
    }
    // The simulator's own counters: every image it admitted and the tokens it charged.
    assert_eq!(counter(&rt, &sim, "benchspec_sim:images_total"), total);
    assert_eq!(
        counter(&rt, &sim, "benchspec_sim:image_tokens_total"),
        charged
    );
    assert_eq!(
        counter(&rt, &sim, "benchspec_sim:image_requests_refused_total"),
        0
    );
}

#[test]
fn drawn_counts_add_up_to_what_the_simulator_saw() {
    let _cpu = super::cpu();
    let (rt, sim) = sim_with(patch16());
    let images = "{count: {mean: 2, distribution: uniform, spread: 1}, \
                  width: {mean: 64, distribution: uniform, spread: 0.5}, height: 32, seed: 3}";
    let records = run(&spec_for(&sim.base_url(), images));
    let total: u64 = records
        .iter()
        .filter_map(|r| r.images)
        .map(|i| i.total)
        .sum();
    let requests: u64 = records
        .iter()
        .filter_map(|r| r.images)
        .map(|i| i.requests)
        .sum();
    assert!(
        requests > 3 && total > 0,
        "{requests} requests, {total} images"
    );
    assert_eq!(counter(&rt, &sim, "benchspec_sim:images_total"), total);
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{}: {:?}", r.cell, r.reasons);
        assert_eq!(r.prompt_tokens, 256, "{}", r.cell);
        let i = r.images.unwrap();
        let by_hand = i.total as f64 / i.requests as f64;
        assert!((i.per_request - by_hand).abs() < 0.01, "{}: {i:?}", r.cell);
    }
}

#[test]
fn more_images_than_the_limit_are_failed_requests_with_vllms_400() {
    let _cpu = super::cpu();
    // The simulator takes 4 images a prompt (its default, as the seed's vLLM launch).
    let (rt, sim) = sim_with(benchspec::sim::images::ImageRule::default());
    let yaml = spec_for(&sim.base_url(), "{count: 5, width: 8, height: 8}")
        .replace(", decode: {duration: 1s}", ", decode: {enabled: false}");
    let records = run(&yaml);
    let r = &records[0];
    assert_eq!(r.cell, "prefill/256");
    assert_eq!(r.status, Status::Failed, "{r:?}");
    assert_eq!(r.errors, 3);
    assert_eq!(
        r.error_kinds.get("http_400"),
        Some(&3),
        "{:?}",
        r.error_kinds
    );
    let said = r.reasons.join(" ");
    assert!(
        said.contains("At most 4 image(s) may be provided in one prompt"),
        "{said}"
    );
    assert_eq!(r.images.map(|i| (i.total, i.requests)), Some((15, 3)));
    assert_eq!(r.images.and_then(|i| i.server_prompt_tokens), None);
    assert_eq!(
        counter(&rt, &sim, "benchspec_sim:image_requests_refused_total"),
        3
    );
    assert_eq!(counter(&rt, &sim, "benchspec_sim:images_total"), 0);
}

#[test]
fn bad_image_specs_are_refused_where_they_are_written() {
    let base = "version: 1\nname: t\nengine: {kind: vllm}\nmodel:\n  served_name: m\n  image_limit: {per_prompt: 4, width: 1024}\nmatrix: {contexts: [1K], concurrency: [1]}\nworkload:\n  api: chat\n  images:\n    count: 2\n    width: 512\n    height: 512\n";
    let table = [
        ("count: 2", "count: -1", "/workload/images/count", 11, 12),
        ("width: 512", "width: 0", "/workload/images/width", 12, 12),
        (
            "width: 512",
            "width: 2048",
            "/workload/images/width",
            12,
            12,
        ),
        ("count: 2", "count: 5", "/workload/images/count", 11, 12),
        (
            "  api: chat\n",
            "  api: completions\n",
            "/workload/images",
            11,
            5,
        ),
        (
            "width: 512",
            "width: {mean: 900, distribution: uniform, spread: 0.5}",
            "/workload/images/width",
            12,
            12,
        ),
    ];
    assert!(spec::parse("t.yaml", base, Stage::Validate, &|_| None).is_ok());
    for (from, to, pointer, line, column) in table {
        let text = base.replace(from, to);
        let got = spec::parse("t.yaml", &text, Stage::Validate, &|_| None)
            .err()
            .map(|e| e.diagnostics().to_vec())
            .unwrap_or_default();
        let at: Vec<_> = got
            .iter()
            .map(|d| (d.pointer.as_str(), d.line, d.column))
            .collect();
        assert_eq!(at, [(pointer, line, column)], "{to}: {got:#?}");
    }
}

/// With `kind: sim` and no `model.image_limit`, the simulator's own
/// `engine.sim.images.limit_per_prompt` bounds the count at validate (it was found only when
/// the server refused the requests).
#[test]
fn the_simulators_own_image_limit_is_checked_at_validate() {
    let base = "version: 1\nname: t\nengine:\n  kind: sim\n  sim: {images: {limit_per_prompt: 2}}\nmodel: {served_name: m}\nmatrix: {contexts: [1K], concurrency: [1]}\nworkload:\n  api: chat\n  images: {count: 2, width: 64, height: 64}\n";
    assert!(spec::parse("t.yaml", base, Stage::Validate, &|_| None).is_ok());
    let text = base.replace("count: 2", "count: 3");
    let got = spec::parse("t.yaml", &text, Stage::Validate, &|_| None)
        .err()
        .map(|e| e.diagnostics().to_vec())
        .unwrap_or_default();
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].pointer, "/workload/images/count");
    assert!(
        got[0]
            .message
            .contains("`engine.sim.images.limit_per_prompt`"),
        "{}",
        got[0].message
    );
}

#[test]
fn the_shipped_spec_sends_images_in_every_phase() {
    let yaml = std::fs::read_to_string(super::repo_path("specs/images.yaml")).unwrap();
    let (records, _dir) = super::open::run_spec_paused(&yaml);
    let phases: std::collections::HashSet<_> = records.iter().map(|r| r.phase).collect();
    assert_eq!(phases.len(), 3, "prefill, decode and load: {phases:?}");
    for r in &records {
        assert_eq!(r.status, Status::Valid, "{}: {:?}", r.cell, r.reasons);
        let i = r.images.unwrap_or_else(|| panic!("{}: no images", r.cell));
        // One to three images a prompt, two on average; each 448 × 336 ± 25% wide is
        // 12 × ⌈w/28⌉ tokens: 12 × 12 = 144 at the narrowest (336), 12 × 20 = 240 at most.
        assert!((1.0..=3.0).contains(&i.per_request), "{}: {i:?}", r.cell);
        assert_eq!(
            i.text_prompt_tokens, r.context as f64,
            "{}: exact text",
            r.cell
        );
        // `image_tokens` is a mean over the answered requests, `per_request` over those sent:
        // they share a base only when every request sent was answered.
        let tokens = i.image_tokens.unwrap();
        if i.answered == i.requests {
            let per_image = tokens / i.per_request;
            assert!(
                (144.0 * 0.9..=240.0 * 1.1).contains(&per_image),
                "{}: {per_image} tokens an image ({i:?})",
                r.cell
            );
        } else {
            assert!(
                (144.0 * 0.9..=3.0 * 240.0 * 1.1).contains(&tokens),
                "{}: {tokens} image tokens a request ({i:?})",
                r.cell
            );
        }
    }
}
