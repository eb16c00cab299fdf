//! The exit map, one row per error: the code docs/cli.md's table gives it.

use super::*;
use crate::run::EngineError;
use std::io;
use std::path::PathBuf;

fn io_err() -> io::Error {
    io::Error::other("disk full")
}

fn write_dir() -> RunDirError {
    RunDirError::Write {
        path: PathBuf::from("out/results.jsonl"),
        source: io_err(),
    }
}

fn not_a_run() -> RunDirError {
    RunDirError::NotARun(PathBuf::from("nowhere"))
}

fn text() -> String {
    "m".to_string()
}

/// One row of the map: an error, its exit, and that exit's code.
type Case = (Error, Exit, i32);

/// Every write error is a finding (1), never bad input or storage; the database's own
/// failures are storage (4), never the engine's 3.
#[test]
fn each_error_exits_with_its_code() {
    let cases = [
        run_cases(),
        report_cases(),
        history_cases(),
        interop_cases(),
    ];
    for (e, exit, code) in cases.into_iter().flatten() {
        assert_eq!(e.exit(), exit, "{e}");
        assert_eq!(e.exit().code(), code, "{e}");
    }
}

/// The run directory's, the run's and the simulator's errors.
fn run_cases() -> Vec<Case> {
    vec![
        (write_dir().into(), Exit::Findings, 1),
        (not_a_run().into(), Exit::BadInput, 2),
        (RunError::RunDir(write_dir()).into(), Exit::Findings, 1),
        (RunError::RunDir(not_a_run()).into(), Exit::BadInput, 2),
        (
            RunError::Engine(EngineError::Runtime(io_err())).into(),
            Exit::Engine,
            3,
        ),
        (
            RunError::InterruptedEarly { during: text() }.into(),
            Exit::Findings,
            1,
        ),
        (
            SimError::Bind {
                addr: text(),
                source: io_err(),
            }
            .into(),
            Exit::Engine,
            3,
        ),
        (
            SimError::Twin {
                path: text(),
                why: text(),
            }
            .into(),
            Exit::BadInput,
            2,
        ),
    ]
}

/// The report's and `init`'s errors.
fn report_cases() -> Vec<Case> {
    vec![
        (
            ReportError::Write {
                path: text(),
                source: io_err(),
            }
            .into(),
            Exit::Findings,
            1,
        ),
        (ReportError::Template(text()).into(), Exit::BadInput, 2),
        (ReportError::RunDir(write_dir()).into(), Exit::Findings, 1),
        (
            InitError::Unreachable {
                url: text(),
                why: text(),
            }
            .into(),
            Exit::Engine,
            3,
        ),
        (
            InitError::Write {
                path: text(),
                source: io_err(),
            }
            .into(),
            Exit::Findings,
            1,
        ),
        (InitError::Exists { path: text() }.into(), Exit::BadInput, 2),
    ]
}

/// The history database's errors: storage (4), except a write (1) and bad input (2).
fn history_cases() -> Vec<Case> {
    vec![
        (
            HistoryError::Open {
                target: text(),
                message: text(),
            }
            .into(),
            Exit::Storage,
            4,
        ),
        (
            HistoryError::Query {
                target: text(),
                message: text(),
            }
            .into(),
            Exit::Storage,
            4,
        ),
        (
            HistoryError::Newer {
                target: text(),
                found: 9,
                known: 1,
            }
            .into(),
            Exit::Storage,
            4,
        ),
        (
            HistoryError::Write {
                path: "trend.html".into(),
                source: io_err(),
            }
            .into(),
            Exit::Findings,
            1,
        ),
        (
            HistoryError::Missing { target: text() }.into(),
            Exit::BadInput,
            2,
        ),
        (HistoryError::NoMatch(text()).into(), Exit::BadInput, 2),
        (HistoryError::Usage(text()).into(), Exit::BadInput, 2),
    ]
}

/// Import/export's, the twin's and the top level's errors.
fn interop_cases() -> Vec<Case> {
    vec![
        (
            InteropError::Write {
                path: "report.yaml".into(),
                source: io_err(),
            }
            .into(),
            Exit::Findings,
            1,
        ),
        (
            InteropError::Format {
                path: "x.json".into(),
                message: text(),
            }
            .into(),
            Exit::BadInput,
            2,
        ),
        (InteropError::RunDir(not_a_run()).into(), Exit::BadInput, 2),
        (
            TwinError::Write {
                path: "t.toml".into(),
                source: io_err(),
            }
            .into(),
            Exit::Findings,
            1,
        ),
        (TwinError::Usage(text()).into(), Exit::BadInput, 2),
        (
            Error::Write {
                path: text(),
                source: io_err(),
            },
            Exit::Findings,
            1,
        ),
    ]
}

#[test]
fn the_codes_are_distinct() {
    let all = [
        Exit::Ok,
        Exit::Findings,
        Exit::BadInput,
        Exit::Engine,
        Exit::Storage,
        Exit::Killed,
    ];
    let codes: Vec<i32> = all.iter().map(|e| e.code()).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
}
