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

/// Every write error is a finding (1), never bad input or storage; the database's own
/// failures are storage (4), never the engine's 3.
#[test]
fn each_error_exits_with_its_code() {
    let cases: Vec<(Error, Exit, i32)> = vec![
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
    ];
    for (e, exit, code) in cases {
        assert_eq!(e.exit(), exit, "{e}");
        assert_eq!(e.exit().code(), code, "{e}");
    }
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
