//! `benchspec merge` (contract §4): the shards of one plan, run apart, join into one run
//! directory with every cell once and in plan order; mixed specs and overlaps are refused.

use super::Edit;
use super::cli::{Bench, tempdir::Dir};
use benchspec::results::Status;
use std::path::{Path, PathBuf};

const SPEC: &str = "version: 1\nname: sharded\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [256, 1K], concurrency: [1, 2]}\nphases: {decode: {duration: 1s}}\n";

fn shard(dir: &Path, spec: &Path, k: u32) -> PathBuf {
    let out = dir.join(format!("shard-{k}"));
    let done = Bench::new(&[
        "run",
        "--shard",
        &format!("{k}/2"),
        "--out",
        out.to_str().unwrap(),
    ])
    .arg(spec)
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    out
}

fn cells(out: &Path) -> Vec<String> {
    benchspec::rundir::read_records(&out.join("results.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.cell)
        .collect()
}

#[test]
fn shards_merge_into_the_whole_plan() {
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let (one, two) = (shard(dir.path(), &spec, 1), shard(dir.path(), &spec, 2));
    let whole = Bench::new(&["plan", "--format", "json"]).arg(&spec).run();
    let plan: serde_json::Value = serde_json::from_str(&whole.stdout).unwrap();
    let order: Vec<String> = plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(order.len(), 6);

    let out = dir.path().join("merged");
    // Given in any order.
    let done = Bench::new(&[
        "merge",
        two.to_str().unwrap(),
        one.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains("merged 2 run directories: 6 records"),
        "{}",
        done.stderr
    );
    assert_eq!(cells(&out), order, "every cell once, in plan order");
    assert!(
        benchspec::rundir::read_records(&out.join("results.jsonl"))
            .unwrap()
            .iter()
            .all(|r| r.status == Status::Valid)
    );
    let merged_plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    assert!(merged_plan["shard"].is_null());
    assert_eq!(merged_plan["cells"].as_array().unwrap().len(), 6);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["merged_from"][0]["shard"], "1/2");
    assert_eq!(manifest["merged_from"][1]["shard"], "2/2");
    assert_eq!(
        std::fs::read_to_string(out.join("spec.yaml")).unwrap(),
        SPEC
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("Unfinished run"), "{report}");
    assert!(
        report.contains("| Sustained decode | 1K | 2 | Valid |"),
        "{report}"
    );

    // One shard alone: merged, with the missing shard named.
    let part = dir.path().join("part");
    let done = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
    ])
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("shard(s) 2 of the plan were not given"),
        "{}",
        done.stderr
    );

    // The same shard twice, a shard of another spec, an output that holds files: refused.
    let twice = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        one.to_str().unwrap(),
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ])
    .run();
    assert_eq!(twice.code, 2);
    assert!(
        twice.stderr.contains("is recorded in both"),
        "{}",
        twice.stderr
    );
    let other_spec = dir.path().join("t.yaml");
    std::fs::write(
        &other_spec,
        SPEC.edit("duration: 1s", "duration: 2s")
            .edit("[256, 1K]", "[256]"),
    )
    .unwrap();
    let other = dir.path().join("other");
    let done = Bench::new(&["run", "--shard", "2/2", "--out", other.to_str().unwrap()])
        .arg(&other_spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let mixed = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        other.to_str().unwrap(),
        "--out",
        dir.path().join("y").to_str().unwrap(),
    ])
    .run();
    assert_eq!(mixed.code, 2);
    assert!(
        mixed.stderr.contains("were run from different specs"),
        "{}",
        mixed.stderr
    );
    let full = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        two.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .run();
    assert_eq!(full.code, 2);
    assert!(
        full.stderr.contains("exists and is not empty"),
        "{}",
        full.stderr
    );
}
