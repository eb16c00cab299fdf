//! `benchspec tune` driven as a user drives it, on the embedded simulator: a budget that stops
//! the search, a second `tune` into the same `--out` that goes on without measuring again
//! what the first measured, the winner against the full grid's (`benchspec run` of every
//! configuration), and the frontier tune prints and writes against the one worked here from
//! `results.jsonl` — and the one `benchspec report` draws from the same directory.
//!
//! The space: `max_num_seqs` 1, 2 and 4 (one family: the twin models the cap) and 4 at half
//! speed (`time_scale: 2`, a family of its own), at 1 and 4 streams. tune measures each
//! family's extremes first — seqs1, seqs4, slow4 — so `--budget-configs 2` stops it before
//! slow4. The tiny profile runs a stream at about 1,500 tok/s: seqs4 at 4 streams about
//! 5,200 tok/s, slow4 about half that, seqs1 and seqs2 cap their 4-stream cell.

use super::cli::{Bench, Done, tempdir::Dir};
use benchspec::plan::Phase;
use benchspec::results::{Record, Status};
use benchspec::tune::TuneFile;
use std::path::Path;

const SPEC: &str = "version: 1
name: tune resume
engine:
  kind: sim
  sim: {profile: tiny}
  variants:
    - {name: seqs1, sim: {max_num_seqs: 1}}
    - {name: seqs2, sim: {max_num_seqs: 2}}
    - {name: seqs4, sim: {max_num_seqs: 4}}
    - {name: slow4, sim: {max_num_seqs: 4, time_scale: 2.0}}
model: {served_name: tiny}
workload: {max_output_tokens: 32, ignore_eos: true}
matrix: {contexts: [256], concurrency: [1, 4]}
phases:
  prefill: {enabled: false}
  decode: {duration: 1s}
slo: {tpot: {p90: 50ms}}
report: {formats: []}
";

fn tune(spec: &Path, out: &Path, extra: &[&str]) -> (Done, TuneFile) {
    let mut b = Bench::new(&["tune"]).arg(spec).arg("--out").arg(out);
    for a in extra {
        b = b.arg(a);
    }
    let done = b.run();
    let text = std::fs::read_to_string(out.join("tune.json")).unwrap_or_default();
    let file = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("tune.json ({e}): {text}\n{}", done.stderr));
    (done, file)
}

fn records(dir: &Path) -> Vec<Record> {
    benchspec::rundir::read_records(&dir.join("results.jsonl")).unwrap()
}

/// The configurations `tune` said it measured (its `measuring NAME (why)` lines).
fn measuring(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("measuring "))
        .filter_map(|l| l.split(' ').next())
        .map(String::from)
        .collect()
}

/// The frontier worked here from the records: valid decode cells as (total tok/s per GPU,
/// per-request tok/s); a cell is on it when no other is at least as high in both and higher
/// in one. Cell ids, sorted.
fn frontier_of(records: &[Record]) -> Vec<String> {
    let pts: Vec<(&str, f64, f64)> = records
        .iter()
        .filter(|r| r.phase == Phase::Decode && r.status == Status::Valid)
        .filter_map(|r| Some((r.cell.as_str(), r.total_tok_s?, r.per_request_tok_s?)))
        .collect();
    let mut on: Vec<String> = pts
        .iter()
        .filter(|(_, x, y)| {
            !pts.iter()
                .any(|(_, a, b)| a >= x && b >= y && (a > x || b > y))
        })
        .map(|p| p.0.to_string())
        .collect();
    on.sort();
    on
}

fn points(f: &TuneFile) -> Vec<String> {
    let mut p: Vec<String> = f
        .frontier
        .iter()
        .flat_map(|f| f.points.iter().map(|p| p.cell.clone()))
        .collect();
    p.sort();
    p
}

/// The best total tok/s of a valid cell meeting the SLO, per variant: the grid's winner.
fn grid_winner(records: &[Record]) -> (String, f64) {
    records
        .iter()
        .filter(|r| r.status == Status::Valid && r.open.slo_met == Some(true))
        .filter_map(|r| Some((r.variant.clone()?, r.total_tok_s?)))
        .fold((String::new(), 0.0), |a, b| if b.1 > a.1 { b } else { a })
}

/// tune's frontier, printed (`done`) and written (`file`), is the one worked from `records`,
/// each point with its record's values.
fn frontier_printed_and_written(done: &Done, file: &TuneFile, records: &[Record]) {
    assert!(!file.frontier.is_empty());
    assert_eq!(points(file), frontier_of(records));
    for p in file.frontier.iter().flat_map(|f| &f.points) {
        let r = records.iter().find(|r| r.cell == p.cell).unwrap();
        assert_eq!(Some(p.tok_s_per_gpu), r.total_tok_s);
        assert_eq!(Some(p.per_user_tok_s), r.per_request_tok_s);
        let row = format!(
            "| 256 | {} | {} | {:.1} | {:.1} |",
            r.variant.as_deref().unwrap_or_default(),
            p.load,
            p.tok_s_per_gpu,
            p.per_user_tok_s
        );
        assert!(done.stdout.contains(&row), "{row} in\n{}", done.stdout);
    }
}

/// The second tune (`done`, `files.1`) measured none of what the first (`files.0`, its
/// records `before`) had: each is `earlier` with the same engine seconds, its cells in
/// `after` once and the same; three records (the skipped prefill cell, two decode) per
/// configuration measured.
fn not_measured_again(
    done: &Done,
    (first, second): (&TuneFile, &TuneFile),
    before: &[Record],
    after: &[Record],
) {
    let measured: Vec<&str> = first
        .configs
        .iter()
        .filter(|c| c.measured)
        .map(|c| c.name.as_str())
        .collect();
    let again = measuring(&done.stderr);
    assert!(
        !again.iter().any(|n| measured.contains(&n.as_str())),
        "measured again: {again:?}"
    );
    assert!(again.contains(&"slow4".to_string()), "{again:?}");
    for name in &measured {
        let c = second.configs.iter().find(|c| c.name == *name).unwrap();
        let was = first.configs.iter().find(|c| c.name == *name).unwrap();
        assert_eq!(c.why.as_deref(), Some("earlier"), "{c:?}");
        assert_eq!(c.engine_seconds, was.engine_seconds);
    }
    // Their cells are the first run's (started at the same second, the same counts), once.
    for r in before {
        let same: Vec<&Record> = after.iter().filter(|x| x.cell == r.cell).collect();
        assert_eq!(same.len(), 1, "{}", r.cell);
        assert_eq!(
            (&same[0].started_at, same[0].output_tokens),
            (&r.started_at, r.output_tokens)
        );
    }
    let n = second.configs.iter().filter(|c| c.measured).count();
    assert_eq!(after.len(), 3 * n, "{n} measured");
    assert_eq!(points(second), frontier_of(after));
}

#[test]
fn a_budget_stops_tune_and_a_second_tune_goes_on_without_measuring_again() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.path().join("tuned");

    // 1. The budget: two configurations measured (the first family's extremes), then stopped.
    let (done, first) = tune(&spec, &out, &["--budget-configs", "2"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(
        measuring(&done.stderr),
        ["seqs1", "seqs4"],
        "{}",
        done.stderr
    );
    assert!(
        first.stopped.contains("budget of 2 configuration"),
        "{}",
        first.stopped
    );
    let measured: Vec<&str> = first
        .configs
        .iter()
        .filter(|c| c.measured)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(measured.len(), 2, "{measured:?}");
    let before = records(&out);
    let variants = |rs: &[Record]| {
        let mut v: Vec<String> = rs.iter().filter_map(|r| r.variant.clone()).collect();
        v.dedup();
        v
    };
    assert_eq!(variants(&before), ["seqs1", "seqs4"]);
    frontier_printed_and_written(&done, &first, &before);

    // 2. Again into the same directory: the two are not measured again.
    let (done, second) = tune(&spec, &out, &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    not_measured_again(&done, (&first, &second), &before, &records(&out));

    // 3. The winner against the full grid, measured whole by `run`.
    let grid = dir.path().join("grid");
    let done = Bench::new(&["run"])
        .arg(&spec)
        .arg("--out")
        .arg(&grid)
        .run();
    assert!(done.code <= 1, "{}", done.stderr);
    let (best, value) = grid_winner(&records(&grid));
    eprintln!(
        "grid winner {best} {value:.1} tok/s; tune {:?}",
        second.winner
    );
    let winner = second.winner.as_ref().expect("a winner");
    assert_eq!(winner.name, best);

    // 4. The tune directory is a run directory: `report` renders it, with the same frontier.
    report_draws(&out, &points(&second));
}

/// `report` of the tune directory `out` renders, and its frontier's points are `want`.
fn report_draws(out: &Path, want: &[String]) {
    let done = Bench::new(&["report", "--format", "markdown", "--format", "json"])
        .arg(out)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Frontier"), "{md}");
    let ctx: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let mut drawn: Vec<String> = ctx["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["points"].as_array().unwrap().iter())
        .map(|p| p["cell"].as_str().unwrap().to_string())
        .collect();
    drawn.sort();
    assert_eq!(drawn, want);
}

/// A budget spent between the two configurations of a round (the 3 × 3 space of
/// `tune.rs`: two extremes, then the round's most promising, then the budget): the last one
/// measured counts — its objective in `tune.json` is the one worked from its records, and
/// its cells are on the frontier's points where they belong — though no round refreshed
/// after it.
#[test]
fn a_budget_spent_mid_round_still_counts_what_it_measured() {
    use benchspec::tune::objective::TuneObjective;
    use benchspec::tune::search::{Ask, Budget, tune};
    let _cpu = super::cpu();
    let yaml = super::tune::space();
    let dir = Dir::new();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let path = path.to_string_lossy().into_owned();
    let loaded =
        benchspec::spec::parse(&path, &yaml, benchspec::spec::Stage::Run, &|_| None).unwrap();
    let out = dir.path().join("tuned");
    let ask = Ask {
        loaded: &loaded,
        out: &out,
        objective: TuneObjective::TokSPerGpu,
        budget: Budget {
            configs: Some(3),
            engine_s: None,
        },
    };
    tune(&ask, &super::tune::measure_paused, &|line| {
        eprintln!("tune: {line}")
    })
    .unwrap();
    let file: TuneFile =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    eprintln!("{}", benchspec::tune::summary::text(&file));
    assert!(file.stopped.contains("budget of 3"), "{}", file.stopped);
    let recs = records(&out);
    let worked = super::tune::grid_values(&recs);
    let measured: Vec<_> = file.configs.iter().filter(|c| c.measured).collect();
    assert_eq!(measured.len(), 3);
    for c in measured {
        let want = worked.iter().find(|(n, _)| *n == c.name).map(|(_, v)| *v);
        assert_eq!(c.objective, want, "{}", c.name);
    }
    assert_eq!(points(&file), frontier_of(&recs));
}
