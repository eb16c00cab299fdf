//! `benchspec init` (the quickstart, or a spec for a running server, against the simulator
//! speaking each engine's dialect) and `.json` specs.

use super::Edit;
use super::cli::{Bench, tempdir::Dir};
use benchspec::results::Status;
use benchspec::sim::{Options, Sim, SimDialect, profile};

/// The simulator on a free port of 127.0.0.1, speaking `dialect`, serving `served`.
fn sim(dialect: SimDialect, served: &str) -> Sim {
    let mut opts = Options::new(profile::profile("tiny").unwrap());
    opts.dialect = dialect;
    opts.served_name = served.to_string();
    benchspec::sim::start_threaded(opts).unwrap()
}

fn text(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn init_writes_the_quickstart_and_refuses_to_overwrite() {
    let dir = Dir::new();
    let out = dir.path().join("first.yaml");
    let path = out.to_str().unwrap();
    let done = Bench::new(&["init", "--out", path]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let written = text(&out);
    let shipped = text(&super::root().join("specs/quickstart.yaml"));
    assert!(
        shipped.ends_with(&written) && written.contains("kind: sim"),
        "{written}"
    );
    assert_eq!(Bench::new(&["validate", path]).run().code, 0);
    std::fs::write(&out, "mine").unwrap();
    let again = Bench::new(&["init", "--out", path]).run();
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("exists; add --force"),
        "{}",
        again.stderr
    );
    assert_eq!(text(&out), "mine", "the existing file is untouched");
    let forced = Bench::new(&["init", "--force", "--out", path]).run();
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(text(&out), written);
}

#[test]
fn init_from_the_simulator_writes_a_spec_that_validates_and_runs() {
    let sim = sim(SimDialect::Vllm, "tiny-model");
    let dir = Dir::new();
    let spec = dir.path().join("tiny.yaml");
    let done = Bench::new(&["init", "--from", &sim.base_url(), "--duration", "1s"])
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let written = text(&spec);
    for want in [
        "kind: vllm",
        "version: \"0.0.0+sim.tiny\"",
        &format!("base_url: \"{}\"", sim.base_url()),
        "served_name: \"tiny-model\"",
        "max_model_len: 8192",
        "contexts: [1K, 4K]",
        "duration: 1s",
    ] {
        assert!(written.contains(want), "`{want}` missing:\n{written}");
    }
    assert!(!written.contains("launch:"), "it attaches:\n{written}");
    let valid = Bench::new(&["validate"]).arg(&spec).run();
    assert_eq!(valid.code, 0, "{}", valid.stderr);
    let out = dir.path().join("run");
    let ran = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .arg(&spec)
        .run();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 6, "{records:#?}");
    assert!(
        records.iter().all(|r| r.status == Status::Valid),
        "{records:#?}"
    );
}

#[test]
fn init_from_recognises_sglang_and_trtllm() {
    let dir = Dir::new();
    let sglang = sim(SimDialect::Sglang, "m");
    let spec = dir.path().join("sglang.yaml");
    let done = Bench::new(&["init", "--from", &sglang.base_url()])
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let written = text(&spec);
    assert!(
        written.contains("kind: sglang") && written.contains("max_model_len: 8192"),
        "{written}"
    );
    let trtllm = sim(SimDialect::Trtllm, "m");
    let spec = dir.path().join("trtllm.yaml");
    let refused = Bench::new(&["init", "--from", &trtllm.base_url()])
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("`trtllm-serve` has no `/tokenize`") && !spec.exists(),
        "{}",
        refused.stderr
    );
    let done = Bench::new(&["init", "--from", &trtllm.base_url(), "--tokenizer"])
        .arg(super::repo_path("tests/fixtures/sim-tokenizer"))
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(text(&spec).contains("kind: trtllm"), "{}", text(&spec));
    assert_eq!(Bench::new(&["validate"]).arg(&spec).run().code, 0);
}

#[test]
fn init_from_a_bad_url_or_nothing_listening_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    let done = Bench::new(&["init", "--from", &format!("http://127.0.0.1:{port}")])
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("cannot be reached: nothing accepts connections")
            && !done.stderr.contains("os error")
            && !spec.exists(),
        "{}",
        done.stderr
    );
    let done = Bench::new(&["init", "--from", "localhost:8000"])
        .arg("--out")
        .arg(&spec)
        .run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(done.stderr.contains("give the scheme"), "{}", done.stderr);
}

const JSON_SPEC: &str = r#"{
  "version": 1,
  "name": "json spec",
  "engine": {"kind": "sim", "sim": {"profile": "tiny"}},
  "model": {"served_name": "m"},
  "workload": {"max_output_tokens": 16},
  "matrix": {"contexts": [256], "concurrency": [1]},
  "phases": {"prefill": {"enabled": false}, "decode": {"duration": "300ms"}}
}
"#;

#[test]
fn a_json_spec_validates_runs_and_its_problems_are_located() {
    let done = Bench::new(&["validate"]).spec("s.json", JSON_SPEC).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let broken = JSON_SPEC.edit("\"json spec\",", "\"json spec\"");
    let done = Bench::new(&["validate", "--format", "short"])
        .spec("s.json", &broken)
        .run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("s.json:4:3: error: invalid JSON: expected `,` or `}`"),
        "{}",
        done.stderr
    );
    let wrong = JSON_SPEC.edit("\"concurrency\"", "\"concurency\"");
    let done = Bench::new(&["validate", "--format", "short"])
        .spec("s.json", &wrong)
        .run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr.contains("s.json:7:33: error:") && done.stderr.contains("concurency"),
        "{}",
        done.stderr
    );
    let dir = Dir::new();
    let out = dir.path().join("run");
    let ran = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.json", JSON_SPEC)
        .run();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(
        text(&out.join("spec.json")),
        JSON_SPEC,
        "the copy keeps its syntax"
    );
    let report = Bench::new(&["report", out.to_str().unwrap()]).run();
    assert_eq!(report.code, 0, "{}", report.stderr);
}
