//! `run --start-at TIME`: the shards of one run (`--split-load` above all) wait, once their
//! engine answers, until one wall-clock instant before their first cell, so that each
//! measures its part of a load cell at the same time as the others. When the first cell
//! is a load cell (a split shard's always is), the wait is inside it, after its prompts
//! are made and just before its first arrival: making them takes each shard its own time
//! (0.6 s apart was seen for three shards on one loaded machine). TIME is an RFC 3339
//! instant (`2026-12-07T10:00:00Z`, `Z` or an offset required), or `+DURATION` from now
//! (`+30s`, `+2m`: each machine counts from its own start, so only for shards started at
//! once). A time more than [`LATE_OK_S`] in the past is refused; the wait ends early on a
//! stop request (Ctrl-C, SIGTERM).

use super::error::RunError;
use super::event::Event;
use super::interrupt::Interrupt;
use std::time::Duration;

/// How far in the past a start instant may be and still be taken (a scheduler starts the
/// tasks of an array a little apart): the run starts at once.
pub const LATE_OK_S: f64 = 5.0;

/// The instant a run's first cell waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAt {
    /// Unix seconds.
    pub unix_s: f64,
    /// As given.
    pub text: String,
}

/// Now, in Unix seconds.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl StartAt {
    /// Read `--start-at`'s value at `now` (Unix seconds).
    pub fn parse_at(text: &str, now: f64) -> Result<StartAt, RunError> {
        let t = text.trim();
        let unix_s = match t.strip_prefix('+') {
            Some(span) => {
                let span = crate::spec::Span::parse(span)
                    .map_err(|_| RunError::StartAtSpan(t.to_string()))?;
                now + span.secs()
            }
            None => crate::results::unix_of_rfc3339(t)
                .ok_or_else(|| RunError::StartAtInstant(t.to_string()))?,
        };
        if unix_s < now - LATE_OK_S {
            return Err(RunError::StartAtPast {
                text: t.to_string(),
                ago_s: now - unix_s,
                now: crate::results::rfc3339_ms(now),
            });
        }
        Ok(StartAt {
            unix_s,
            text: t.to_string(),
        })
    }
}

/// `--start-at`'s value, read as clap reads it (a time in the past is a usage error).
pub fn parse_start_at(text: &str) -> Result<StartAt, RunError> {
    StartAt::parse_at(text, unix_now())
}

/// Wait until `at` (when given), saying so; a stop request ends the wait and the run.
pub(super) async fn wait(
    at: Option<&StartAt>,
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
) -> Result<(), RunError> {
    let Some(at) = at else { return Ok(()) };
    wait_for(at, at.unix_s - unix_now(), interrupt, on).await
}

/// Sleep until `at` (at once when it passed); a stop request cancels the cell sleeping.
pub(crate) async fn sleep_until(at: &StartAt) {
    let ahead = at.unix_s - unix_now();
    if ahead > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(ahead)).await;
    }
}

/// Wait `ahead` seconds for `at` (on tokio's clock).
async fn wait_for(
    at: &StartAt,
    ahead: f64,
    interrupt: &Interrupt,
    on: &(dyn Fn(Event) + Sync),
) -> Result<(), RunError> {
    if ahead <= 0.0 {
        if -ahead > LATE_OK_S {
            on(Event::Note(format!(
                "--start-at {} passed {:.1} s ago while the engine started; starting now (shards that started at the instant will not overlap this one)",
                at.text, -ahead
            )));
        }
        return Ok(());
    }
    on(Event::Note(format!(
        "waiting {ahead:.1} s for --start-at {} before the first cell",
        at.text
    )));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(ahead)) => Ok(()),
        () = interrupt.requested() => Err(RunError::InterruptedEarly {
            during: format!("waiting for --start-at {}", at.text),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-07T10:00:00Z is Unix 1,796,637,600 (worked from 2026-12-02T10:00:00Z =
    /// 1,796,205,600, plus 5 days of 86,400 s).
    const NOW: f64 = 1_796_637_600.0;

    #[test]
    fn instants_and_offsets_from_now() {
        let at = |t: &str| {
            StartAt::parse_at(t, NOW)
                .map(|s| s.unix_s)
                .map_err(|e| e.to_string())
        };
        assert_eq!(at("2026-12-07T10:00:30Z"), Ok(NOW + 30.0));
        assert_eq!(at("2026-12-07T11:00:30+01:00"), Ok(NOW + 30.0));
        assert_eq!(at("+30s"), Ok(NOW + 30.0));
        assert_eq!(at("+2m"), Ok(NOW + 120.0));
        // A little in the past is taken (started at once); more is refused.
        assert_eq!(at("2026-12-07T09:59:57Z"), Ok(NOW - 3.0));
        let past = at("2026-12-07T09:59:00Z").err().unwrap_or_default();
        assert!(past.contains("60 s in the past"), "{past}");
        for bad in ["2026-12-07T10:00:30", "+30", "+", "noon", "2026-12-07"] {
            let e = at(bad).err().unwrap_or_default();
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
    }

    /// The wait lasts until the instant, or until a stop request.
    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_at_the_instant_or_on_a_stop() {
        let at = StartAt {
            unix_s: NOW,
            text: "x".into(),
        };
        let notes = std::sync::Mutex::new(Vec::new());
        let on = |e: Event| {
            if let Event::Note(n) = e {
                notes.lock().unwrap_or_else(|p| p.into_inner()).push(n);
            }
        };
        let t0 = tokio::time::Instant::now();
        let i = Interrupt::new();
        assert!(wait_for(&at, 30.0, &i, &on).await.is_ok());
        assert_eq!(t0.elapsed(), Duration::from_secs(30));

        let t0 = tokio::time::Instant::now();
        let stop = i.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            stop.request();
        });
        let e = wait_for(&at, 30.0, &i, &on).await;
        assert!(
            matches!(&e, Err(RunError::InterruptedEarly { during }) if during.contains("--start-at x")),
            "{e:?}"
        );
        assert_eq!(t0.elapsed(), Duration::from_secs(10));
        // An instant that passed while the engine started: at once, said.
        let t0 = tokio::time::Instant::now();
        assert!(wait_for(&at, -8.0, &Interrupt::new(), &on).await.is_ok());
        assert_eq!(t0.elapsed(), Duration::ZERO);
        let notes = notes.lock().unwrap_or_else(|p| p.into_inner());
        assert!(notes[0].contains("waiting 30.0 s"), "{notes:?}");
        assert!(
            notes.last().is_some_and(|n| n.contains("passed 8.0 s ago")),
            "{notes:?}"
        );
    }
}
