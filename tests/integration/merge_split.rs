//! `benchspec merge` of shards run with `--split-load` (docs/run-directory.md#merge): a load
//! cell every shard measured a part of is the whole cell only when every shard's part is
//! there and the shards ran it together (`run --start-at`); the merged run lists the cells
//! in plan order.

use super::cli::{Bench, tempdir::Dir};
use super::merge::{cells, plan_order};
use benchspec::results::Status;
use std::path::{Path, PathBuf};

/// A spec whose load cell is split over two shards (`--split-load`): each offers 2 req/s of
/// its 4, arrivals on a constant schedule (0, 0.5, … 3.5 s: 8 requests a shard).
const SPLIT: &str = "version: 1\nname: split\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 8}\nmatrix: {contexts: [256, 512], concurrency: [1]}\nphases: {decode: {duration: 500ms}, load: {contexts: [256], rates: [4], arrivals: constant, duration: 4s}}\n";

/// `run --shard K/2 --split-load` into `dir/name` (with `extra` options).
fn split_shard(dir: &Path, spec: &Path, k: u32, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let shard = format!("{k}/2");
    let mut args = vec!["run", "-q", "--shard", &shard, "--split-load"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let done = Bench::new(&args).arg(spec).run();
    assert_eq!(done.code, 0, "{name}: {}", done.stderr);
    out
}

fn record(dir: &Path, cell: &str) -> benchspec::results::Record {
    benchspec::rundir::read_records(&dir.join("results.jsonl"))
        .unwrap()
        .into_iter()
        .find(|r| r.cell == cell)
        .unwrap_or_else(|| panic!("no {cell} in {}", dir.display()))
}

/// The merged plan's cell ids, and the load cell's rate there.
fn merged_plan(out: &Path) -> (Vec<String>, f64) {
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    let cells = plan["cells"].as_array().unwrap();
    let ids = cells
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let load = cells.iter().find(|c| c["id"] == "load/256/r4").unwrap();
    let rate = load["rate"].as_f64();
    (ids, rate.unwrap_or_else(|| panic!("{load}")))
}

fn merge_of(dirs: &[&Path], out: &Path, extra: &[&str]) -> super::cli::Done {
    let mut b = Bench::new(&["merge", "--out", out.to_str().unwrap()]);
    for d in dirs {
        b = b.arg(d);
    }
    for e in extra {
        b = b.arg(e);
    }
    b.run()
}

/// Split shards started at one instant (`--start-at`, load cells first) merge into the whole
/// cell: one plan entry at 2 + 2 = 4 req/s, 8 + 8 requests, valid, every record in plan
/// order. One shard alone is refused, naming the shard missing; with `--allow-missing` the
/// cell is kept once, invalid, at the 2 req/s it was offered. A shard run after the other
/// (windows apart: overlap 0%) makes the cell invalid, saying why.
#[test]
fn split_load_shards_merge_into_the_whole_cell_only_when_run_together() {
    let dir = Dir::new();
    let spec = dir.path().join("split.yaml");
    std::fs::write(&spec, SPLIT).unwrap();
    let order = plan_order(&spec);
    let shown = Bench::new(&["plan", "--format", "json", "--shard", "2/2", "--split-load"])
        .arg(&spec)
        .run();
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["cells"][0]["id"], "load/256/r4", "load cells first");
    assert!(shown["cells"].as_array().unwrap().len() > 1, "{shown}");

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let at = benchspec::results::rfc3339_ms(now + 6.0);
    let (one, two) = std::thread::scope(|s| {
        let (d, sp, at) = (dir.path(), spec.as_path(), at.as_str());
        let one = s.spawn(move || split_shard(d, sp, 1, "a1", &["--start-at", at]));
        let two = s.spawn(move || split_shard(d, sp, 2, "a2", &["--start-at", at]));
        (one.join().unwrap(), two.join().unwrap())
    });
    let part = record(&one, "load/256/r4");
    assert_eq!(part.open.rate_offered.map(|r| r.0), Some(2.0));
    assert_eq!(part.requests_started, 8, "0, 0.5, … 3.5 s");

    let out = dir.path().join("merged");
    let done = merge_of(&[&two, &one], &out, &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let (ids, rate) = merged_plan(&out);
    assert_eq!(ids, order, "one entry per cell, in plan order");
    assert_eq!(rate, 4.0);
    assert_eq!(cells(&out), order, "records in plan order");
    let whole = record(&out, "load/256/r4");
    assert_eq!(whole.open.rate_offered.map(|r| r.0), Some(4.0));
    assert_eq!(whole.requests_started, 16);
    assert_eq!(whole.status, Status::Valid, "{:?}", whole.reasons);

    shard_one_alone(dir.path(), &one, &two, &order);
    // Shard 2 run after shard 1 ended: their windows do not meet.
    let late = split_shard(dir.path(), &spec, 2, "b2", &[]);
    let apart = dir.path().join("apart");
    let done = merge_of(&[&one, &late], &apart, &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains("did not run load/256/r4 together"),
        "{}",
        done.stderr
    );
    let rec = record(&apart, "load/256/r4");
    assert_eq!(rec.status, Status::Invalid);
    assert!(
        rec.reasons
            .iter()
            .any(|r| r.contains("overlap 0% (under 90%)")),
        "{:?}",
        rec.reasons
    );
}

/// Shard 1 (`one`) alone, into `dir/alone`: refused naming shard 2's load cell and the cells
/// only `two` has; with `--allow-missing`, every cell of `order` once, the load cell invalid
/// at the 2 req/s it was offered.
fn shard_one_alone(dir: &Path, one: &Path, two: &Path, order: &[String]) {
    let alone = dir.join("alone");
    let done = merge_of(&[one], &alone, &[]);
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains("`load/256/r4` (shard 2 of 2)"),
        "{}",
        done.stderr
    );
    for c in cells(two).iter().filter(|c| !cells(one).contains(c)) {
        assert!(
            done.stderr.contains(&format!("`{c}`")),
            "{c}: {}",
            done.stderr
        );
    }
    let done = merge_of(&[one], &alone, &["--allow-missing"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let (ids, rate) = merged_plan(&alone);
    assert_eq!(ids, order, "each cell once, the load cell too");
    assert_eq!(rate, 4.0, "the plan names the whole cell");
    let half = record(&alone, "load/256/r4");
    assert_eq!(half.status, Status::Invalid);
    assert_eq!(half.open.rate_offered.map(|r| r.0), Some(2.0));
    assert!(
        half.reasons.iter().any(|r| r.contains("shard(s) 2 of 2")),
        "{:?}",
        half.reasons
    );
}

/// A split shard resumed without its flags would measure its load cells at the whole rate:
/// refused (exit 2), saying the command that goes on with it; with the flags it goes on.
#[test]
fn a_split_shard_is_resumed_only_as_it_was_run() {
    let dir = Dir::new();
    let spec = dir.path().join("split.yaml");
    std::fs::write(&spec, SPLIT).unwrap();
    let out = split_shard(dir.path(), &spec, 2, "s2", &[]);
    let o = out.to_str().unwrap();
    let whole = Bench::new(&["run", "-q", "--out", o, "--resume"])
        .arg(&spec)
        .run();
    assert_eq!(whole.code, 2, "{}", whole.stderr);
    assert!(
        whole
            .stderr
            .contains("was run as `--shard 2/2 --split-load`, not the whole plan")
            && whole.stderr.contains("--shard 2/2 --split-load --resume"),
        "{}",
        whole.stderr
    );
    let same = Bench::new(&[
        "run",
        "-q",
        "--shard",
        "2/2",
        "--split-load",
        "--out",
        o,
        "--resume",
    ])
    .arg(&spec)
    .run();
    assert_eq!(same.code, 0, "{}", same.stderr);
}
