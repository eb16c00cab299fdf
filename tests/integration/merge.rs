//! `benchspec merge` (docs/run-directory.md): the shards of one plan, run apart, join into one run
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

/// The cell ids of `spec`'s whole plan, in run order.
pub(super) fn plan_order(spec: &Path) -> Vec<String> {
    let whole = Bench::new(&["plan", "--format", "json"]).arg(spec).run();
    let plan: serde_json::Value = serde_json::from_str(&whole.stdout).unwrap();
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

pub(super) fn cells(out: &Path) -> Vec<String> {
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
    let order = plan_order(&spec);
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
    merged_is_the_whole_plan(&out, &order);
    one_shard_alone_needs_allow_missing(dir.path(), &one, &order);
    a_shard_twice_or_of_another_spec_is_refused(dir.path(), &one);
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
        full.stderr
            .contains("exists and is not empty; give `merge` a new or empty `--out`"),
        "{}",
        full.stderr
    );
    assert!(
        !full.stderr.contains("--resume"),
        "merge has no --resume: {}",
        full.stderr
    );
}

/// The merged run in `out`: every cell of the plan (`order`) once, in plan order, valid; its
/// plan unsharded, its manifest naming the shards, its spec and report the whole run's.
fn merged_is_the_whole_plan(out: &Path, order: &[String]) {
    assert_eq!(cells(out), order, "every cell once, in plan order");
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
}

/// One shard alone (`one`, of the plan `order`): refused, naming the cells without a record;
/// with `--allow-missing`, merged, with the missing shard and cells named and the report
/// showing them as not run.
fn one_shard_alone_needs_allow_missing(dir: &Path, one: &Path, order: &[String]) {
    let part = dir.join("part");
    let alone = |extra: &[&str]| {
        let mut args = vec![
            "merge",
            one.to_str().unwrap(),
            "--out",
            part.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Bench::new(&args).run()
    };
    let done = alone(&[]);
    assert_eq!(done.code, 2, "{}", done.stderr);
    let second: Vec<&String> = order.iter().filter(|c| !cells(one).contains(c)).collect();
    assert!(!second.is_empty());
    for c in &second {
        assert!(
            done.stderr.contains(&format!("`{c}`")),
            "{c}: {}",
            done.stderr
        );
    }
    assert!(done.stderr.contains("--allow-missing"), "{}", done.stderr);
    assert!(!part.join("results.jsonl").exists(), "nothing written");
    let done = alone(&["--allow-missing"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("shard(s) 2 of the plan were not given"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("have no record and are shown as not run"),
        "{}",
        done.stderr
    );
    let report = std::fs::read_to_string(part.join("report.md")).unwrap();
    assert!(report.contains("Unfinished run"), "{report}");
}

/// The same shard twice, a shard of another spec (an output that holds files: see the
/// caller): refused.
fn a_shard_twice_or_of_another_spec_is_refused(dir: &Path, one: &Path) {
    let twice = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        one.to_str().unwrap(),
        "--out",
        dir.join("x").to_str().unwrap(),
    ])
    .run();
    assert_eq!(twice.code, 2);
    assert!(
        twice.stderr.contains("is recorded in both"),
        "{}",
        twice.stderr
    );
    let other_spec = dir.join("t.yaml");
    std::fs::write(
        &other_spec,
        SPEC.edit("duration: 1s", "duration: 2s")
            .edit("[256, 1K]", "[256]"),
    )
    .unwrap();
    let other = dir.join("other");
    let done = Bench::new(&["run", "--shard", "2/2", "--out", other.to_str().unwrap()])
        .arg(&other_spec)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let mixed = Bench::new(&[
        "merge",
        one.to_str().unwrap(),
        other.to_str().unwrap(),
        "--out",
        dir.join("y").to_str().unwrap(),
    ])
    .run();
    assert_eq!(mixed.code, 2);
    assert!(
        mixed.stderr.contains("were run from different specs"),
        "{}",
        mixed.stderr
    );
}

/// What each shard of `root` planned and recorded, for a failure message (this test once
/// merged 6 records instead of 9 on a loaded machine, and the cause was not found).
fn shards_seen(root: &Path) -> String {
    (1..=3)
        .map(|k| {
            let d = root.join(format!("shard-{k}")).join("run");
            let plan: Vec<String> = std::fs::read_to_string(d.join("plan.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v["cells"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|c| format!("{} ({})", c["id"], c["skip"]))
                .collect();
            format!("shard {k}: plan {plan:?}, records {:?}", cells(&d))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `run --shard auto` under a scheduler's variables (`vars(k)` for shard k of 3), the three
/// shards at once, each writing where a CI artifact or a shared volume would put it.
fn three_shards(
    dir: &Path,
    spec: &Path,
    name: &str,
    vars: &dyn Fn(u32) -> Vec<(String, String)>,
) -> PathBuf {
    let root = dir.join(name);
    std::thread::scope(|s| {
        for k in 1..=3u32 {
            let out = root.join(format!("shard-{k}")).join("run");
            let vars = vars(k);
            s.spawn(move || {
                let mut b = Bench::new(&["run", "--shard", "auto", "--out", out.to_str().unwrap()])
                    .arg(spec);
                for (key, v) in &vars {
                    b = b.env(key, v);
                }
                let done = b.run();
                assert_eq!(done.code, 0, "{name} shard {k}: {}", done.stderr);
                assert!(
                    done.stderr.contains(&format!("shard {k}/3 from")),
                    "{}",
                    done.stderr
                );
            });
        }
    });
    root
}

#[test]
fn shard_auto_under_slurm_and_kubernetes_merges_into_the_unsharded_cells() {
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    let text = SPEC
        .edit("contexts: [256, 1K]", "contexts: [256, 1K, 2K]")
        .edit("duration: 1s", "duration: 500ms");
    std::fs::write(&spec, &text).unwrap();
    let order = plan_order(&spec);
    assert_eq!(order.len(), 9);
    let slurm = |k: u32| {
        vec![
            ("SLURM_ARRAY_TASK_ID".to_string(), k.to_string()),
            ("SLURM_ARRAY_TASK_MIN".to_string(), "1".to_string()),
            ("SLURM_ARRAY_TASK_COUNT".to_string(), "3".to_string()),
        ]
    };
    let kubernetes = |k: u32| {
        vec![
            ("JOB_COMPLETION_INDEX".to_string(), (k - 1).to_string()),
            ("BENCHSPEC_SHARD_COUNT".to_string(), "3".to_string()),
        ]
    };
    for (name, vars) in [
        ("slurm", &slurm as &dyn Fn(u32) -> Vec<(String, String)>),
        ("kubernetes", &kubernetes),
    ] {
        let root = three_shards(dir.path(), &spec, name, vars);
        let out = dir.path().join(format!("{name}-merged"));
        // The folder holding the shards is given, as a CI job downloads its artifacts.
        let done = Bench::new(&[
            "merge",
            root.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .run();
        assert_eq!(done.code, 0, "{name}: {}", done.stderr);
        assert!(
            done.stderr.contains("merged 3 run directories: 9 records"),
            "{}\n{}",
            done.stderr,
            shards_seen(&root)
        );
        assert_eq!(
            cells(&out),
            order,
            "{name}: exactly the unsharded run's cells, in its order"
        );
    }
    // Without a scheduler's variables, `auto` says what it looked for.
    let done = Bench::new(&["plan", "--shard", "auto"]).arg(&spec).run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr.contains("SLURM_ARRAY_TASK_ID"),
        "{}",
        done.stderr
    );
}

/// The scale-out and nightly recipes of `examples/`: each parses (YAML, or shell for the Slurm script),
/// and every `benchspec` command in them exists with the options they give it.
#[test]
fn the_scale_out_recipes_parse_and_name_real_commands() {
    let root = super::root();
    let files = [
        "examples/github/shards.yml",
        "examples/github/validate-specs.yml",
        "examples/github/nightly.yml",
        "examples/kubernetes/benchmark.yaml",
        "examples/kubernetes/split-load.yaml",
        "examples/slurm/benchmark.sbatch",
        "examples/slurm/split-load.sbatch",
    ];
    each_recipe_parses(&root, &files);
    let commands = [
        "validate", "schema", "plan", "run", "report", "compare", "merge", "sim", "history",
    ];
    let mut seen = 0;
    for f in files {
        let text = std::fs::read_to_string(root.join(f)).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            let Some(at) = line.find("benchspec ") else {
                continue;
            };
            let rest: Vec<&str> = line[at + 10..].split_whitespace().collect();
            let Some(cmd) = rest.first() else { continue };
            assert!(
                commands.contains(cmd),
                "{f}: `benchspec {cmd}` is no command"
            );
            // `history` has subcommands: its flags are the subcommand's.
            let help = match (*cmd, rest.get(1)) {
                ("history", Some(sub)) => Bench::new(&[cmd, sub, "--help"]).run().stdout,
                _ => Bench::new(&[cmd, "--help"]).run().stdout,
            };
            for flag in rest
                .iter()
                .take_while(|t| **t != "||")
                .filter(|t| t.starts_with("--"))
            {
                let flag = flag.split('=').next().unwrap_or(flag);
                assert!(
                    help.contains(flag),
                    "{f}: `benchspec {cmd}` has no `{flag}`"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 8, "{seen} commands found");
}

/// The recipes `files` under `root` parse: the first five as YAML, the rest as shell.
fn each_recipe_parses(root: &Path, files: &[&str; 7]) {
    for f in &files[..5] {
        let text = std::fs::read_to_string(root.join(f)).unwrap();
        let doc: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(doc.is_object(), "{f}");
    }
    for f in &files[5..] {
        let sh = std::process::Command::new("bash")
            .arg("-n")
            .arg(root.join(f))
            .status()
            .unwrap();
        assert!(sh.success(), "{f} is not valid shell");
    }
}
