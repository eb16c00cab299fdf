//! vLLM's LoRA gauge read over a cell's window: `vllm:lora_requests_info`, whose labels say
//! the adapters of running and waiting requests (`running_lora_adapters`,
//! `waiting_lora_adapters`, comma-separated) and the slots (`max_lora`). vLLM keeps one
//! series per label set it has seen, its value the time it was last set: the series with the
//! highest value is the engine's state at the scrape. The record's `lora`.

use super::prom::Scrape;
use crate::results::LoraUse;
use std::collections::BTreeSet;

/// The gauge's name.
pub const NAME: &str = "vllm:lora_requests_info";

/// The adapters running and waiting at `scrape`, and `max_lora`; `None` without the gauge.
fn state(scrape: &Scrape) -> Option<(Vec<String>, Vec<String>, Option<u64>)> {
    let latest = scrape
        .samples
        .iter()
        .filter(|s| s.name == NAME)
        .max_by(|a, b| a.value.total_cmp(&b.value))?;
    let label = |key: &str| {
        latest
            .labels
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    };
    let names = |key: &str| -> Vec<String> {
        let mut v: Vec<String> = label(key)
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        v.dedup();
        v
    };
    let max = label("max_lora").parse::<f64>().ok().map(|m| m as u64);
    Some((
        names("running_lora_adapters"),
        names("waiting_lora_adapters"),
        max,
    ))
}

/// The adapters running in each series set after the first scrape's latest: states the engine
/// was in between scrapes, which a scrape's latest series alone misses (an engine idle at each
/// scrape read no adapter at all on a real vLLM).
fn set_between(scrapes: &[&Scrape]) -> Vec<Vec<String>> {
    let ours = |s: &&Scrape| -> Vec<(f64, Vec<String>)> {
        s.samples
            .iter()
            .filter(|x| x.name == NAME)
            .map(|x| {
                let running = x
                    .labels
                    .iter()
                    .find(|(k, _)| k == "running_lora_adapters")
                    .map_or("", |(_, v)| v.as_str());
                let names = running
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect();
                (x.value, names)
            })
            .collect()
    };
    let Some(first) = scrapes.first() else {
        return Vec::new();
    };
    let t0 = ours(first)
        .iter()
        .map(|(t, _)| *t)
        .fold(f64::NEG_INFINITY, f64::max);
    scrapes
        .iter()
        .skip(1)
        .flat_map(ours)
        .filter(|(t, _)| *t > t0)
        .map(|(_, names)| names)
        .collect()
}

/// The window's LoRA figures from its `scrapes` (the first opening it); `None` when none has
/// the gauge.
pub fn read(scrapes: &[&Scrape]) -> Option<LoraUse> {
    let mut states: Vec<_> = scrapes.iter().filter_map(|s| state(s)).collect();
    if states.is_empty() {
        return None;
    }
    let max_lora = states.iter().find_map(|(_, _, m)| *m);
    let readings = states.len() as u64;
    states.extend(
        set_between(scrapes)
            .into_iter()
            .map(|r| (r, Vec::new(), max_lora)),
    );
    let seen: BTreeSet<&String> = states.iter().flat_map(|(r, _, _)| r).collect();
    Some(LoraUse {
        max_lora,
        running_adapters_max: states
            .iter()
            .map(|(r, _, _)| r.len() as u64)
            .max()
            .unwrap_or(0),
        waiting_adapters_max: states
            .iter()
            .map(|(_, w, _)| w.len() as u64)
            .max()
            .unwrap_or(0),
        adapters_seen: seen.into_iter().cloned().collect(),
        readings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM 0.32's lines as its CPU build wrote them (this project's machine, 3 adapters,
    /// `--max-loras 1`): the latest series is the state.
    #[test]
    fn the_latest_series_is_the_state() {
        let at = tokio::time::Instant::now();
        let one = Scrape::new(
            at,
            "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"a1\",waiting_lora_adapters=\"a1\"} 1.7966628087061834e+09\n\
             vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} 1.796662808721385e+09\n\
             vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"a2\",waiting_lora_adapters=\"a2\"} 1.79666280778052e+09\n",
        );
        let two = Scrape::new(
            at,
            "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"a3\",waiting_lora_adapters=\"a1,a2\"} 1.8e+09\n",
        );
        let got = read(&[&one, &two]).unwrap_or_else(|| panic!("the gauge is there"));
        assert_eq!(got.max_lora, Some(1));
        assert_eq!(got.running_adapters_max, 1);
        assert_eq!(got.waiting_adapters_max, 2);
        assert_eq!(
            got.adapters_seen,
            ["a3"],
            "the idle series was the first's state"
        );
        assert_eq!(got.readings, 2);
        assert!(read(&[&Scrape::new(at, "vllm:num_requests_running 1\n")]).is_none());
    }

    /// An engine idle at every scrape still ran adapters between them: vLLM's series set
    /// after the window opened say which (a real vLLM's load cell read none at all).
    #[test]
    fn adapters_run_between_idle_scrapes_are_seen() {
        let at = tokio::time::Instant::now();
        let line = |running: &str, t: f64| {
            format!(
                "vllm:lora_requests_info{{max_lora=\"1\",running_lora_adapters=\"{running}\",waiting_lora_adapters=\"\"}} {t}\n"
            )
        };
        let opened = Scrape::new(at, &(line("b", 90.0) + &line("", 100.0)));
        let closed = Scrape::new(
            at,
            &(line("b", 90.0) + &line("a", 150.0) + &line("", 200.0)),
        );
        let got = read(&[&opened, &closed]).unwrap_or_else(|| panic!("the gauge is there"));
        assert_eq!(got.adapters_seen, ["a"], "b ran before the window: {got:?}");
        assert_eq!(got.running_adapters_max, 1);
        assert_eq!(got.readings, 2);
    }
}
