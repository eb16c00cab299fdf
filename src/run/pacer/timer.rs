//! A sleep to the microsecond for the arrival dispatcher. Tokio's timers fire on a wheel of
//! 1 ms ticks, so an arrival would be up to a millisecond late; on Linux a `timerfd` set for
//! each arrival wakes the runtime's I/O driver on time instead, and the dispatcher stays a
//! task on the runtime, so a request task it spawns starts on the same worker without a
//! cross-thread wake-up. Elsewhere, or if the timerfd cannot be made, tokio's sleep serves.

use tokio::time::Instant;

/// A precise sleep.
pub struct Timer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<linux::Fd>>,
}

impl Timer {
    /// A timer; falls back to tokio's when a timerfd cannot be made.
    pub fn new() -> Timer {
        Timer {
            #[cfg(target_os = "linux")]
            fd: linux::Fd::new().and_then(linux::register),
        }
    }

    /// A timer on tokio's clock alone (tokio's 1 ms wheel): for a run against a server in
    /// this process, whose time a test may pause.
    pub fn on_clock() -> Timer {
        Timer {
            #[cfg(target_os = "linux")]
            fd: None,
        }
    }

    /// Sleep until `due` (return at once when it has passed).
    pub async fn until(&self, due: Instant) {
        let now = Instant::now();
        if due <= now {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd
            && fd.get_ref().arm(due - now)
        {
            while Instant::now() < due {
                let Ok(mut guard) = fd.readable().await else {
                    break;
                };
                if guard.get_inner().expired() {
                    return;
                }
                guard.clear_ready();
            }
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use nix::sys::time::TimeSpec;
    use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
    use std::os::fd::{AsFd, AsRawFd, RawFd};
    use std::time::Duration;

    /// A non-blocking monotonic timerfd.
    pub struct Fd(TimerFd);

    impl Fd {
        pub fn new() -> Option<Fd> {
            let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
            TimerFd::new(ClockId::CLOCK_MONOTONIC, flags).ok().map(Fd)
        }

        /// Fire once, `after` from now.
        pub fn arm(&self, after: Duration) -> bool {
            let when = Expiration::OneShot(TimeSpec::from_duration(after));
            self.0.set(when, TimerSetTimeFlags::empty()).is_ok()
        }

        /// Whether it fired (reading its count of expirations, which resets it).
        pub fn expired(&self) -> bool {
            self.0.wait().is_ok()
        }
    }

    /// `fd` on the runtime's I/O driver.
    #[expect(
        deprecated,
        reason = "`AsyncFd::new` is deprecated for descriptors an `AsRawFd` could swap or close; \
                  `Fd` owns its timerfd for its whole life, and the sound `register` is `unsafe`, \
                  which this crate forbids"
    )]
    pub fn register(fd: Fd) -> Option<tokio::io::unix::AsyncFd<Fd>> {
        tokio::io::unix::AsyncFd::new(fd).ok()
    }

    impl AsRawFd for Fd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_fd().as_raw_fd()
        }
    }
}
