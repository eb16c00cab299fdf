//! A small fluent builder around the `benchspec` binary, and the tests of its commands.

use assert_cmd::Command;
use std::path::Path;

/// One invocation of `benchspec`.
pub struct Bench {
    cmd: Command,
    dir: Option<tempdir::Dir>,
}

/// The finished invocation.
pub struct Done {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Bench {
    /// `benchspec ARGS…`, run in the repository root, with no color and no API key set.
    pub fn new(args: &[&str]) -> Bench {
        let mut cmd = Command::cargo_bin("benchspec").unwrap_or_else(|e| panic!("binary: {e}"));
        cmd.current_dir(super::root())
            .args(args)
            .env_remove("VLLM_API_KEY")
            .env("NO_COLOR", "1");
        Bench { cmd, dir: None }
    }

    /// Write `text` as `name` in a scratch folder and append its path to the arguments.
    pub fn spec(mut self, name: &str, text: &str) -> Bench {
        let dir = self.dir.get_or_insert_with(tempdir::Dir::new);
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        self.cmd.arg(&path);
        self
    }

    /// Append one more argument (a path, say).
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Bench {
        self.cmd.arg(arg);
        self
    }

    /// Set an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Bench {
        self.cmd.env(key, value);
        self
    }

    /// Run to completion.
    pub fn run(mut self) -> Done {
        let out = self.cmd.output().unwrap_or_else(|e| panic!("run: {e}"));
        let _keep = self.dir;
        Done {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Done {
    /// Replace the scratch folder's path so output can be snapshotted.
    pub fn stderr_in(&self, dir_marker: &str) -> String {
        self.stderr
            .lines()
            .map(|l| match l.find(dir_marker) {
                Some(i) => {
                    let start = l[..i]
                        .rfind(|c: char| c.is_whitespace())
                        .map_or(0, |s| s + 1);
                    format!("{}{}", &l[..start], &l[i..])
                }
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A scratch folder removed on drop (no extra crate needed for so little).
pub mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The folder.
    pub struct Dir(PathBuf);

    impl Dir {
        /// A new empty folder under the system temp dir.
        pub fn new() -> Dir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("benchspec-test-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir: {e}"));
            Dir(path)
        }
        /// Its path.
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

const BROKEN: &str = "\
version: 1
name: broken in many ways
engine:
  kind: vlm
  base_url: http://127.0.0.1:8000
model:
  served_name: gemma
  max_model_len: 32K
workload:
  stall_timeout: 60
matrix:
  contexts: [8K, 4K, 8K]
  concurency: [1, 2]
phases:
  decode:
    contexts: [8K, 32K]
";

#[test]
fn validate_accepts_the_seed_specs() {
    let done = Bench::new(&[
        "validate",
        "specs/h200-nvl-gemma-4-e2b.yaml",
        "specs/h200-nvl-gemma-4-e2b.toml",
        "specs/vllm-max-num-seqs.yaml",
        "examples/minimal.yaml",
    ])
    .env("VLLM_API_KEY", "set")
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("4 spec(s): 4 valid, 0 invalid; 0 error(s), 0 warning(s)"),
        "{}",
        done.stderr
    );
}

#[test]
fn validate_warns_about_an_unset_key_but_passes() {
    let done = Bench::new(&["validate", "specs/h200-nvl-gemma-4-e2b.yaml"]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains("specs/h200-nvl-gemma-4-e2b.yaml:23:16: warning: environment variable `VLLM_API_KEY` is not set"),
        "{}",
        done.stderr
    );
}

#[test]
fn validate_warns_about_an_unset_bare_variable_where_it_is_written() {
    let text = "version: 1\nname: vars\nengine:\n  kind: vllm\n  launch:\n    command: $BENCHSPEC_NOPE_BIN serve m --port 8000\n    env: {CACHE: '${HOME}/c', OTHER: 'cost $5, $$NOT_A_VAR, $BENCHSPEC_NOPE_DIR/x'}\nmodel: {served_name: m}\nmatrix: {contexts: [1K], concurrency: [1]}\n";
    let done = Bench::new(&["validate", "--format", "short"])
        .env("HOME", "/home/u")
        .spec("vars.yaml", text)
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let got = done.stderr_in("vars.yaml");
    for want in [
        "vars.yaml:6:14: warning: `$BENCHSPEC_NOPE_BIN` names an environment variable that is not set",
        "vars.yaml:7:38: warning: `$BENCHSPEC_NOPE_DIR` names an environment variable that is not set",
    ] {
        assert!(got.contains(want), "{want}\n{got}");
    }
    assert_eq!(got.matches("warning:").count(), 2, "{got}");
}

#[test]
fn validate_reports_every_problem_located_short() {
    let done = Bench::new(&["validate", "--format", "short"])
        .spec("broken.yaml", BROKEN)
        .run();
    assert_eq!(done.code, 2);
    insta::assert_snapshot!(done.stderr_in("broken.yaml"));
}

#[test]
fn validate_full_form_has_source_and_caret() {
    let done = Bench::new(&["validate", "--format", "full"])
        .spec("broken.yaml", BROKEN)
        .run();
    assert_eq!(done.code, 2);
    insta::assert_snapshot!(done.stderr_in("broken.yaml"));
}

#[test]
fn validate_json_lists_problems_on_stdout() {
    let done = Bench::new(&["validate", "--format", "json"])
        .spec("broken.yaml", BROKEN)
        .run();
    assert_eq!(done.code, 2);
    let v: serde_json::Value =
        serde_json::from_str(&done.stdout).unwrap_or_else(|e| panic!("{e}: {}", done.stdout));
    let items = v.as_array().map(Vec::len).unwrap_or_default();
    assert_eq!(items, 8, "{}", done.stdout);
    assert_eq!(v[0]["line"], 4);
    assert_eq!(v[0]["pointer"], "/engine/kind");
}

#[test]
fn validate_goes_on_past_a_missing_file() {
    let done = Bench::new(&["validate", "no/such.yaml", "examples/minimal.yaml"]).run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr.contains("error: cannot read `no/such.yaml`"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains("examples/minimal.yaml: ok"),
        "{}",
        done.stderr
    );
}

#[test]
fn validate_reports_syntax_errors_located() {
    let done = Bench::new(&["validate"])
        .spec("bad.yaml", "version: 1\nname: [unclosed\n")
        .spec("bad.toml", "version = 1\nname = \"x\n")
        .run();
    assert_eq!(done.code, 2);
    let err = done.stderr_in("bad.");
    assert!(
        err.contains("bad.yaml:") && err.contains("error: invalid YAML"),
        "{err}"
    );
    assert!(
        err.contains("bad.toml:2:") && err.contains("error: invalid TOML"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(Bench::new(&["validate"]).run().code, 2);
    assert_eq!(Bench::new(&["frobnicate"]).run().code, 2);
    assert_eq!(
        Bench::new(&["plan", "examples/minimal.yaml", "--shard", "3/2"])
            .run()
            .code,
        2
    );
    assert_eq!(Bench::new(&["--help"]).run().code, 0);
}

#[test]
fn plan_of_the_seed_spec() {
    let done = Bench::new(&["plan", "specs/h200-nvl-gemma-4-e2b.yaml"])
        .env("VLLM_API_KEY", "set")
        .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stdout
            .contains("46 cells to run: 6 prefill, 40 decode"),
        "{}",
        done.stdout
    );
    for c in [1, 2, 4, 8, 16, 32, 64, 128] {
        let line =
            format!("decode/128K/c{c} skipped: 131072 + 4096 output tokens > max_model_len 131072");
        assert!(done.stdout.contains(&line), "missing `{line}`");
    }
    insta::assert_snapshot!(done.stdout);
}

#[test]
fn plan_of_open_loop_cells_says_their_arrivals_and_no_concurrency() {
    let done = Bench::new(&["plan", "specs/open-loop.yaml"]).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    let row = done
        .stdout
        .lines()
        .find(|l| l.contains("load/8K/r2 "))
        .unwrap_or_else(|| panic!("{}", done.stdout));
    let cols: Vec<&str> = row.split_whitespace().collect();
    // #, cell, prompt, conc, then how.
    assert_eq!(cols[..4], ["1", "load/8K/r2", "8192", "-"], "{row}");
    assert!(row.contains("poisson 2 req/s, 8 s"), "{row}");
}

#[test]
fn plan_of_an_invalid_spec_exits_2_and_says_why() {
    let done = Bench::new(&["plan"]).spec("broken.yaml", BROKEN).run();
    assert_eq!(done.code, 2);
    assert!(done.stdout.is_empty());
    assert!(
        done.stderr
            .contains("broken.yaml:13:3: error: unknown field `concurency`"),
        "{}",
        done.stderr
    );
}

#[test]
fn schema_command_prints_the_committed_schema() {
    let done = Bench::new(&["schema"]).run();
    assert_eq!(done.code, 0);
    let committed = std::fs::read_to_string(Path::new(&super::repo_path(
        "schemas/benchspec-v1.schema.json",
    )))
    .unwrap_or_default();
    assert_eq!(done.stdout, committed);
}

#[test]
fn sim_lists_its_profiles() {
    let done = Bench::new(&["sim", "--list"]).run();
    assert_eq!(done.code, 0);
    for name in ["h200-gemma-4-e2b", "tiny", "instant"] {
        assert!(
            done.stdout.lines().any(|l| l.starts_with(name)),
            "{}",
            done.stdout
        );
    }
    let done = Bench::new(&["sim", "--profile", "h100"]).run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr.contains(
            "unknown simulator profile `h100`; the profiles are h200-gemma-4-e2b, tiny, instant"
        ),
        "{}",
        done.stderr
    );
}

#[test]
fn sim_serves_on_a_free_port_until_killed() {
    use std::io::{BufRead, BufReader, Read, Write};
    let bin = assert_cmd::cargo::cargo_bin("benchspec");
    let mut child = std::process::Command::new(bin)
        .args(["sim", "--port", "0", "--profile", "tiny"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn benchspec sim");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("read the address line");
    let addr = line
        .split("at http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string);
    let response = addr.as_deref().map(|addr| {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
            .expect("write");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.starts_with("benchspec sim: profile `tiny` serving `tiny` at http://127.0.0.1:"),
        "{line}"
    );
    let response = response.unwrap_or_default();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"max_model_len\":8192"), "{response}");
}

#[test]
fn run_writes_the_run_directory_and_reports_each_cell() {
    let dir = tempdir::Dir::new();
    let out = dir.path().join("run");
    let spec = "version: 1\nname: cli run\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 64}\nmatrix: {contexts: [256, 1K], concurrency: [1, 2]}\nphases: {decode: {duration: 1s}}\n";
    let done = Bench::new(&[
        "run",
        "--only",
        "*/1K*",
        "--save-requests",
        "--out",
        out.to_str().unwrap(),
    ])
    .spec("s.yaml", spec)
    .run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("run: 3 cells against http://127.0.0.1:"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains("[  3/3] decode/1K/c2 valid"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("done: 3 valid, 0 invalid, 0 failed, 0 skipped"),
        "{}",
        done.stderr
    );
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let cells: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cell"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        cells,
        ["prefill/1K", "decode/1K/c1", "decode/1K/c2"],
        "--only keeps the matching cells"
    );
    the_run_directory_holds_the_run(&out, spec, &done.stderr);
    // The same directory again is refused before anything runs.
    let again = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec("s.yaml", spec)
        .run();
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("exists and is not empty"),
        "{}",
        again.stderr
    );
}

/// The run directory `out` of `spec`'s run: its requests, manifest, spec copy and reports
/// (`stderr`: the run's, for messages).
fn the_run_directory_holds_the_run(out: &std::path::Path, spec: &str, stderr: &str) {
    let requests = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let typed = super::requests_of(&requests);
    assert!(typed.iter().all(
        |l| matches!(l.request, benchspec::rundir::Request::Window(_))
            && l.repeat == 1
            && l.attempt == 1
    ));
    let first: serde_json::Value = serde_json::from_str(requests.lines().next().unwrap()).unwrap();
    assert_eq!(first["cell"], "decode/1K/c1");
    assert!(first["ttft_ms"].as_f64().unwrap() > 0.0, "{first}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["engine"]["reported_version"], "0.0.0+sim.tiny");
    assert!(manifest["ended_at"].is_string());
    assert_eq!(
        std::fs::read_to_string(out.join("spec.yaml")).unwrap(),
        spec,
        "the spec byte for byte"
    );
    // The reports are rendered when the run ends, from what it wrote.
    for f in ["report.md", "report.html", "results.csv", "results.json"] {
        assert!(out.join(f).is_file(), "{f} in {stderr}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| Sustained decode | 1K | 2 | Valid |"), "{md}");
}

#[test]
fn run_refuses_an_only_matching_nothing_and_a_url_without_scheme() {
    let dir = tempdir::Dir::new();
    let out = dir.path().join("run");
    let spec = "version: 1\nname: only\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 32}\nmatrix: {contexts: [256, 1K], concurrency: [1, 2]}\nphases: {decode: {duration: 300ms}}\n";
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        Bench::new(&args).spec("s.yaml", spec).run()
    };
    let none = run(&["--only", "decode/2K/*"]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(
        none.stderr.contains("error: `--only decode/2K/*` matches no cell of the plan; its cells are `prefill/256`, `decode/256/c1`, `decode/256/c2`, `prefill/1K`, `decode/1K/c1`, `decode/1K/c2`"),
        "{}",
        none.stderr
    );
    assert!(!out.exists(), "nothing was run");
    let broken = run(&["--only", "decode/[12]K/{c1"]);
    assert_eq!(broken.code, 2, "{}", broken.stderr);
    assert!(
        broken.stderr.contains("a `{` is not closed with `}`"),
        "{}",
        broken.stderr
    );
    let url = run(&["--base-url", "localhost:8000"]);
    assert_eq!(url.code, 2, "{}", url.stderr);
    assert!(
        url.stderr
            .contains("is not an http(s) URL such as `http://127.0.0.1:8000`; did you mean `http://localhost:8000`?"),
        "{}",
        url.stderr
    );
    assert!(!out.exists(), "nothing was run");
    // `{a,b}` and `[…]` select as a shell's glob does.
    let done = run(&["--only", "{prefill/256,decode/1K/c[2-4]}"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let cells: Vec<String> = benchspec::rundir::read_records(&out.join("results.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.cell)
        .collect();
    assert_eq!(cells, ["prefill/256", "decode/1K/c2"]);
}

#[test]
fn run_refuses_an_unset_api_key() {
    let spec = "version: 1\nname: t\nengine: {kind: vllm, api_key_env: BENCHSPEC_TEST_UNSET_KEY}\nmodel: {served_name: m}\nmatrix: {contexts: [1K], concurrency: [1]}\n";
    let done = Bench::new(&["run"]).spec("s.yaml", spec).run();
    assert_eq!(done.code, 2);
    assert!(
        done.stderr
            .contains("error: environment variable `BENCHSPEC_TEST_UNSET_KEY` is not set"),
        "{}",
        done.stderr
    );
}

#[test]
fn validate_takes_a_folder_for_its_specs_and_skips_one_without() {
    // The guide's own `validate specs/*` (docs/guide.md): the traces folder is passed over with a note.
    let mut args = vec!["validate".to_string()];
    let mut entries: Vec<String> = std::fs::read_dir("specs")
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    let n_specs = entries
        .iter()
        .filter(|p| p.ends_with(".yaml") || p.ends_with(".toml"))
        .count();
    args.extend(entries);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = Bench::new(&argv).env("VLLM_API_KEY", "set").run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("note: `specs/traces` is a directory with no spec in it"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains(&format!("{n_specs} spec(s): {n_specs} valid, 0 invalid")),
        "{}",
        done.stderr
    );
    // A folder stands for the specs inside it.
    let folder = Bench::new(&["validate", "specs"])
        .env("VLLM_API_KEY", "set")
        .run();
    assert_eq!(folder.code, 0, "{}", folder.stderr);
    assert!(
        folder
            .stderr
            .contains(&format!("{n_specs} spec(s): {n_specs} valid")),
        "{}",
        folder.stderr
    );
    // Nothing to judge is not a pass.
    let none = Bench::new(&["validate", "specs/traces"]).run();
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(
        none.stderr.contains("error: no spec to validate"),
        "{}",
        none.stderr
    );
}

#[test]
fn run_refuses_a_base_url_for_the_embedded_simulator() {
    let dir = tempdir::Dir::new();
    let out = dir.path().join("run");
    let url = format!("http://127.0.0.1:{}", super::free_port());
    let spec = "version: 1\nname: t\nengine: {kind: sim, sim: {profile: tiny}}\nmodel: {served_name: tiny}\nworkload: {max_output_tokens: 16}\nmatrix: {contexts: [256], concurrency: [1]}\nphases: {decode: {duration: 300ms}}\n";
    let done = Bench::new(&["run", "--out", out.to_str().unwrap(), "--base-url", &url])
        .spec("s.yaml", spec)
        .run();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("the spec's engine is `engine.kind: sim`, the embedded simulator"),
        "{}",
        done.stderr
    );
    assert!(!out.exists(), "nothing was run");
}
