//! Reports (docs/reports.md): the seed page's numbers rendered exactly, the HTML report in a real
//! headless Chromium, CSV and JSON, user templates, unfinished runs, and `compare`.

use super::cli::{Bench, tempdir::Dir};
use super::html::open_in_chromium;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    super::root().join("tests/fixtures/seed-run")
}

fn seed_page() -> String {
    std::fs::read_to_string(super::root().join("tests/fixtures/seed-page.txt")).unwrap()
}

/// A copy of the seed run to change.
fn copy_fixture(dir: &Path) -> PathBuf {
    let to = dir.join("seed-run");
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    to
}

fn report(run: &Path, out: &Path, extra: &[&str]) -> super::cli::Done {
    let mut args = vec![
        "report",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Bench::new(&args).run()
}

fn render_md(run: &Path, dir: &Dir) -> String {
    let done = report(run, dir.path(), &["--format", "markdown"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    std::fs::read_to_string(dir.path().join("report.md")).unwrap()
}

#[test]
fn the_seed_pages_tables_come_out_exactly() {
    let dir = Dir::new();
    let md = render_md(&fixture(), &dir);
    let seed = seed_page();
    // Every row of "All measurements", verbatim.
    let rows: Vec<&str> = seed
        .lines()
        .filter(|l| l.starts_with("| Prefill |") || l.starts_with("| Sustained decode |"))
        .collect();
    assert_eq!(rows.len(), 46);
    for row in rows {
        assert!(md.lines().any(|l| l == row), "missing row: {row}");
    }
    // The decode matrix: the seed page runs each cell's tok/s and TTFT together.
    let matrix: Vec<&str> = seed
        .lines()
        .filter(|l| l.starts_with("| ") && l.ends_with("TTFT |") && !l.starts_with("| Sustained"))
        .collect();
    assert_eq!(matrix.len(), 5);
    for row in matrix {
        assert!(
            md.lines().any(|l| l.replace("<br>", "") == row),
            "missing matrix row: {row}"
        );
    }
    assert!(md.contains("| Context | 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 |"));
    every_prefill_row(&seed, &md);
    // The header lines, the launch command with its secret redacted, the note.
    let launch = seed
        .split("Launch command\n")
        .nth(1)
        .unwrap()
        .split("Prefill\n")
        .next()
        .unwrap();
    let launch = launch.trim_end().trim_end_matches("Prefill");
    assert!(
        md.contains(&format!("```sh\n{launch}\n```")),
        "launch command"
    );
    for text in [
        "# Speed test matrix",
        "**gemma-4-E2B-it on H200 NVL 141GB**",
        "vllm · 0.27.2rc1.dev113+g5cecfc013 · BF16",
        "5 contexts (8K–123K) × 8 concurrency levels (1–128) · prefill at 8K, 16K, 32K, 64K, 123K, 128K",
        "- **VRAM:** 141 GB",
        "- **Type:** Discrete GPU",
        "- **Prefill mode:** Measured during decode warm-up",
        "- **Time per measurement:** 30 s",
        "- **Max output:** 4,096 tokens",
        "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill.",
        "Latencies are medians. Total tok/s is output across all simultaneous requests.",
    ] {
        assert!(md.contains(text), "missing {text}");
    }
    insta::assert_snapshot!("seed_report_md", md);
}

/// Prefill: "8K context62K132 ms TTFT" on the `seed` page, a table row of `md`.
fn every_prefill_row(seed: &str, md: &str) {
    for l in seed
        .lines()
        .filter(|l| l.contains(" context") && l.ends_with("ms TTFT"))
    {
        let l = l.trim_start_matches("prompt tok/s by context length");
        let (ctx, rest) = l.split_once(" context").unwrap();
        let split = rest.find('K').map_or(0, |i| i + 1);
        let split = if split == 0 {
            rest.find(|c: char| c.is_ascii_digit()).unwrap()
        } else {
            split
        };
        let (rate, ttft) = rest.split_at(split);
        let ttft = ttft.trim_end_matches(" TTFT");
        let want = format!("| {ctx} | {rate} | {ttft} | Valid |");
        assert!(md.contains(&want), "missing prefill row {want}");
    }
}

#[test]
fn the_launch_command_is_recorded_as_the_seed_page_shows_it() {
    let loaded = benchspec::spec::load(
        &super::repo_path("specs/h200-nvl-gemma-4-e2b.yaml"),
        benchspec::spec::Stage::Validate,
    )
    .unwrap();
    let args = loaded.spec.engine.launch.unwrap().command.args().unwrap();
    let line: Vec<String> = benchspec::plan::redact(&args)
        .iter()
        .map(|a| benchspec::spec::command::quote(a))
        .collect();
    let seed = seed_page();
    assert!(seed.contains(&line.join(" ")), "{}", line.join(" "));
}

#[test]
fn an_unfinished_run_shows_its_missing_cells() {
    let dir = Dir::new();
    let run = copy_fixture(dir.path());
    let text = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().take(10).collect();
    // The last line cut short, as a killed runner leaves it.
    let partial = format!(
        "{}\n{}",
        kept.join("\n"),
        &text.lines().nth(10).unwrap()[..40]
    );
    std::fs::write(run.join("results.jsonl"), partial).unwrap();
    let out = Dir::new();
    let md = render_md(&run, &out);
    assert!(
        md.contains("**Unfinished run:** 36 planned cell(s) have no record yet"),
        "{md}"
    );
    assert!(
        md.contains("| Sustained decode | 16K | 4 | Not run | — |"),
        "{md}"
    );
    assert!(
        md.contains("| Sustained decode | 8K | 8 | Valid | 1,903.3 |"),
        "{md}"
    );
    assert!(
        md.contains("| 8K | 260.3<br>71 ms TTFT | 514.0<br>87 ms TTFT |"),
        "{md}"
    );
    assert!(md.contains("| 16K | not run | not run |"), "{md}");
    assert!(
        md.contains("| 16K | 56.8K | 286 ms | Valid | 16,384 |\n| 32K | — | — | Not run | — |"),
        "{md}"
    );
}

#[test]
fn csv_and_json_hold_every_cell_and_json_follows_its_schema() {
    let dir = Dir::new();
    let done = report(
        &fixture(),
        dir.path(),
        &["--format", "csv", "--format", "json"],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        !dir.path().join("report.md").exists(),
        "only the asked formats"
    );
    let mut rd = csv::Reader::from_path(dir.path().join("results.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    for col in [
        "cell",
        "status",
        "total_tok_s",
        "ttft_ms_p50",
        "tbt_ms_p99",
        "error_kinds",
    ] {
        assert!(header.iter().any(|h| h == col), "column {col}");
    }
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 54, "46 measured and 8 skipped cells");
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = rows.iter().find(|r| &r[0] == "decode/8K/c64").unwrap();
    assert_eq!(row[at("total_tok_s")].parse::<f64>().unwrap(), 9049.3);
    assert_eq!(row[at("output_tokens")].parse::<u64>().unwrap(), 271_495);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(super::root().join("schemas/report-context-v1.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(json["cells"].as_array().unwrap().len(), 54);
    assert_eq!(json["decode"]["rows"].as_array().unwrap().len(), 5);
}

#[test]
fn committed_context_schema_is_up_to_date() {
    let committed =
        std::fs::read_to_string(super::root().join("schemas/report-context-v1.schema.json"))
            .unwrap_or_default();
    assert!(
        committed == benchspec::report::context_schema_text(),
        "schemas/report-context-v1.schema.json is stale: run `cargo run -- schema --context --out schemas/report-context-v1.schema.json`"
    );
}

#[test]
fn user_templates_render_include_beside_them_and_fail_by_line() {
    let dir = Dir::new();
    let t = dir.path().join("templates");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("head.txt"), "HEAD {{ subtitle }}\n").unwrap();
    std::fs::write(
        t.join("summary.txt.j2"),
        "{% include \"head.txt\" %}{% for c in cells if c.status == \"valid\" and c.phase == \"decode\" %}{{ c.id }} {{ c.record.total_tok_s | tok_s }} {{ c.record.tbt_ms.p50 | ms(1) }}\n{% endfor %}",
    )
    .unwrap();
    std::fs::write(t.join("report.md.j2"), "mine: {{ title }}\n").unwrap();
    std::fs::write(t.join("typo.txt.j2"), "line one\n{{ subtitel }}\n").unwrap();
    std::fs::write(t.join("escape.txt.j2"), "{% include \"../secret.txt\" %}").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    let out = dir.path().join("out");
    let path = |n: &str| t.join(n).to_string_lossy().into_owned();
    let (s, r) = (path("summary.txt.j2"), path("report.md.j2"));
    let done = report(
        &fixture(),
        &out,
        &["--format", "markdown", "--template", &s, "--template", &r],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(
        summary.starts_with("HEAD gemma-4-E2B-it on H200 NVL 141GB\n"),
        "{summary}"
    );
    assert!(
        summary.contains("decode/8K/c128 13.1K 9.6 ms\n"),
        "{summary}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        "mine: Speed test matrix\n",
        "a user template named like a built-in replaces it"
    );
    let typo = report(&fixture(), &out, &["--template", &path("typo.txt.j2")]);
    assert_eq!(typo.code, 2, "{}", typo.stderr);
    assert!(
        typo.stderr
            .contains("template `typo.txt.j2` line 2: undefined value"),
        "{}",
        typo.stderr
    );
    let escape = report(&fixture(), &out, &["--template", &path("escape.txt.j2")]);
    assert_eq!(escape.code, 2, "{}", escape.stderr);
    assert!(
        escape.stderr.contains("outside the template's folder"),
        "{}",
        escape.stderr
    );
    assert!(!out.join("escape.txt").exists());
}

#[test]
fn report_says_what_is_wrong_with_a_directory() {
    let dir = Dir::new();
    let done = report(dir.path(), dir.path(), &[]);
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("is not a run directory (it has no manifest.json)"),
        "{}",
        done.stderr
    );
}

fn compare(base: &Path, new: &Path, extra: &[&str]) -> super::cli::Done {
    let mut args = vec!["compare", base.to_str().unwrap(), new.to_str().unwrap()];
    args.extend_from_slice(extra);
    Bench::new(&args).run()
}

#[test]
fn compare_of_identical_runs_finds_nothing() {
    let done = compare(&fixture(), &fixture(), &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stdout.contains("✅ no regression"), "{}", done.stdout);
    assert!(
        done.stdout
            .contains("| `decode/8K/c4` | valid | 1,001.5 → 1,001.5 (0.0%) |"),
        "{}",
        done.stdout
    );
}

/// Cells in common none of which was measured in both runs (every one failed) judge
/// nothing: the comparison fails with that headline, never "no regression".
#[test]
fn compare_of_runs_whose_every_cell_failed_judges_nothing_and_fails() {
    let dir = Dir::new();
    let failed = copy_fixture(dir.path());
    let results = failed.join("results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["status"] != "skipped" {
                v["status"] = "failed".into();
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&results, lines.join("\n") + "\n").unwrap();
    let done = compare(&failed, &failed, &[]);
    assert_eq!(done.code, 1, "{}", done.stdout);
    assert!(done.stdout.contains("nothing judged"), "{}", done.stdout);
    assert!(!done.stdout.contains("no regression"), "{}", done.stdout);
}

#[test]
fn compare_marks_a_planted_regression_and_cells_in_one_run() {
    let dir = Dir::new();
    let new = copy_fixture(dir.path());
    plant_a_regression(&new);
    let done = compare(&fixture(), &new, &[]);
    assert_eq!(done.code, 1, "{}", done.stdout);
    let md = &done.stdout;
    assert!(md.contains("❌ 2 regression(s)"), "{md}");
    assert!(
        md.contains("| `decode/32K/c8` | valid | 1,650.8 → 1,518.7 (**-8.0%**) |"),
        "{md}"
    );
    assert!(md.contains("❌ Total tok/s -8.0%"), "{md}");
    assert!(md.contains("| `decode/64K/c2` | valid → failed |"), "{md}");
    assert!(md.contains("was valid, now failed"), "{md}");
    assert!(
        md.contains("| `decode/8K/c1` | valid | 260.3 → 252.5 (-3.0%) |"),
        "{md}"
    );
    assert!(
        md.contains("❌ 2 regression(s), 1 base cell(s) missing from the new run"),
        "{md}"
    );
    assert!(
        md.contains("**Missing from the new run**, each a failure (`--allow-missing` accepts them): `decode/123K/c128`"),
        "{md}"
    );

    let json = compare(
        &fixture(),
        &new,
        &["--threshold", "10%", "--format", "json"],
    );
    assert_eq!(json.code, 1, "the failed cell is still a regression at 10%");
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["regressions"], 1);
    assert_eq!(v["only_base"], serde_json::json!(["decode/123K/c128"]));
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cell"] == "decode/32K/c8")
        .unwrap();
    assert_eq!(row["regression"], false);
    let bad = compare(&fixture(), &new, &["--threshold", "lots"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("`--threshold lots` is not a percentage"),
        "{}",
        bad.stderr
    );
}

/// The seed run copied to `new`, changed: decode/32K/c8 8% slower, decode/8K/c1 3% slower,
/// decode/64K/c2 failed, decode/123K/c128 gone.
fn plant_a_regression(new: &Path) {
    let text = std::fs::read_to_string(new.join("results.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &mut lines {
        match r["cell"].as_str().unwrap() {
            // 8% slower: a regression at 5%, not at 10%.
            "decode/32K/c8" => r["total_tok_s"] = (1650.8 * 0.92).into(),
            // 3% slower: within the threshold.
            "decode/8K/c1" => r["total_tok_s"] = (260.3 * 0.97).into(),
            // Valid, then failed.
            "decode/64K/c2" => r["status"] = "failed".into(),
            _ => {}
        }
    }
    lines.retain(|r| r["cell"] != "decode/123K/c128");
    let out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(new.join("results.jsonl"), out).unwrap();
}

/// A copy of the seed run keeping only the records `keep` says.
fn seed_run_with(dir: &Path, keep: impl Fn(&str) -> bool) -> PathBuf {
    let run = copy_fixture(dir);
    let text = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            keep(r["cell"].as_str().unwrap())
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(run.join("results.jsonl"), kept).unwrap();
    run
}

#[test]
fn compare_fails_on_a_base_cell_missing_from_the_new_run() {
    let dir = Dir::new();
    let gone = ["decode/8K/c4", "prefill/16K"];
    let new = seed_run_with(dir.path(), |c| !gone.contains(&c));
    let done = compare(&fixture(), &new, &[]);
    assert_eq!(done.code, 1, "{}", done.stdout);
    let md = &done.stdout;
    assert!(
        md.starts_with("## benchspec compare: ❌ 2 base cell(s) missing from the new run\n"),
        "{md}"
    );
    // The missing cells come first, before the table of the compared ones.
    let listed = md
        .find("**Missing from the new run**, each a failure (`--allow-missing` accepts them): `decode/8K/c4`, `prefill/16K`")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(listed < md.find("| Cell |").unwrap(), "{md}");
    let allowed = compare(&fixture(), &new, &["--allow-missing"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stdout);
    assert!(
        allowed.stdout.starts_with(
            "## benchspec compare: ✅ no regression (2 base cell(s) missing from the new run, allowed)\n"
        ),
        "{}",
        allowed.stdout
    );
    assert!(
        allowed.stdout.contains(
            "Missing from the new run (allowed by `--allow-missing`): `decode/8K/c4`, `prefill/16K`"
        ),
        "{}",
        allowed.stdout
    );
    let json = compare(&fixture(), &new, &["--format", "json"]);
    assert_eq!(json.code, 1);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["passed"], false);
    assert_eq!(v["regressions"], 0);
    assert_eq!(
        v["only_base"],
        serde_json::json!(["decode/8K/c4", "prefill/16K"])
    );
}

#[test]
fn compare_with_no_cell_in_common_says_so_and_fails() {
    let dir = Dir::new();
    let prefill = seed_run_with(&dir.path().join("p"), |c| c.starts_with("prefill/"));
    let decode = seed_run_with(&dir.path().join("d"), |c| c.starts_with("decode/"));
    for extra in [&[][..], &["--allow-missing"][..]] {
        let done = compare(&prefill, &decode, extra);
        assert_eq!(done.code, 1, "{extra:?}: {}", done.stdout);
        assert!(
            done.stdout
                .starts_with("## benchspec compare: ❌ no cell in common\n"),
            "{}",
            done.stdout
        );
        assert!(
            done.stdout.contains("No cell was measured in both runs."),
            "{}",
            done.stdout
        );
    }
}

#[test]
fn the_html_report_opens_in_chromium_without_errors_or_requests() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    // The check itself: a page with a console error and a request is caught.
    let bad = dir.path().join("bad.html");
    std::fs::write(&bad, "<!doctype html><p>x</p><img src=\"http://127.0.0.1:9/x.png\"><script>console.error('planted')</script>").unwrap();
    let caught = open_in_chromium(&bad, &dir.path().join("bad.png"), false);
    assert!(
        caught.console.iter().any(|l| l.contains("planted")),
        "{:?}",
        caught.console
    );
    assert_eq!(caught.requests, ["http://127.0.0.1:9/x.png"]);

    let done = report(&fixture(), dir.path(), &["--format", "html"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let html = dir.path().join("report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    // Prefill, decode and per-request charts, and a frontier chart per context (5).
    assert_eq!(text.matches("<svg").count(), 8, "eight inline charts");
    assert!(
        !text.contains("src=\"http") && !text.contains("href=\"http"),
        "self-contained"
    );
    // Kept in target/ so a person can look at them.
    let shots = super::root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (dark, name) in [(false, "seed-light.png"), (true, "seed-dark.png")] {
        let shot = shots.join(name);
        let _ = std::fs::remove_file(&shot);
        let opened = open_in_chromium(&html, &shot, dark);
        assert!(opened.console.is_empty(), "console: {:?}", opened.console);
        assert!(
            opened.requests.is_empty(),
            "requests: {:?}",
            opened.requests
        );
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 50_000,
            "a screenshot of a full page, not a blank one: {size} bytes"
        );
    }
}

#[test]
fn run_renders_the_spec_templates_and_a_report_template_beside_the_spec() {
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: templated\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [256], concurrency: [1]}\nphases: {decode: {duration: 1s}}\nreport: {formats: [markdown, csv], templates: [t/cells.txt.j2]}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("t")).unwrap();
    std::fs::write(
        dir.path().join("t/cells.txt.j2"),
        "{% for c in cells %}{{ c.id }} {{ c.status }}\n{% endfor %}",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("report.md.j2"),
        "# {{ subtitle }} by my team\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("reports: results.csv, cells.txt, report.md in"),
        "{}",
        done.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("cells.txt")).unwrap(),
        "prefill/256 valid\ndecode/256/c1 valid\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        "# templated by my team\n"
    );
    assert!(!out.join("report.html").exists(), "only the spec's formats");
}

#[test]
fn run_checks_the_spec_templates_before_measuring() {
    let dir = Dir::new();
    std::fs::write(
        dir.path().join("bad.md.j2"),
        "ok\n{% for c in cells %}never closed\n",
    )
    .unwrap();
    for (templates, says) in [
        ("[missing.md.j2]", "cannot read `"),
        ("[bad.md.j2]", "template `bad.md.j2` line"),
        (
            "[notes.txt]",
            "`notes.txt` is not a template; templates end in `.j2` (at /report/templates/0)",
        ),
    ] {
        let spec = dir.path().join("s.yaml");
        std::fs::write(&spec, format!("version: 1\nname: t\nengine: {{kind: sim, sim: {{profile: tiny}}}}\nmodel: {{served_name: tiny}}\nmatrix: {{contexts: [256], concurrency: [1]}}\nreport: {{templates: {templates}}}\n")).unwrap();
        let out = dir.path().join("run");
        let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
            .arg(&spec)
            .run();
        assert_eq!(done.code, 2, "{templates}: {}", done.stderr);
        assert!(done.stderr.contains(says), "{templates}: {}", done.stderr);
        assert!(!out.exists(), "{templates}: nothing started");
    }
}
