//! The HTML report in a real headless Chromium (Debian's, which `scripts/test` installs):
//! what a page logs and requests, and its layout at 1280 and 1920 px — the quickstart,
//! open-loop, capacity and variants reports never wider than the window (wide tables scroll
//! inside their card, and at 1920 px none needs to), with screenshots kept in
//! `target/report-screenshots/` for a person to look at.

use super::Edit;
use super::cli::{Bench, tempdir::Dir};
use benchspec::cli::exit::Exits;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's Chromium, which the test command installs.
fn chromium() -> PathBuf {
    let path = std::env::var_os("BENCHSPEC_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "{} is missing: scripts/test installs Debian's chromium",
        path.display()
    );
    path
}

/// Headless Chromium with a fresh profile in `dir`, a `width` × `height` window, and
/// nothing fetched on its own behalf.
pub(super) fn headless(dir: &Path, width: u32, height: u32) -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        // Whatever the browser itself would fetch goes to a closed port on this machine.
        "--proxy-server=http://127.0.0.1:1",
    ])
    .arg(format!("--window-size={width},{height}"))
    .arg(format!("--user-data-dir={}", dir.join("profile").display()));
    cmd
}

/// What a page did in headless Chromium: its console messages and the network requests it
/// made (from Chromium's net log: requests of the page's `file://` context, other than
/// `file:` and `data:`).
pub(super) struct Opened {
    pub(super) console: Vec<String>,
    pub(super) requests: Vec<String>,
}

pub(super) fn open_in_chromium(page: &Path, shot: &Path, dark: bool) -> Opened {
    let dir = Dir::new();
    let netlog = dir.path().join("net.json");
    let mut cmd = headless(dir.path(), 1280, 2400);
    cmd.args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()));
    if dark {
        cmd.arg("--force-dark-mode");
    }
    let out = cmd
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium: {stderr}");
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap()).unwrap();
    let start = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
    let requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| &e["type"] == start)
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.starts_with("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str())
        .filter(|u| !u.starts_with("file:") && !u.starts_with("data:"))
        .map(str::to_string)
        .collect();
    Opened { console, requests }
}

/// A page's layout in a window `width` px wide.
#[derive(Debug)]
struct Layout {
    /// The page's full width (`scrollWidth` of the document).
    page: u32,
    /// The window's width inside (`clientWidth`).
    window: u32,
    /// The page's full height.
    height: u32,
    /// The tables whose card scrolls sideways, by their first column head.
    scrolling: Vec<String>,
}

/// Measures the page at `width` px from a copy of it with a test-only script that writes
/// the measures into the DOM (the report's own policy forbids scripts: the copy drops it).
fn layout(page: &Path, width: u32) -> Layout {
    let dir = Dir::new();
    let html = std::fs::read_to_string(page).unwrap();
    let csp = html.find("<meta http-equiv=\"Content-Security-Policy\"");
    let html = match csp {
        Some(i) => {
            let end = i + html[i..].find('>').unwrap() + 1;
            format!("{}{}", &html[..i], &html[end..])
        }
        None => html,
    };
    let script = r#"<script>
const d = document.documentElement;
const wide = [...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => (e.querySelector('th') || e).textContent.trim());
document.body.setAttribute('data-layout', [d.scrollWidth, d.clientWidth, d.scrollHeight, wide.join('|')].join(';'));
</script></body>"#;
    let copy = dir.path().join("measured.html");
    std::fs::write(&copy, html.replace("</body>", script)).unwrap();
    let out = headless(dir.path(), width, 900)
        .arg("--dump-dom")
        .arg(format!("file://{}", copy.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = dom
        .find("data-layout=\"")
        .unwrap_or_else(|| panic!("no layout measured: {dom}"));
    let text = &dom[at + 13..];
    let text = &text[..text.find('"').unwrap()];
    let parts: Vec<&str> = text.split(';').collect();
    let n = |i: usize| parts[i].parse::<u32>().unwrap();
    Layout {
        page: n(0),
        window: n(1),
        height: n(2),
        scrolling: parts[3]
            .split('|')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    }
}

/// A screenshot of the whole page, `width` px wide.
fn screenshot(page: &Path, width: u32, height: u32, shot: &Path) {
    let dir = Dir::new();
    let _ = std::fs::remove_file(shot);
    let out = headless(dir.path(), width, height)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 30_000,
        "{}: a blank screenshot ({size} bytes)",
        shot.display()
    );
}

/// Runs `text` (written as `<name>.yaml`) into a run directory under `dir`; its stderr.
fn run(dir: &Path, name: &str, text: &str) -> (PathBuf, String) {
    let out = dir.join(name);
    let done = Bench::new(&["run", "--out", out.to_str().unwrap()])
        .spec(&format!("{name}.yaml"), text)
        .run();
    assert_eq!(done.code, 0, "{name}: {}", done.stderr);
    (out, done.stderr)
}

/// Runs `text` in this process on a paused clock (the simulator answering in-process) and
/// renders its Markdown and HTML reports; the run directory.
fn measure(dir: &Path, name: &str, text: &str) -> PathBuf {
    use benchspec::spec::{self, Format, Stage};
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    let loaded = spec::parse(&path.to_string_lossy(), text, Stage::Run, &|_| None)
        .unwrap_or_else(|e| panic!("{name}: {:#?}", e.diagnostics()));
    let out = dir.join(name);
    let opts = benchspec::run::RunOptions {
        out: Some(out.clone()),
        ..Default::default()
    };
    let config = benchspec::plan::RunConfig::new(&loaded);
    let summary = super::open::run_config(&config, &opts, &|_| {}, true);
    assert_eq!(summary.exit().code(), 0, "{name}: {summary:?}");
    let run = benchspec::report::load(&out).unwrap();
    benchspec::report::render(&run, &[Format::Markdown, Format::Html], &[], &out).unwrap();
    out
}

fn shipped(rel: &str) -> String {
    std::fs::read_to_string(super::repo_path(rel)).unwrap()
}

/// `specs/vllm-max-num-seqs.yaml` made small and simulated: two `max_num_seqs` variants of
/// the tiny profile, measured twice each.
const VARIANTS: &str = "version: 1
name: tiny under a simulated vLLM, --max-num-seqs 32 vs 64
description: The sustained-decode matrix for two scheduler limits.
hardware: {type: discrete-gpu, gpu: H200 NVL (simulated), gpu_count: 1, vram: 141GB, os: linux}
engine:
  kind: sim
  sim: {profile: tiny, kv_tokens: 262144, max_num_seqs: 32}
  variants:
    - name: mns32
    - name: mns64
      sim: {max_num_seqs: 64}
model: {served_name: tiny, max_model_len: 8192}
workload: {max_output_tokens: 64, prompt_cache: warm}
matrix: {contexts: [1K, 2K], concurrency: [1, 8, 32]}
phases: {prefill: {enabled: false}, decode: {duration: 1s}}
repeats: 2
";

/// The page never overflows the window; at 1920 px no table needs to scroll; every chart
/// is as wide as the others. Screenshots of both widths are kept.
fn check_layout(name: &str, html: &Path) {
    let shots = super::root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for width in [1280, 1920] {
        let l = layout(html, width);
        assert!(
            l.page <= l.window,
            "{name} at {width} px: the page is {} px wide in a {} px window",
            l.page,
            l.window
        );
        if width == 1920 {
            assert!(
                l.scrolling.is_empty(),
                "{name} at 1920 px: tables cut off: {:?}",
                l.scrolling
            );
        }
        let shot = shots.join(format!("{name}-{width}.png"));
        screenshot(html, width, l.height.clamp(900, 12_000), &shot);
    }
}

/// The `x` of every bar of the prefill chart.
fn bar_xs(html: &str) -> Vec<f64> {
    html.split("<rect x=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
        .collect()
}

#[test]
fn the_shipped_reports_fit_1280_and_1920_px_and_show_what_ran() {
    let _cpu = super::cpu();
    let dir = Dir::new();
    let d = dir.path();

    let out = measure(d, "quickstart", &shipped("specs/quickstart.yaml"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // The simulator is the engine, with its profile, not the vLLM version it imitates.
    assert!(html.contains("<dd>h200-gemma-4-e2b</dd>"), "profile");
    assert!(!html.contains("0.27.2rc1"), "the imitated version string");
    // One request at a time is never "run at once"; notes are HTML, not Markdown.
    assert!(!html.contains(">1.0 run at once<"));
    assert!(
        html.contains("<code>telemetry.gpu</code>"),
        "gpu note as HTML"
    );
    // The prefill bars share the axis: the second one starts past the middle.
    let bars = bar_xs(&html);
    assert_eq!(bars.len(), 2, "{bars:?}");
    assert!(bars[1] > 300.0, "the bars spread over the axis: {bars:?}");
    check_layout("quickstart", &out.join("report.html"));

    let out = measure(d, "open-loop", &shipped("specs/open-loop.yaml"));
    check_open_loop(&out);
    check_layout("open-loop", &out.join("report.html"));

    let cap = shipped("specs/capacity.yaml").edit("duration: 3s", "duration: 1s");
    let (out, stderr) = run(d, "capacity", &cap);
    check_capacity(&out, &stderr);
    check_layout("capacity", &out.join("report.html"));

    let out = measure(d, "variants", VARIANTS);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let grid = html.find("<div class=\"charts\">").unwrap();
    let first = html
        .find("Total tok/s against simultaneous requests at 1K")
        .unwrap();
    assert!(grid < first, "the variant charts sit in the chart grid");
    check_layout("variants", &out.join("report.html"));

    // Sessions (a table of turns per cell, the TTFT-by-turn chart) and a trace replay.
    let out = measure(d, "sessions", &shipped("specs/sessions.yaml"));
    check_layout("sessions", &out.join("report.html"));
    std::fs::create_dir_all(d.join("traces")).unwrap();
    let trace = shipped("specs/traces/sample.jsonl");
    std::fs::write(d.join("traces/sample.jsonl"), trace).unwrap();
    let out = measure(d, "replay", &shipped("specs/replay.yaml"));
    check_layout("replay", &out.join("report.html"));
}

/// Item 13: rates on every row, the SLO's percentile, no disabled phase as skipped cells, no
/// prefill claimed, the first cell's server view without the warm-up, achieved explained;
/// SLO labels beside the plot.
fn check_open_loop(out: &Path) {
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for text in [&html, &md] {
        assert!(
            !text.contains("Skipped cells"),
            "disabled phases are not cells"
        );
        assert!(!text.contains("prefill at"), "no prefill ran");
        assert!(text.contains("open loop at 8K: 2, 8, 16, 32 req"), "{text}");
        assert!(text.contains("completed inside the measured window ÷ the window's length"));
    }
    assert!(
        md.contains("| Open-loop load | 8K | 2 req/s | Valid |"),
        "{md}"
    );
    assert!(
        html.contains("<th>TTFT p90</th><th>TPOT p90</th>"),
        "the SLO's percentile"
    );
    // The SLO's labels are in the right margin, beside the plot (which ends at x = 520).
    let labels: Vec<f64> = html
        .match_indices("\" font-size=\"11\"><title>SLO")
        .map(|(i, _)| {
            let head = &html[..i];
            let x = head.rfind("<text x=\"").unwrap() + 9;
            head[x..x + head[x..].find('"').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(labels.len(), 2, "one per chart");
    assert!(labels.iter().all(|x| *x > 520.0), "{labels:?}");
    // The first cell's engine view is of its arrivals: every prompt was warmed before.
    let recs = benchspec::rundir::read_records(&out.join("results.jsonl")).unwrap();
    let first = recs.iter().find(|r| r.cell == "load/8K/r2").unwrap();
    let hits = first.server.as_ref().unwrap().prefix_hit_rate.unwrap();
    assert!(
        hits > 0.9,
        "the warm-up's prefills are not in the window: {hits}"
    );
}

/// Item 12: the console says what each probe found and ends with the capacity; the report
/// lists the probes by value with the SLO's percentile, and charts them.
fn check_capacity(out: &Path, stderr: &str) {
    assert!(
        stderr.contains("[probe  1] capacity/1K/c1 meets SLO"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[probe  2] capacity/1K/c96 misses: TTFT p90 "),
        "{stderr}"
    );
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("capacity at 1K: ")
            && last.ends_with(" concurrent (SLO: TTFT p90 ≤ 40 ms)"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md.split("### 1K context").nth(1).unwrap();
    let table = section.split("\n## ").next().unwrap();
    let values: Vec<u32> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `capacity/1K/c"))
        .map(|l| l[..l.find('`').unwrap()].parse().unwrap())
        .collect();
    assert!(values.len() >= 5, "{table}");
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "by value: {values:?}"
    );
    assert!(table.contains("| Probe | Requests at once | TTFT p90 (SLO ≤ 40 ms) | SLO |"));
    assert!(md.contains("| Capacity probe | 1K | 1 | Valid |"), "{md}");
    assert!(
        !md.contains("Sustained decode"),
        "probes are labelled as probes"
    );
    assert!(!html.contains("<h2>Charts</h2>"), "no empty Charts heading");
    assert!(html.contains("TTFT p90 against requests at once at 1K context"));
    assert!(
        html.contains(">capacity "),
        "the capacity marked on the chart"
    );
}

#[test]
fn the_layout_check_catches_a_page_wider_than_its_window() {
    let dir = Dir::new();
    let page = dir.path().join("wide.html");
    std::fs::write(
        &page,
        "<!doctype html><body><div class=\"scroll\" style=\"overflow-x:auto\"><table><tr><th>Wide</th><td style=\"min-width:1500px\">x</td></tr></table></div><div style=\"width:2500px\">y</div></body>",
    )
    .unwrap();
    let l = layout(&page, 1280);
    assert!(l.page > l.window, "{l:?}");
    assert_eq!(l.scrolling, ["Wide"], "{l:?}");
}
