//! The edges of a user's real day, each of which once recorded a wrong number or lost work:
//! another server already on the launch port, SIGTERM from a scheduler, a run directory moved
//! away from its sources, `--base-url` beside `engine.launch`, a failed launch's folder in the
//! way of the retry, and a refused run that rewrote the old run's reports.

use super::Edit;
use super::cli::Bench;
use super::cli::tempdir::Dir;
use super::{bin, free_port, processes_with};
use benchspec::results::Status;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A launched `benchspec sim` (profile tiny) on `port`, with 1 s decode windows.
fn launched(port: u16) -> String {
    format!(
        "version: 1\nname: edges\nengine:\n  kind: vllm\n  base_url: http://127.0.0.1:{port}\n  launch:\n    command: [{}, sim, --port, '{port}', --profile, tiny, --served-name, m]\n    ready_timeout: 20s\n    stop_timeout: 2s\nmodel: {{served_name: m}}\nworkload: {{max_output_tokens: 32}}\nmatrix: {{contexts: [512], concurrency: [1, 2]}}\nphases: {{decode: {{duration: 1s}}}}\n",
        bin()
    )
}

/// A `benchspec sim` of its own on `port` (another server, as an orphaned engine would be),
/// ready when this returns; killed on drop.
struct OtherServer(Child);

impl OtherServer {
    fn start(port: u16, profile: &str) -> OtherServer {
        let server = OtherServer(
            Command::new(bin())
                .args(["sim", "--port", &port.to_string(), "--profile", profile])
                .args(["--served-name", "m"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the other server did not listen on {port}");
    }
}

impl Drop for OtherServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn records(out: &Path) -> Vec<benchspec::results::Record> {
    benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default()
}

#[test]
fn a_taken_launch_port_is_refused_and_the_same_command_runs_once_it_is_free() {
    let port = free_port();
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, launched(port)).unwrap();
    let out = dir.path().join("run");
    let run = || {
        Bench::new(&[
            "run",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .run()
    };
    let other = OtherServer::start(port, "h200-gemma-4-e2b");
    let refused = run();
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "error: port {port} is already in use by another process"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("launching the engine"),
        "{}",
        refused.stderr
    );
    assert!(
        records(&out).is_empty(),
        "nothing recorded of the other server"
    );
    // A refused run leaves the folder as it was (docs/run-directory.md): none, here.
    assert!(!out.exists(), "the refused run left {}", out.display());
    drop(other);
    // Nothing is in the way of the same command line.
    let done = run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(records(&out).len(), 3);
    assert!(records(&out).iter().all(|r| r.status == Status::Valid));
}

#[test]
fn a_failed_launch_leaves_nothing_in_the_way_of_a_retry() {
    let port = free_port();
    let text = launched(port);
    let dir = Dir::new();
    let out = dir.path().join("run");
    let spec = dir.path().join("s.yaml");
    let broken = text.edit("--profile, tiny", "--profile, no-such-profile");
    std::fs::write(&spec, &broken).unwrap();
    let out_s = out.to_str().unwrap();
    for extra in [&[][..], &["--resume"][..]] {
        let mut args = vec!["run", spec.to_str().unwrap(), "--out", out_s];
        args.extend_from_slice(extra);
        let failed = Bench::new(&args).run();
        assert_eq!(failed.code, 3, "{extra:?}: {}", failed.stderr);
        assert!(
            failed.stderr.contains("before it was ready"),
            "{extra:?}: the launch is tried again: {}",
            failed.stderr
        );
    }
    std::fs::write(&spec, &text).unwrap();
    let done = Bench::new(&["run", spec.to_str().unwrap(), "--out", out_s]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap();
    assert!(
        log.contains("no-such-profile"),
        "the failed launches' log is kept: {log}"
    );
}

#[test]
fn base_url_attaches_instead_of_launching() {
    let port = free_port();
    let _server = OtherServer::start(port, "tiny");
    // A launch command that cannot start: attaching never runs it.
    let text = launched(free_port()).edit("command: [", "command: [no-such-engine-3141, ");
    let dir = Dir::new();
    let out = dir.path().join("run");
    let url = format!("http://127.0.0.1:{port}");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap(), "--base-url", &url])
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "note: --base-url: attaching to the server at {url}; `engine.launch` is not used"
        )),
        "{}",
        done.stderr
    );
    assert_eq!(records(&out).len(), 3);
}

/// Start `run` and wait until it measures `cell`; its stderr so far.
fn run_until(args: &[&str], cell: &str) -> (Child, BufReader<std::process::ChildStderr>, String) {
    let mut child = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains(&format!("{cell} ...")) {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    (child, stderr, seen)
}

#[test]
fn sigterm_stops_the_engine_group_keeps_the_cells_and_resume_completes() {
    let port = free_port();
    // The engine starts a child of its own (as vLLM's API server starts its engine core):
    // the whole group must go.
    let marker = format!("sleep 299.{port}");
    let text = launched(port)
        .edit(
            "command: [",
            &format!("command: [sh, -c, '{marker} & exec \"$0\" \"$@\"', "),
        )
        .edit("duration: 1s", "duration: 3s");
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, &text).unwrap();
    let out = dir.path().join("run");
    let args = [
        "run",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let (mut child, mut stderr, seen) = run_until(&args, "decode/512/c1");
    assert_eq!(processes_with(&marker), 1, "{seen}");
    std::thread::sleep(Duration::from_millis(500));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{seen}{rest}");
    assert!(
        rest.contains("error: interrupted during decode/512/c1"),
        "{rest}"
    );
    assert!(rest.contains("--resume`"), "{rest}");
    assert!(out.join("report.md").is_file() && out.join("report.html").is_file());
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    assert_eq!(
        processes_with(&marker),
        0,
        "the engine's whole group is gone"
    );
    assert_eq!(records(&out).len(), 1);
    let resumed = Bench::new(&args).arg("--resume").run();
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let cells: Vec<String> = records(&out).into_iter().map(|r| r.cell).collect();
    assert_eq!(cells, ["prefill/512", "decode/512/c1", "decode/512/c2"]);
}

#[test]
fn a_second_signal_leaves_at_once_and_kills_the_engine() {
    let port = free_port();
    let text = launched(port).edit("duration: 1s", "duration: 30s");
    let dir = Dir::new();
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, &text).unwrap();
    let out = dir.path().join("run");
    let args = [
        "run",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let (mut child, _stderr, _) = run_until(&args, "decode/512/c1");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

/// A spec with every file it names beside it, relative: a local tokenizer, a load dataset and
/// a report template.
fn spec_with_files(dir: &Path) {
    let tok = dir.join("tok");
    std::fs::create_dir_all(&tok).unwrap();
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        let from = super::root().join("tests/fixtures/sim-tokenizer").join(f);
        std::fs::copy(from, tok.join(f)).unwrap();
    }
    let lines: String = (0..6)
        .map(|i| format!("{{\"prompt\": \"{}\"}}\n", "lorem ipsum ".repeat(8 + i)))
        .collect();
    std::fs::write(dir.join("data.jsonl"), lines).unwrap();
    std::fs::write(dir.join("extra.md.j2"), "cells: {{ cells | length }}\n").unwrap();
    let text = "version: 1\nname: moved\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny, max_model_len: 8192}\nworkload: {max_output_tokens: 8, tokenizer: tok}\nmatrix: {contexts: [256], concurrency: [1]}\nphases:\n  decode: {duration: 1s}\n  load: {rates: [50], requests: 6, dataset: data.jsonl}\nreport: {formats: [markdown, json], templates: [extra.md.j2]}\n";
    std::fs::write(dir.join("s.yaml"), text).unwrap();
}

#[test]
fn a_run_directory_moved_away_from_its_deleted_sources_still_works() {
    let top = Dir::new();
    let src = top.path().join("src");
    spec_with_files(&src);
    let first = top.path().join("first");
    let spec = src.join("s.yaml");
    // Part of the plan now; the rest after the move, with `--resume`.
    let done = Bench::new(&[
        "run",
        spec.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
    ])
    .arg("--only")
    .arg("prefill/*")
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(first.join("extra.md").is_file(), "{}", done.stderr);
    let moved = top.path().join("elsewhere/deeper/run");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&first, &moved).unwrap();
    std::fs::remove_dir_all(&src).unwrap();
    let m = moved.to_str().unwrap();
    std::fs::remove_file(moved.join("extra.md")).unwrap();
    let report = Bench::new(&["report", m]).run();
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        moved.join("extra.md").is_file(),
        "the kept template: {}",
        report.stderr
    );
    let copy = moved.join("spec.yaml");
    let resumed = Bench::new(&["run", copy.to_str().unwrap(), "--out", m, "--resume"]).run();
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let cells: Vec<String> = records(&moved).into_iter().map(|r| r.cell).collect();
    assert_eq!(cells, ["prefill/256", "decode/256/c1", "load/256/r50"]);
    let compare = Bench::new(&["compare", m, m]).run();
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    let merged = top.path().join("merged");
    let merge = Bench::new(&["merge", m, "--out", merged.to_str().unwrap()]).run();
    assert_eq!(merge.code, 0, "{}", merge.stderr);
    assert!(merged.join("tokenizer/tokenizer.json").is_file());
    let again = Bench::new(&["report", merged.to_str().unwrap()]).run();
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn a_refused_run_touches_nothing_of_the_old_run() {
    let dir = Dir::new();
    let text = "version: 1\nname: refused\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 8}\nmatrix: {contexts: [256], concurrency: [1]}\nphases: {decode: {duration: 1s}}\n";
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, text).unwrap();
    let out = dir.path().join("run");
    let o = out.to_str().unwrap();
    let done = Bench::new(&["run", spec.to_str().unwrap(), "--out", o]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let snapshot = |p: &Path| {
        let mut files: Vec<(String, Vec<u8>, std::time::SystemTime)> = std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| {
                let meta = e.metadata().unwrap();
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    bytes,
                    meta.modified().unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&out);
    std::thread::sleep(Duration::from_millis(20));
    let again = Bench::new(&["run", spec.to_str().unwrap(), "--out", o]).run();
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("exists and is not empty"),
        "{}",
        again.stderr
    );
    std::fs::write(&spec, text.edit("duration: 1s", "duration: 2s")).unwrap();
    let changed = Bench::new(&["run", spec.to_str().unwrap(), "--out", o, "--resume"]).run();
    assert_eq!(changed.code, 2, "{}", changed.stderr);
    assert!(!changed.stderr.contains("reports:"), "{}", changed.stderr);
    assert!(
        snapshot(&out) == before,
        "the old run's files are as they were"
    );
}
