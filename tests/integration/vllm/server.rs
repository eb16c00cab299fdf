//! The vLLM server the shared checks use: started once by the test, in a process group of
//! its own, with what a check needs to read it (`/metrics`) and run a spec against it.

use super::super::Edit;
use super::super::cli::Bench;
use super::{Env, requests};
use benchspec::results::Record;
use std::collections::BTreeMap;

/// A vLLM server started by the test for the checks that share one, in a process group of
/// its own, stopped (SIGTERM, then SIGKILL) when dropped.
pub(super) struct Vllm {
    child: std::process::Child,
    port: u16,
    _job: super::super::cli::tempdir::Dir,
}

impl Vllm {
    pub(super) fn start(env: &Env) -> Vllm {
        use std::os::unix::process::CommandExt;
        let port = super::super::free_port();
        let job = super::super::cli::tempdir::Dir::new();
        let log = std::fs::File::create(job.path().join("engine.log")).unwrap();
        let child = std::process::Command::new(&env[0].1)
            .current_dir(super::super::root())
            .args([
                "serve",
                &env[1].1,
                "--served-model-name",
                "tiny",
                "--host",
                "127.0.0.1",
            ])
            .args(["--port", &port.to_string(), "--max-model-len", "4096"])
            .args([
                "--dtype",
                "float32",
                "--enforce-eager",
                "--enable-prefix-caching",
            ])
            .arg("--enable-prompt-tokens-details")
            .env("VLLM_CPU_KVCACHE_SPACE", "1")
            .env("VLLM_CACHE_ROOT", ".cache/vllm/runtime")
            .env("TORCHINDUCTOR_CACHE_DIR", ".cache/vllm/runtime/inductor")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut vllm = Vllm {
            child,
            port,
            _job: job,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while vllm
            .get("/v1/models")
            .is_none_or(|b| !b.contains("\"tiny\""))
        {
            let log = std::fs::read_to_string(vllm._job.path().join("engine.log"));
            assert!(
                vllm.child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline,
                "vLLM did not start:\n{}",
                log.unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        vllm
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The body of a GET of `path`, when it answers 200.
    fn get(&self, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    }

    /// vLLM's counters and gauges now, summed over their labels (`name` → value).
    pub(super) fn metrics(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for line in self.get("/metrics").unwrap_or_default().lines() {
            if line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let name = name.split('{').next().unwrap_or(name).to_string();
            if let Ok(v) = value.parse::<f64>() {
                *m.entry(name).or_insert(0.0) += v;
            }
        }
        m
    }

    /// Run `text` (a spec against this server) with `args`: its exit code, stderr, records,
    /// the saved requests and the run directory.
    pub(super) fn run(&self, text: &str, args: &[&str]) -> Ran {
        let dir = super::super::cli::tempdir::Dir::new();
        let out = dir.path().join("run");
        let mut bench = Bench::new(&["run", "--save-requests", "--out", out.to_str().unwrap()])
            .spec("vllm.yaml", &text.edit("BASE", &self.url()));
        for a in args {
            bench = bench.arg(a);
        }
        let done = bench.run();
        let records =
            benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
        Ran {
            code: done.code,
            stderr: done.stderr,
            records,
            reqs: requests(&out),
            _dir: dir,
        }
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, killpg};
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.child.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A run against the shared server.
pub(super) struct Ran {
    pub(super) code: i32,
    pub(super) stderr: String,
    pub(super) records: Vec<Record>,
    pub(super) reqs: Vec<serde_json::Value>,
    _dir: super::super::cli::tempdir::Dir,
}

impl Ran {
    /// The run directory.
    pub(super) fn dir(&self) -> std::path::PathBuf {
        self._dir.path().join("run")
    }

    pub(super) fn cell(&self, id: &str) -> &Record {
        self.records
            .iter()
            .find(|r| r.cell == id)
            .unwrap_or_else(|| panic!("no {id}: {}\n{:#?}", self.stderr, self.records))
    }
}

/// A spec against the shared server (`BASE` stands for its URL), its phases `phases`.
pub(super) fn attached(workload: &str, matrix: &str, phases: &str) -> String {
    format!(
        "version: 1\nname: tiny on vLLM\nengine: {{kind: vllm, base_url: 'BASE'}}\n\
         model: {{served_name: tiny}}\nworkload: {{max_output_tokens: 64, ignore_eos: true{workload}}}\n\
         matrix: {matrix}\nphases:\n{phases}\n"
    )
}
