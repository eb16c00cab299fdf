//! Ctrl-C during a run: the first one stops the run cleanly (the cell in flight is cancelled,
//! finished cells stay on disk, the engine is stopped); a second one exits at once, after
//! killing a launched engine's process group, which the terminal's signal does not reach.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio::sync::watch;

static ENGINE_GROUP: AtomicI32 = AtomicI32::new(0);
static FLAG: OnceLock<watch::Receiver<bool>> = OnceLock::new();

/// Remember the launched engine's process group (0: none).
pub fn set_engine_group(pgid: i32) {
    ENGINE_GROUP.store(pgid, Ordering::SeqCst);
}

/// Start listening for Ctrl-C (once per process, inside the runtime).
pub fn listen() {
    FLAG.get_or_init(|| {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = tx.send(true);
                if tokio::signal::ctrl_c().await.is_ok() {
                    let pgid = ENGINE_GROUP.load(Ordering::SeqCst);
                    if pgid > 0 {
                        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                    }
                    // Records on disk are whole lines (each appended in one write), so
                    // leaving now corrupts nothing.
                    std::process::exit(130);
                }
            }
        });
        rx
    });
}

/// Resolves when Ctrl-C was pressed (never, before [`listen`]).
pub async fn requested() {
    let Some(rx) = FLAG.get() else {
        return std::future::pending().await;
    };
    let mut rx = rx.clone();
    if rx.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}
