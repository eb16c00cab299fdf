//! GPU telemetry: samples of power, SM clock, temperature and memory every 250 ms for the
//! whole run, from an `nvidia-smi … -lms 250` child process or by polling a DCGM exporter's
//! Prometheus endpoint, kept with the instant they arrived; a cell's window is then reduced
//! to one [`GpuUse`] per GPU, its energy the power integrated over the window.

use super::prom::Scrape;
use crate::plan::Watch;
use crate::results::GpuUse;
use crate::results::stats::round;
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How often GPUs are sampled.
pub const PERIOD: Duration = Duration::from_millis(250);

/// The `nvidia-smi` query: one CSV line per GPU per period.
pub const QUERY: &str = "index,name,power.draw,clocks.sm,temperature.gpu,memory.used";

/// One GPU at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// When it arrived.
    pub at: Instant,
    /// The GPU's index.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Power draw, W.
    pub power_w: f64,
    /// SM clock, MHz.
    pub sm_mhz: Option<f64>,
    /// Temperature, °C.
    pub temp_c: Option<f64>,
    /// Memory used, MB.
    pub mem_mb: Option<f64>,
}

/// Readings as they arrive, shared with the reader.
pub type Readings = Arc<Mutex<Vec<Reading>>>;

/// A line of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; `[N/A]` fields
/// are `None`, a line without a power reading is `None`.
pub fn parse_smi_line(line: &str, at: Instant) -> Option<Reading> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() < 6 {
        return None;
    }
    let num = |s: &str| s.parse::<f64>().ok();
    Some(Reading {
        at,
        index: f[0].parse().ok()?,
        name: f[1].to_string(),
        power_w: num(f[2])?,
        sm_mhz: num(f[3]),
        temp_c: num(f[4]),
        mem_mb: num(f[5]),
    })
}

/// Start `nvidia-smi` (the program `program`, found on PATH) sampling into `samples`; the
/// child is killed when the returned guard drops.
pub fn start_smi(program: &std::path::Path, samples: Readings) -> std::io::Result<ChildGuard> {
    let mut child = std::process::Command::new(program)
        .arg(format!("--query-gpu={QUERY}"))
        .args(["--format=csv,noheader,nounits", "-lms", "250"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    if let Some(out) = child.stdout.take() {
        std::thread::Builder::new()
            .name("benchspec-gpu".into())
            .spawn(move || {
                for line in std::io::BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let (Some(s), Ok(mut v)) =
                        (parse_smi_line(&line, Instant::now()), samples.lock())
                    {
                        v.push(s);
                    }
                }
            })?;
    }
    Ok(ChildGuard(child))
}

/// Kills the sampling child when dropped.
#[derive(Debug)]
pub struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The GPUs of one DCGM exporter scrape.
pub fn parse_dcgm(scrape: &Scrape) -> Vec<Reading> {
    let mut out: Vec<Reading> = Vec::new();
    for s in &scrape.samples {
        let label = |k: &str| {
            s.labels
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let Some(index) = label("gpu").and_then(|g| g.parse::<u32>().ok()) else {
            continue;
        };
        let at = match out.iter().position(|g| g.index == index) {
            Some(i) => i,
            None => {
                out.push(Reading {
                    at: scrape.at,
                    index,
                    name: label("modelName").unwrap_or("").to_string(),
                    power_w: f64::NAN,
                    sm_mhz: None,
                    temp_c: None,
                    mem_mb: None,
                });
                out.len() - 1
            }
        };
        let g = &mut out[at];
        match s.name.as_str() {
            "DCGM_FI_DEV_POWER_USAGE" => g.power_w = s.value,
            "DCGM_FI_DEV_SM_CLOCK" => g.sm_mhz = Some(s.value),
            "DCGM_FI_DEV_GPU_TEMP" => g.temp_c = Some(s.value),
            "DCGM_FI_DEV_FB_USED" => g.mem_mb = Some(s.value),
            _ => {}
        }
    }
    out.retain(|g| g.power_w.is_finite());
    out
}

/// The integral of a power trace `(seconds from the window's start, W)`, sorted by time,
/// over `0..len`: linear between samples, held flat before the first and after the last.
pub fn energy(points: &[(f64, f64)], len: f64) -> f64 {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return 0.0;
    };
    let mut e = first.1 * first.0.clamp(0.0, len) + last.1 * (len - last.0.clamp(0.0, len));
    for w in points.windows(2) {
        let ((t0, p0), (t1, p1)) = (w[0], w[1]);
        let (a, b) = (t0.clamp(0.0, len), t1.clamp(0.0, len));
        if b <= a || t1 <= t0 {
            continue;
        }
        let at = |t: f64| p0 + (p1 - p0) * (t - t0) / (t1 - t0);
        e += (at(a) + at(b)) / 2.0 * (b - a);
    }
    e
}

/// One entry per GPU over `open..close`, from `samples`; samples more than a period outside
/// the window are not looked at.
pub fn window(samples: &[Reading], open: Instant, close: Instant) -> Vec<GpuUse> {
    let len = close.saturating_duration_since(open).as_secs_f64();
    let mut indices: Vec<u32> = samples.iter().map(|s| s.index).collect();
    indices.sort_unstable();
    indices.dedup();
    let near = |s: &&Reading| s.at + PERIOD * 2 >= open && s.at <= close + PERIOD * 2;
    let mut out = Vec::new();
    for index in indices {
        let mine: Vec<&Reading> = samples
            .iter()
            .filter(|s| s.index == index)
            .filter(near)
            .collect();
        let Some(any) = mine.first() else { continue };
        let offset = |s: &Reading| {
            if s.at >= open {
                (s.at - open).as_secs_f64()
            } else {
                -(open - s.at).as_secs_f64()
            }
        };
        let points: Vec<(f64, f64)> = mine.iter().map(|s| (offset(s), s.power_w)).collect();
        let e = energy(&points, len);
        let inside: Vec<&&Reading> = mine
            .iter()
            .filter(|s| s.at >= open && s.at <= close)
            .collect();
        let pick = if inside.is_empty() {
            mine.iter().collect()
        } else {
            inside
        };
        let vals =
            |f: fn(&Reading) -> Option<f64>| pick.iter().filter_map(|s| f(s)).collect::<Vec<_>>();
        let clocks = vals(|s| s.sm_mhz);
        out.push(GpuUse {
            index,
            name: any.name.clone(),
            power_w_mean: round(if len > 0.0 { e / len } else { any.power_w }, 2),
            power_w_max: round(vals(|s| Some(s.power_w)).into_iter().fold(0.0, f64::max), 2),
            energy_j: round(e, 3),
            sm_clock_mhz_mean: (!clocks.is_empty())
                .then(|| round(clocks.iter().sum::<f64>() / clocks.len() as f64, 1)),
            temp_c_max: vals(|s| s.temp_c).into_iter().reduce(f64::max),
            memory_used_mb: vals(|s| s.mem_mb).into_iter().reduce(f64::max),
        });
    }
    out
}

/// `program` on PATH.
pub(super) fn on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Poll a DCGM exporter every period into `samples`.
pub(super) fn poll_dcgm(url: String, samples: Readings) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Ok(http) = crate::client::http_builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
        else {
            return;
        };
        let mut every = tokio::time::interval(PERIOD);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Ok(r) = http.get(&url).send().await else {
                continue;
            };
            let Ok(text) = r.text().await else { continue };
            let keep = |n: &str| n.starts_with("DCGM_FI_DEV_");
            let found = parse_dcgm(&Scrape::only(Instant::now(), &text, &keep));
            if let Ok(mut v) = samples.lock() {
                v.extend(found);
            }
        }
    })
}

/// The GPUs found against `hardware.gpu` and `hardware.gpu_count`: a mismatch is a warning.
pub(super) fn hardware_warnings(watch: &Watch, samples: &[Reading]) -> Vec<String> {
    let mut found: Vec<(u32, &str)> = samples.iter().map(|s| (s.index, s.name.as_str())).collect();
    found.sort_unstable();
    found.dedup();
    let names: Vec<String> = found.iter().map(|(i, n)| format!("{i}: {n}")).collect();
    let mut out = Vec::new();
    if let Some(n) = watch.gpu_count
        && n as usize != found.len()
    {
        out.push(format!(
            "GPU telemetry sees {} GPU(s) ({}), `hardware.gpu_count` says {n}",
            found.len(),
            names.join(", ")
        ));
    }
    if let Some(want) = &watch.gpu {
        let want_l = want.to_lowercase();
        if let Some((_, other)) = found
            .iter()
            .find(|(_, n)| !n.to_lowercase().contains(&want_l))
        {
            out.push(format!(
                "GPU telemetry sees `{other}`, `hardware.gpu` says `{want}`"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_exact_for_flat_and_linear_traces() {
        // Flat 200 W sampled inside the window only: held to both edges.
        let flat = [(0.1, 200.0), (0.35, 200.0), (0.6, 200.0)];
        assert!((energy(&flat, 2.0) - 400.0).abs() < 1e-9);
        // A ramp from 100 W at 0 s to 300 W at 2 s, sampled past both edges.
        let ramp = [(-1.0, 0.0), (0.0, 100.0), (2.0, 300.0), (3.0, 400.0)];
        assert!((energy(&ramp, 2.0) - 400.0).abs() < 1e-9);
        assert_eq!(energy(&[], 2.0), 0.0);
    }

    #[test]
    fn smi_lines_and_dcgm_scrapes() {
        let t = Instant::now();
        let s = parse_smi_line("0, NVIDIA H200 NVL, 212.50, 1980, 45, [N/A]", t);
        let s = s.unwrap_or_else(|| unreachable!());
        assert_eq!(
            (s.index, s.name.as_str(), s.power_w),
            (0, "NVIDIA H200 NVL", 212.5)
        );
        assert_eq!(
            (s.sm_mhz, s.temp_c, s.mem_mb),
            (Some(1980.0), Some(45.0), None)
        );
        assert!(parse_smi_line("0, X, [N/A], 1, 2, 3", t).is_none());
        let text = "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",modelName=\"NVIDIA H100\"} 300.5\n\
                    DCGM_FI_DEV_SM_CLOCK{gpu=\"1\",modelName=\"NVIDIA H100\"} 1755\n\
                    DCGM_FI_DEV_FB_USED{gpu=\"1\"} 1024\n";
        let g = parse_dcgm(&Scrape::new(t, text));
        assert_eq!(g.len(), 1);
        assert_eq!(
            (g[0].index, g[0].power_w, g[0].sm_mhz),
            (1, 300.5, Some(1755.0))
        );
        assert_eq!(g[0].mem_mb, Some(1024.0));
    }

    #[test]
    fn a_window_per_gpu() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut samples = Vec::new();
        for i in 0..12u64 {
            for (gpu, w) in [(0, 100.0), (1, 50.0 + i as f64)] {
                samples.push(Reading {
                    at: t + ms(250 * i),
                    index: gpu,
                    name: "G".into(),
                    power_w: w,
                    sm_mhz: Some(1000.0),
                    temp_c: Some(40.0 + i as f64),
                    mem_mb: Some(10.0),
                });
            }
        }
        let w = window(&samples, t + ms(500), t + ms(2500));
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].energy_j, w[0].power_w_mean, w[0].power_w_max),
            (200.0, 100.0, 100.0)
        );
        // 52 W at 0.5 s rising 4 W/s to 60 W at 2.5 s: 112 J.
        assert!((w[1].energy_j - 112.0).abs() < 1e-6, "{}", w[1].energy_j);
        assert_eq!(w[1].temp_c_max, Some(50.0));
    }
}
