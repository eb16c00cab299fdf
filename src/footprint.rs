//! The client's own footprint: CPU time of the threads that drive the load (the runtime's
//! workers and the thread that blocks on it), read per thread from `/proc` on Linux, and the
//! process's peak resident memory. A decode record carries both, so that a cell whose client
//! was itself the bottleneck is seen and marked.

use crate::results::ClientUse;
use crate::results::stats::round;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The threads of the client and how many workers it was given.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    threads: usize,
    tids: Arc<Mutex<Vec<u32>>>,
}

/// CPU seconds per thread at one instant.
#[derive(Debug, Clone, Default)]
pub struct CpuTimes(HashMap<u32, f64>);

impl CpuTimes {
    /// CPU seconds spent since `earlier` by the threads sampled now (a thread that ended in
    /// between is not counted; one that started counts from zero).
    pub fn since(&self, earlier: &CpuTimes) -> f64 {
        self.0
            .iter()
            .map(|(tid, s)| (s - earlier.0.get(tid).copied().unwrap_or(0.0)).max(0.0))
            .sum()
    }
}

impl Probe {
    /// A probe of a client with `threads` worker threads.
    pub fn new(threads: usize) -> Probe {
        Probe {
            threads,
            tids: Arc::default(),
        }
    }

    /// Count the calling thread as the client's.
    pub fn register_current(&self) {
        if let (Some(tid), Ok(mut tids)) = (current_tid(), self.tids.lock())
            && !tids.contains(&tid)
        {
            tids.push(tid);
        }
    }

    /// The worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// CPU time of every client thread now; `None` where `/proc` cannot tell.
    pub fn sample(&self) -> Option<CpuTimes> {
        let tids = self.tids.lock().ok()?.clone();
        let map: HashMap<u32, f64> = tids
            .into_iter()
            .filter_map(|t| thread_cpu_s(t).map(|s| (t, s)))
            .collect();
        (!map.is_empty()).then_some(CpuTimes(map))
    }
}

/// The client's CPU time when the window opened and when it closed.
#[derive(Default)]
pub struct Cpu {
    /// At the open.
    pub open: Option<CpuTimes>,
    /// At the close.
    pub close: Option<CpuTimes>,
}

impl Cpu {
    /// The client's footprint over a window of `len` seconds.
    pub fn usage(&self, probe: &Probe, len: f64) -> Option<ClientUse> {
        let cpu_s = self.close.as_ref()?.since(self.open.as_ref()?);
        let threads = probe.threads().max(1);
        (len > 0.0).then(|| ClientUse {
            cpu_busy: round(cpu_s / (len * threads as f64), 3),
            threads: threads as u32,
            rss_mb: peak_rss_mb(),
            cpu_s: round(cpu_s, 3),
        })
    }
}

fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// A thread's CPU seconds: nanoseconds from `schedstat`, else clock ticks from `stat`.
fn thread_cpu_s(tid: u32) -> Option<f64> {
    let task = format!("/proc/self/task/{tid}");
    if let Ok(s) = std::fs::read_to_string(format!("{task}/schedstat"))
        && let Some(ns) = s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
    {
        return Some(ns as f64 / 1e9);
    }
    let stat = std::fs::read_to_string(format!("{task}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// The process's peak resident memory in MB since the last [`reset_peak_rss`].
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some((kb / 1024.0 * 10.0).round() / 10.0)
}

/// Start a new peak-memory measurement (Linux resets the peak on `5` in `clear_refs`; where
/// it cannot, the peak stays the process's).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_threads_show_cpu_time() {
        let probe = Probe::new(1);
        probe.register_current();
        let before = probe.sample();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let after = probe.sample();
        if let (Some(a), Some(b)) = (after, before) {
            let cpu = a.since(&b);
            assert!(cpu > 0.0 && cpu < 1.0, "{cpu} {x}");
        }
        assert!(peak_rss_mb().is_none_or(|m| m > 1.0));
    }
}
