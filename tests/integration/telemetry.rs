//! Telemetry against the embedded simulator (docs/results.md): the engine's own `/metrics` read
//! into every record and checked against the simulator's state, KV capacity from the engine
//! or the spec, and GPU power from a fake `nvidia-smi` on PATH or a fake DCGM exporter.
//! Tolerances are written beside each check.

use super::Edit;
use super::cli::{Bench, Done, tempdir::Dir};
use benchspec::results::{Record, Status};
use std::io::{Read, Write};

/// The tiny engine with a KV cache of 4,096 tokens (256 blocks): three 1K + 64 requests
/// (68 blocks each) fit at once, not eight. `kv_overflow: run` measures the cell anyway.
const KV: &str = "version: 1
name: kv
engine: {kind: sim, sim: {profile: tiny, kv_tokens: 4096}}
model: {served_name: tiny}
workload: {max_output_tokens: 64, kv_overflow: run}
matrix: {contexts: [1K], concurrency: [2, 8]}
phases: {prefill: {enabled: false}, decode: {duration: 2s}}
telemetry: {interval: 200ms}
";

/// `benchspec run` of `spec` in `dir` with a PATH of `path` and the records written.
fn run_in(dir: &Dir, spec: &str, path: &str) -> (Done, Vec<Record>) {
    let file = dir.path().join("spec.yaml");
    std::fs::write(&file, spec).unwrap();
    let out = dir.path().join("run");
    let done = Bench::new(&["run"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .env("PATH", path)
        .run();
    let records = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap_or_default();
    (done, records)
}

fn cell<'a>(records: &'a [Record], id: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.cell == id)
        .unwrap_or_else(|| panic!("no record of {id}: {records:#?}"))
}

/// vLLM's TTFT histogram bounds (the simulator exports the same), seconds.
const TTFT_BOUNDS: [f64; 9] = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25];

#[test]
fn the_engines_own_view_explains_a_kv_limited_cell() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    // No GPU source on this PATH: the run goes on without GPU fields.
    let (done, records) = run_in(&dir, KV, "/usr/bin:/bin");
    assert_eq!(done.code, 1, "one cell is invalid: {}", done.stderr);
    let small = cell(&records, "decode/1K/c2");
    assert_eq!(small.status, Status::Valid, "{small:#?}");
    let s = small.server.as_ref().unwrap();
    assert_eq!(s.source, "vllm");
    assert!(s.running_max.is_some_and(|m| m <= 2.0), "{s:#?}");
    assert!(
        s.kv_usage_max.is_some_and(|k| k > 0.0 && k <= 1.0),
        "{s:#?}"
    );
    // Warm prompts: after the warm-up every prompt block is found in the prefix cache.
    assert!(s.prefix_hit_rate.is_some_and(|h| h > 0.5), "{s:#?}");

    let big = cell(&records, "decode/1K/c8");
    assert_eq!(big.status, Status::Invalid, "{big:#?}");
    let reason = big.reasons.join("; ");
    assert!(
        reason.contains("the server ran") && reason.contains("of 8 requests at once"),
        "{reason}"
    );
    let s = big.server.as_ref().unwrap();
    // At most 3 fit for good; a 4th may be admitted while the others are short, and then
    // preempted.
    assert!(s.running_max.is_some_and(|m| m <= 4.0), "{s:#?}");
    assert!(s.running_mean.is_some_and(|m| m < 4.0), "{s:#?}");
    assert!(s.waiting_max.is_some_and(|w| w >= 4.0), "{s:#?}");
    assert!(
        big.avg_active.is_some_and(|a| a > 7.5),
        "the client had 8 in flight"
    );
    assert!(big.gpu.is_none() && big.tokens_per_joule.is_none());

    // The engine's TTFT p50 (from its histogram) against the client's: within the width of
    // the histogram bucket that holds the client's p50, plus 5 ms for the client's own side
    // (HTTP, the API server's 1 ms).
    let client = big.ttft_ms.unwrap().p50;
    let server = s.ttft_ms_p50.unwrap();
    let i = TTFT_BOUNDS.partition_point(|b| b * 1000.0 < client);
    let width = (TTFT_BOUNDS[i] - TTFT_BOUNDS[i - 1]) * 1000.0;
    assert!(
        (server - client).abs() <= width + 5.0,
        "server TTFT p50 {server} ms, client {client} ms, bucket width {width} ms"
    );
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(report.contains("No GPU telemetry"), "{report}");
}

#[test]
fn a_stated_kv_capacity_skips_the_cells_it_cannot_hold() {
    let spec = KV
        .edit("served_name: tiny}", "served_name: tiny, kv_tokens: 4096}")
        .edit(", kv_overflow: run", "");
    let done = Bench::new(&["plan"]).spec("kv.yaml", &spec).run();
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stdout.contains(
            "decode/1K/c8 skipped: 8 × (1024 + 64) = 8704 tokens > the KV cache's 4096 tokens (`workload.kv_overflow: skip`)"
        ),
        "{}",
        done.stdout
    );
    assert!(
        !done.stdout.contains("decode/1K/c2 skipped"),
        "{}",
        done.stdout
    );
}

/// With no capacity in the spec, `run` reads it from the engine (the simulator's
/// `vllm:cache_config_info`: 256 blocks × 16 tokens) and, by default, skips the cell that
/// cannot hold its requests; the cell that fits is measured.
#[test]
fn the_engines_own_kv_capacity_skips_a_cell_at_run_time() {
    let _cpu = super::cpu();
    let spec = KV
        .edit(", kv_overflow: run", "")
        .edit("duration: 2s", "duration: 1s");
    let dir = Dir::new();
    let (done, records) = run_in(&dir, &spec, "/usr/bin:/bin");
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(cell(&records, "decode/1K/c2").status, Status::Valid);
    let big = cell(&records, "decode/1K/c8");
    assert_eq!(big.status, Status::Skipped, "{big:#?}");
    assert_eq!(
        big.reasons,
        [
            "8 × (1024 + 64) = 8704 tokens > the KV cache's 4096 tokens (`workload.kv_overflow: skip`)"
        ],
        "{big:#?}"
    );
    assert!(
        big.server.is_none() && big.total_tok_s.is_none(),
        "{big:#?}"
    );
    let manifest = std::fs::read_to_string(dir.path().join("run/manifest.json")).unwrap();
    assert!(manifest.contains("\"kv_tokens\": 4096"), "{manifest}");
}

/// A fake `nvidia-smi`: two GPUs at a flat 200 W and 100 W, one line each every 250 ms.
const SMI: &str = "#!/bin/sh
while true; do
  echo '0, NVIDIA H200 NVL, 200.00, 1980, 45, 1000'
  echo '1, NVIDIA H200 NVL, 100.00, 1410, 40, 500'
  sleep 0.25
done
";

const GPU_SPEC: &str = "version: 1
name: gpu
hardware: {gpu: H200 NVL, gpu_count: 1}
engine: {kind: sim, sim: {profile: tiny}}
model: {served_name: tiny, kv_tokens: 300}
workload: {max_output_tokens: 64, kv_overflow: warn}
matrix: {contexts: [256], concurrency: [1]}
phases: {decode: {duration: 1s}}
";

/// The energy of a flat `watts` trace over a record's window: exact but for the rounding
/// of `measured_s` to 1 ms and of energy to 1 mJ.
fn check_energy(r: &Record, watts: &[f64]) {
    let gpus = r.gpu.as_ref().unwrap();
    assert_eq!(gpus.len(), watts.len(), "{gpus:#?}");
    let len = r.measured_s.unwrap();
    for (g, w) in gpus.iter().zip(watts) {
        assert!(
            (g.energy_j - w * len).abs() <= w * 0.0005 + 0.001,
            "{g:#?} over {len} s"
        );
        assert_eq!((g.power_w_mean, g.power_w_max), (*w, *w), "{g:#?}");
    }
    let total: f64 = watts.iter().sum::<f64>() * len;
    let tpj = r.tokens_per_joule.unwrap();
    let want = r.output_tokens.unwrap() as f64 / total;
    assert!((tpj - want).abs() <= want * 1e-3, "{tpj} vs {want}");
}

/// A PATH with the fake `nvidia-smi` first.
fn smi_path(dir: &Dir) -> String {
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(&smi, SMI).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&smi)
        .status()
        .unwrap();
    format!("{}:/usr/bin:/bin", bin.display())
}

#[test]
fn a_fake_nvidia_smi_gives_the_exact_energy() {
    let dir = Dir::new();
    let path = smi_path(&dir);
    let (done, records) = run_in(&dir, GPU_SPEC, &path);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let decode = cell(&records, "decode/256/c1");
    check_energy(decode, &[200.0, 100.0]);
    let g = &decode.gpu.as_ref().unwrap()[0];
    assert_eq!(g.name, "NVIDIA H200 NVL");
    assert_eq!(
        (g.sm_clock_mhz_mean, g.temp_c_max),
        (Some(1980.0), Some(45.0))
    );
    assert_eq!(g.memory_used_mb, Some(1000.0));
    assert!(
        decode
            .warnings
            .iter()
            .any(|w| w.contains("> the KV cache's 300 tokens")),
        "kv_overflow: warn runs the cell and says so: {decode:#?}"
    );
    let prefill = cell(&records, "prefill/256");
    assert!(prefill.gpu.is_some() && prefill.tokens_per_joule.is_none());
    let manifest = std::fs::read_to_string(dir.path().join("run/manifest.json")).unwrap();
    assert!(
        manifest.contains("GPU telemetry sees 2 GPU(s)")
            && manifest.contains("`hardware.gpu_count` says 1"),
        "{manifest}"
    );
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(report.contains("tok/J"), "{report}");
    let csv = std::fs::read_to_string(dir.path().join("run/results.csv")).unwrap();
    let mut lines = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let head = lines.next().unwrap();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let row = lines.find(|r| r[0] == "decode/256/c1").unwrap();
    assert_eq!(row[col("gpu_count")], "2");
    let energy: f64 = row[col("gpu_energy_j")].parse().unwrap();
    assert!(
        (energy - 300.0 * decode.measured_s.unwrap()).abs() <= 0.2,
        "{energy}"
    );
}

/// Serve `body` to every request on 127.0.0.1 (a DCGM exporter's `/metrics`), forever.
fn serve(body: &'static str) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn a_fake_dcgm_exporter_gives_the_exact_energy() {
    let port = serve(
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
         # TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H200 NVL\",Hostname=\"h\"} 150.000000\n\
         DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H200 NVL\",Hostname=\"h\"} 1755\n\
         DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H200 NVL\",Hostname=\"h\"} 51\n\
         DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\",modelName=\"NVIDIA H200 NVL\",Hostname=\"h\"} 70000\n",
    );
    let spec = GPU_SPEC.edit(
        "phases:",
        &format!("telemetry: {{gpu: dcgm, dcgm_url: 'http://127.0.0.1:{port}/metrics'}}\nphases:"),
    );
    let dir = Dir::new();
    let (done, records) = run_in(&dir, &spec, "/usr/bin:/bin");
    assert_eq!(done.code, 0, "{}", done.stderr);
    let decode = cell(&records, "decode/256/c1");
    check_energy(decode, &[150.0]);
    let g = &decode.gpu.as_ref().unwrap()[0];
    assert_eq!(
        (g.sm_clock_mhz_mean, g.temp_c_max),
        (Some(1755.0), Some(51.0))
    );
    let manifest = std::fs::read_to_string(dir.path().join("run/manifest.json")).unwrap();
    assert!(
        !manifest.contains("GPU telemetry sees"),
        "one H200 NVL, as stated: {manifest}"
    );
}

/// `telemetry: {server: false, gpu: off}` watches nothing: no `server` or `gpu` fields even
/// with an engine that has `/metrics` and an `nvidia-smi` on PATH, and the cell is measured
/// as before.
#[test]
fn telemetry_turned_off_watches_nothing() {
    let spec = GPU_SPEC.edit("phases:", "telemetry: {server: false, gpu: off}\nphases:");
    let dir = Dir::new();
    let path = smi_path(&dir);
    let (done, records) = run_in(&dir, &spec, &path);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let decode = cell(&records, "decode/256/c1");
    assert_eq!(decode.status, Status::Valid, "{decode:#?}");
    assert!(decode.total_tok_s.is_some_and(|t| t > 0.0), "{decode:#?}");
    assert!(
        decode.server.is_none() && decode.gpu.is_none() && decode.tokens_per_joule.is_none(),
        "{decode:#?}"
    );
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(!report.contains("Server-side view"), "{report}");
    assert!(report.contains("No GPU telemetry"), "{report}");
}
