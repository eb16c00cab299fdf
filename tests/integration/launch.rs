//! `engine.launch`: benchspec starts the engine (here its own `benchspec sim`, a real process
//! speaking vLLM's API), waits until it is ready, measures, and stops it; and every way a
//! launch can go wrong ends with the message a user needs and no process left behind.

use super::Edit;
use super::cli::Bench;
use super::{bin, free_port, processes_with};

fn spec(port: u16, command: &str, ready: &str) -> String {
    format!(
        "version: 1\nname: launched\nengine:\n  kind: vllm\n  base_url: http://127.0.0.1:{port}\n  launch:\n    command: {command}\n    ready_timeout: {ready}\n    stop_timeout: 2s\nmodel: {{served_name: m}}\nworkload: {{max_output_tokens: 32}}\nmatrix: {{contexts: [512], concurrency: [1, 2]}}\nphases: {{decode: {{duration: 1s}}}}\n"
    )
}

/// `text` with prompts sized by the simulator's tokenizer as local files (a `kind: openai`
/// engine has no `/tokenize`).
fn sized_locally(text: &str) -> String {
    text.edit(
        "workload: {max_output_tokens: 32}",
        &format!(
            "workload: {{max_output_tokens: 32, tokenizer: '{}'}}",
            super::repo_path("tests/fixtures/sim-tokenizer")
        ),
    )
}

/// Every file under `dir`, its folders' too (the kept tokenizer and templates).
fn every_file(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(every_file(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_launched_engine_is_measured_then_stopped() {
    let port = free_port();
    let command = format!(
        "[{}, sim, --port, '{port}', --profile, tiny, --served-name, m]",
        bin()
    );
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec(port, &command, "20s"))
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains("note: launching the engine"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("done: 3 valid"), "{}", done.stderr);
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap();
    assert!(
        log.contains("benchspec sim: profile `tiny` serving `m`"),
        "{log}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the engine is gone after the run"
    );
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"launch_command\""), "{manifest}");
}

/// `$NAME` is expanded as a shell expands it (the seed spec's `"$HOME/…/vllm"`), not only
/// `${NAME}`; `$$` is one `$`.
#[test]
fn a_command_naming_its_program_with_a_bare_variable_is_launched() {
    let port = free_port();
    let command =
        format!("'\"$BENCHSPEC_TEST_ENGINE\" sim --port {port} --profile tiny --served-name a$$b'");
    let text = spec(port, &command, "20s")
        .edit("served_name: m", "served_name: a$b")
        .edit("concurrency: [1, 2]", "concurrency: [1]");
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .env("BENCHSPEC_TEST_ENGINE", &bin())
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stderr.contains("done: 2 valid"), "{}", done.stderr);
    let log = std::fs::read_to_string(out.join("engine.log")).unwrap();
    assert!(
        log.contains("benchspec sim: profile `tiny` serving `a$b`"),
        "{log}"
    );
    // Unset, the variable stops the run before anything starts.
    let out = dir.path().join("unset");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains(
            "error: `$BENCHSPEC_TEST_ENGINE` names an environment variable that is not set"
        ),
        "{}",
        done.stderr
    );
}

#[test]
fn a_command_that_does_not_exist() {
    let port = free_port();
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec(
            "s.yaml",
            &spec(port, &format!("no-such-engine-3141 --port {port}"), "5s"),
        )
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(done.stderr.contains("error: cannot start the engine `no-such-engine-3141`: No such file or directory (os error 2) (is it installed and on PATH?)"), "{}", done.stderr);
}

#[test]
fn an_engine_that_exits_at_once() {
    let port = free_port();
    let command = format!(
        "[{}, sim, --port, '{port}', --profile, no-such-profile]",
        bin()
    );
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &spec(port, &command, "20s"))
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stderr.contains(
            "error: the engine exited (exit status: 2) before it was ready; the last lines of"
        ),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("unknown simulator profile `no-such-profile`"),
        "the log's tail is shown: {}",
        done.stderr
    );
}

#[test]
fn an_engine_never_ready_is_given_up_and_killed() {
    let port = free_port();
    let marker = "31.41592";
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec(
            "s.yaml",
            &sized_locally(
                &spec(port, &format!("[sleep, '{marker}']"), "1s")
                    .edit("kind: vllm", "kind: openai"),
            ),
        )
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("error: the engine was not ready within 1s"),
        "{}",
        done.stderr
    );
    assert_eq!(
        processes_with(&format!("sleep {marker}")),
        0,
        "the engine's process group is gone"
    );
}

#[test]
fn an_engine_that_dies_mid_run_is_relaunched_and_later_cells_are_valid() {
    let port = free_port();
    // Each launch of this engine lives 2.5 s: it dies during the second decode cell.
    let command = format!(
        "[{}, sim, --port, '{port}', --profile, tiny, --served-name, m, --die-after, 2500ms]",
        bin()
    );
    let text = spec(port, &command, "20s")
        .edit(
            "    stop_timeout: 2s\n",
            "    stop_timeout: 2s\n    restart_on_crash: true\n",
        )
        .edit("concurrency: [1, 2]", "concurrency: [1, 2, 4, 8]");
    let dir = super::cli::tempdir::Dir::new();
    let out = dir.path().join("run");
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", &text)
        .run();
    assert_eq!(done.code, 1, "a cell was hit: {}", done.stderr);
    assert!(
        done.stderr.contains("relaunching (`restart_on_crash`)"),
        "{}",
        done.stderr
    );
    the_crashed_cell_fails_and_the_next_is_valid(&out);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the engine is gone after the run"
    );
    // Without `restart_on_crash` the run ends there, with the engine's exit status.
    let out2 = dir.path().join("run2");
    let once = spec(port, &command, "20s").edit("concurrency: [1, 2]", "concurrency: [1, 2, 4]");
    let done = Bench::new(&["run", "--out", out2.to_str().unwrap()])
        .spec("s2.yaml", &once)
        .run();
    assert_eq!(done.code, 3, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("error: the engine exited (exit status: 3) during decode/512/c"),
        "{}",
        done.stderr
    );
}

/// The records in `out` of a run whose engine died mid-run: the cell it hit failed, its
/// failures counted (with back-off) and the exit said; the relaunched engine measures the next.
fn the_crashed_cell_fails_and_the_next_is_valid(out: &std::path::Path) {
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    use benchspec::results::Status;
    let hit = records
        .iter()
        .position(|r| r.status != Status::Valid)
        .unwrap_or_else(|| panic!("{records:#?}"));
    assert!(
        records[hit].errors > 0 && records[hit].errors < 200,
        "failures are counted, with back-off, not hammered: {:#?}",
        records[hit]
    );
    assert_eq!(records[hit].status, Status::Failed);
    assert!(
        records[hit]
            .reasons
            .iter()
            .any(|r| r.starts_with("the engine exited (exit status: 3) during the cell")),
        "{:#?}",
        records[hit]
    );
    let after = records
        .get(hit + 1)
        .unwrap_or_else(|| panic!("no cell after the crash: {records:#?}"));
    assert_eq!(
        after.status,
        Status::Valid,
        "the relaunched engine measures the next cell: {records:#?}"
    );
}

#[test]
fn ctrl_c_during_a_cell_keeps_finished_cells_and_stops_the_engine() {
    use std::io::BufReader;
    let port = free_port();
    let command = format!(
        "[{}, sim, --port, '{port}', --profile, tiny, --served-name, m]",
        bin()
    );
    let text = spec(port, &command, "20s").edit("duration: 1s", "duration: 30s");
    let dir = super::cli::tempdir::Dir::new();
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(&spec_path, &text).unwrap();
    let out = dir.path().join("run");
    let mut child = std::process::Command::new(bin())
        .args([
            "run",
            spec_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let seen = read_until(&mut stderr, "decode/512/c1 ...");
    std::thread::sleep(std::time::Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{seen}{rest}");
    assert!(
        rest.contains(
            "error: interrupted during decode/512/c1; the finished cells (1) are kept in"
        ),
        "{rest}"
    );
    assert!(
        rest.contains(&format!(
            "go on with `benchspec run {} --out {} --resume`",
            spec_path.display(),
            out.display()
        )),
        "{rest}"
    );
    only_the_finished_cell_is_kept(&out);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the engine was stopped"
    );
}

/// The lines of `stderr` up to the one holding `until` (or its end), e.g. until the first
/// decode cell is being measured (the prefill cell is then on disk).
fn read_until(stderr: &mut impl std::io::BufRead, until: &str) -> String {
    let mut seen = String::new();
    while !seen.contains(until) {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    seen
}

/// The run in `out`, interrupted during its first decode cell: the report says it is
/// unfinished, and only the prefill cell has a record.
fn only_the_finished_cell_is_kept(out: &std::path::Path) {
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("**Unfinished run:** 2 planned cell(s)"),
        "{report}"
    );
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(
        records.iter().map(|r| r.cell.as_str()).collect::<Vec<_>>(),
        ["prefill/512"]
    );
}

#[test]
fn the_api_key_never_reaches_a_file_or_the_terminal() {
    let secret = "sk-benchspec-test-7f3a91c2";
    // An engine that prints its key (vLLM prints its arguments) before serving: a run that
    // ends well, one whose engine dies mid-run (the log's last lines reach the terminal), and
    // one whose engine exits before it is ready.
    let cases = [
        ("serves", "", 0, 6),
        ("dies mid-run", " --die-after 1500ms", 3, 4),
        ("exits at once", " --profile no-such-profile", 3, 1),
    ];
    for (case, extra, code, min_files) in cases {
        let port = free_port();
        let command = format!(
            "[sh, -c, 'echo starting with --api-key ${{BENCHSPEC_TEST_KEY}}; exec {} sim --port {port} --profile tiny --served-name m{extra}']",
            bin()
        );
        let text = sized_locally(&spec(port, &command, "20s").edit(
            "kind: vllm",
            "kind: openai\n  api_key_env: BENCHSPEC_TEST_KEY",
        ));
        let dir = super::cli::tempdir::Dir::new();
        let out = dir.path().join("run");
        let done = Bench::new(&["run", "--save-requests", "--out", out.to_str().unwrap()])
            .env("BENCHSPEC_TEST_KEY", secret)
            .spec("s.yaml", &text)
            .run();
        assert_eq!(done.code, code, "{case}: {}", done.stderr);
        assert!(
            !done.stdout.contains(secret) && !done.stderr.contains(secret),
            "{case}: the key on the terminal"
        );
        let mut files = 0;
        for path in every_file(&out) {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{case}: the key is in {}",
                path.display()
            );
            files += 1;
        }
        assert!(files >= min_files, "{case}: {files} files");
        let log = std::fs::read_to_string(out.join("engine.log")).unwrap();
        assert!(
            log.contains("starting with --api-key <redacted>"),
            "{case}: {log}"
        );
        if code != 0 {
            assert!(
                done.stderr.contains("starting with --api-key <redacted>"),
                "{case}: the log's last lines are shown: {}",
                done.stderr
            );
        }
    }
}
