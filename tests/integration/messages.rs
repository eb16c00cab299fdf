//! What the user reads: `--quiet` is quiet, `--help` lists exit codes, and library internals
//! (a YAML library's option names, Debug-printed lists) never reach the user.

use super::cli::{Bench, tempdir::Dir};

const TINY: &str = "version: 1\nname: tiny\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: m}\nworkload: {max_output_tokens: 16}\nmatrix: {contexts: [256], concurrency: [1]}\nphases: {decode: {duration: 300ms}}\n";

#[test]
fn quiet_prints_nothing_but_errors() {
    let dir = Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--quiet", "--out", out.to_str().unwrap()])
        .spec("tiny.yaml", TINY)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(
        (done.stdout.as_str(), done.stderr.as_str()),
        ("", ""),
        "a quiet run says nothing"
    );
    assert!(out.join("report.md").exists(), "it ran all the same");
    let dir = Dir::new();
    let unreachable = TINY.replace(
        "{kind: sim, sim: {profile: tiny}}",
        "{kind: vllm, base_url: 'http://127.0.0.1:9'}",
    );
    let done = Bench::new(&["-q", "run", "--out", dir.path().join("r").to_str().unwrap()])
        .spec("u.yaml", &unreachable)
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stdout.is_empty()
            && !done.stderr.is_empty()
            && done.stderr.lines().all(|l| !l.starts_with("run:")),
        "only the error: {}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("cannot be reached: connection refused (is the server running")
            && !done.stderr.contains("tcp connect error")
            && !done.stderr.contains("os error"),
        "in words: {}",
        done.stderr
    );
}

#[test]
fn every_command_help_lists_its_exit_codes() {
    for command in [
        "validate", "schema", "plan", "run", "report", "compare", "merge", "sim", "init",
    ] {
        let done = Bench::new(&[command, "--help"]).run();
        assert_eq!(done.code, 0, "{command}: {}", done.stderr);
        assert!(
            done.stdout.contains("Exit codes:\n0  "),
            "{command} --help:\n{}",
            done.stdout
        );
    }
    let run = Bench::new(&["run", "--help"]).run();
    assert!(
        run.stdout
            .contains("3  the engine could not be launched, reached or kept alive"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_duplicate_key_is_said_in_words_where_it_is() {
    let spec = TINY.replace("name: tiny\n", "name: tiny\nname: again\n");
    let done = Bench::new(&["validate", "--format", "short"])
        .spec("dup.yaml", &spec)
        .run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("dup.yaml:3:1: error: invalid YAML: duplicate key `name`"),
        "{}",
        done.stderr
    );
    assert!(!done.stderr.contains("Options"), "{}", done.stderr);
}

#[test]
fn failure_kinds_are_said_in_words() {
    let spec = TINY
        .replace(
            "{profile: tiny}",
            "{profile: tiny, faults: {failure_rate: 1.0}}",
        )
        .replace("phases: {", "phases: {prefill: {enabled: false}, ");
    let dir = Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("fail.yaml", &spec)
        .run();
    assert_eq!(done.code, 1, "{}", done.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let decode = records.iter().find(|r| r.cell == "decode/256/c1").unwrap();
    let reasons = decode.reasons.join("; ");
    assert!(
        reasons.contains(
            "every warm-up request failed (HTTP 500: simulated engine failure (fault option `failure_rate`))"
        ),
        "{reasons}"
    );
    assert!(
        !done.stderr.contains("[\"") && !reasons.contains("[\""),
        "{}",
        done.stderr
    );
}

#[test]
fn a_run_on_the_instant_profile_renders_its_reports() {
    // Its prefill rate was infinite: plan.json held `null` and the reports failed to load it.
    let spec = TINY.replace("profile: tiny", "profile: instant");
    let dir = Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("instant.yaml", &spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        out.join("report.md").exists() && !done.stderr.contains("error"),
        "{}",
        done.stderr
    );
}
