//! The one integration-test binary: the CLI driven as a user drives it, and the spec and
//! plan stages driven through the library.

// A failed test should say so loudly; these lints guard the library's input paths.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod checks;
mod cli;
mod dialects;
mod docs;
mod edges;
mod exit;
mod export;
mod faults;
mod fleet;
mod frontier;
mod history;
mod history_gates;
mod html;
mod images;
mod init;
mod interop;
mod known;
mod launch;
mod layers;
mod limit;
mod limit_front;
mod limit_llamacpp;
mod limit_sim;
mod llamacpp;
mod lora;
mod lora_paths;
mod lora_vllm;
mod merge;
mod merge_split;
mod messages;
mod open;
mod plan;
mod prefix;
mod props;
mod repeats;
mod replay;
mod replicas;
mod report;
mod report_flags;
mod resume;
mod run;
mod schema;
mod sessions;
mod sim;
mod spec_decode;
mod telemetry;
mod traffic_reports;
mod tune;
mod tune_cli;
mod tune_twin_trust;
mod twin;
mod twin_checks;
mod twin_sim;
mod variants;
mod vllm;

use std::path::PathBuf;

/// Held by the tests that compare timings with a model and by the one that loads the CPU
/// with a real engine, so that they never run at the same time.
pub static CPU: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Take [`CPU`], whatever a failed test left behind.
pub fn cpu() -> std::sync::MutexGuard<'static, ()> {
    CPU.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The `benchspec` binary under test, as a string for a launch command.
pub fn bin() -> String {
    assert_cmd::cargo::cargo_bin("benchspec")
        .to_string_lossy()
        .into_owned()
}

/// A scheduler's SIGTERM to a running `benchspec` (`child`, its stderr piped) `after` it
/// printed `marker`: what it printed before, what it printed after, and its exit code.
pub fn sigterm_when(
    mut child: std::process::Child,
    marker: &str,
    after: std::time::Duration,
) -> (String, String, Option<i32>) {
    use std::io::{BufRead, BufReader, Read};
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains(marker) {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    std::thread::sleep(after);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    (seen, rest, child.wait().unwrap().code())
}

/// A port of 127.0.0.1 free a moment ago.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The processes whose command line holds `needle`.
pub fn processes_with(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| {
            String::from_utf8_lossy(c)
                .replace('\0', " ")
                .contains(needle)
        })
        .count()
}

/// The repository root (where `specs/` and `schemas/` are).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A path under the repository root, as a string.
pub fn repo_path(rel: &str) -> String {
    root().join(rel).to_string_lossy().into_owned()
}

/// `str::replace` for editing a spec in a test: it fails when `from` is not in the text, so
/// an edit that silently did nothing never tests the unedited spec instead.
pub trait Edit {
    /// The text with every `from` replaced by `to`; panics when there is none.
    fn edit(&self, from: &str, to: &str) -> String;
}

impl Edit for str {
    fn edit(&self, from: &str, to: &str) -> String {
        assert!(
            self.contains(from),
            "`{from}` is not in the text to edit:\n{self}"
        );
        self.replace(from, to)
    }
}

/// Every line of a `requests.jsonl` text: valid against `schemas/requests-v1.schema.json`,
/// and read back as a typed line.
pub fn requests_of(text: &str) -> Vec<benchspec::rundir::RequestLine> {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("schemas/requests-v1.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{l}: {errors:?}");
            serde_json::from_value(v).unwrap()
        })
        .collect()
}
