//! The history store: one connection pool over SQLite or PostgreSQL (sqlx's `Any` driver, so
//! every statement of [`super::sql`] is the same text on both), migrated on open, written in
//! one transaction per run. Writes that meet another writer (SQLite's lock, PostgreSQL's
//! race to create a table) are retried, so shards finishing together never fail or duplicate.

use super::HistoryError;
use super::sql;
pub use super::target::Target;
use crate::report::verdict::headline;
use crate::results::Record;
use crate::results::record::utc_now;
use crate::rundir::Run;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};
use std::time::Duration;

type Result<T> = std::result::Result<T, HistoryError>;

/// How long a PostgreSQL server has to accept a connection (a refused one fails at once).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to the PostgreSQL server at `url`, within [`CONNECT_TIMEOUT`], closed again:
/// what the driver says when it fails (connection refused, authentication failed, no such
/// database) — the pool would retry until its own timeout and only say that it timed out.
/// `target` is the database as shown in messages.
async fn probe(url: &str, target: String) -> Result<()> {
    use sqlx::Connection;
    let message =
        match tokio::time::timeout(CONNECT_TIMEOUT, sqlx::AnyConnection::connect(url)).await {
            Ok(Ok(c)) => {
                let _ = c.close().await;
                return Ok(());
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "no answer within {} s: is the server up, and its host and port right?",
                CONNECT_TIMEOUT.as_secs()
            ),
        };
    Err(HistoryError::Open { target, message })
}

/// What adding a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The run's identity.
    pub run_id: String,
    /// The run was not in the history before.
    pub new_run: bool,
    /// Cells added now (a resumed run added again adds the cells it gained).
    pub cells_added: usize,
}

/// An open history.
pub struct Store {
    pool: AnyPool,
    target: Target,
}

impl Store {
    /// Open the history at `target`, creating it when missing (`history add`,
    /// `run --history`), and migrate it.
    pub async fn open(target: Target) -> Result<Store> {
        Store::connect(target, true).await
    }

    /// Open the history at `target` for reading (`list`, `trend`, `site`): a missing SQLite
    /// file is refused ([`HistoryError::Missing`]), never created.
    pub async fn open_existing(target: Target) -> Result<Store> {
        Store::connect(target, false).await
    }

    async fn connect(target: Target, create: bool) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let open_err = |message: String| HistoryError::Open {
            target: target.shown(),
            message,
        };
        match &target {
            Target::Sqlite(p) if !create && !p.is_file() => {
                return Err(HistoryError::Missing {
                    target: target.shown(),
                });
            }
            Target::Sqlite(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
                }
            }
            Target::Postgres(url) => probe(url, target.shown()).await?,
        }
        // One connection to an SQLite file (its busy timeout set once, writes in order).
        let (connections, wait) = match target {
            Target::Sqlite(_) => (1, Duration::from_secs(30)),
            Target::Postgres(_) => (2, CONNECT_TIMEOUT * 2),
        };
        let pool = AnyPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(wait)
            .connect(&target.url(create))
            .await
            .map_err(|e| open_err(e.to_string()))?;
        let store = Store { pool, target };
        if matches!(store.target, Target::Sqlite(_)) {
            store.exec("PRAGMA busy_timeout = 30000").await?;
        }
        retry(|| store.migrate()).await?;
        Ok(store)
    }

    /// The database, for messages.
    pub fn target(&self) -> &Target {
        &self.target
    }

    fn err(&self, e: sqlx::Error) -> HistoryError {
        HistoryError::Query {
            target: self.target.shown(),
            message: e.to_string(),
        }
    }

    async fn exec(&self, statement: &str) -> Result<()> {
        sqlx::query(statement)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    async fn migrate(&self) -> Result<()> {
        self.exec(sql::VERSION_TABLE).await?;
        let row = sqlx::query(sql::VERSION)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let found: i64 = row.try_get("version").map_err(|e| self.err(e))?;
        let known = sql::MIGRATIONS.last().map_or(0, |m| m.0);
        if found > known {
            return Err(HistoryError::Newer {
                target: self.target.shown(),
                found,
                known,
            });
        }
        for (version, statements) in sql::MIGRATIONS.iter().filter(|m| m.0 > found) {
            let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
            for s in *statements {
                sqlx::query(s)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.err(e))?;
            }
            sqlx::query(sql::SET_VERSION)
                .bind(*version)
                .bind(utc_now())
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            tx.commit().await.map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Add `run` (read from its directory) once, by its identity.
    pub async fn add(&self, run: &Run) -> Result<Added> {
        let facts = super::facts::RunFacts::of(run);
        retry(|| self.add_once(run, &facts)).await
    }

    async fn add_once(&self, run: &Run, f: &super::facts::RunFacts) -> Result<Added> {
        let e = |e| self.err(e);
        let mut tx = self.pool.begin().await.map_err(e)?;
        let inserted = sqlx::query(sql::INSERT_RUN)
            .bind(f.run_id.clone())
            .bind(f.spec.clone())
            .bind(f.spec_sha256.clone())
            .bind(f.started_at.clone())
            .bind(f.ended_at.clone())
            .bind(f.tool.clone())
            .bind(f.tool_version.clone())
            .bind(f.engine_kind.clone())
            .bind(f.engine_version.clone())
            .bind(f.variants.clone())
            .bind(f.model.clone())
            .bind(f.hardware.clone())
            .bind(f.host.clone())
            .bind(f.labels.clone())
            .bind(f.git_commit.clone())
            .bind(f.path.clone())
            .bind(f.report.clone())
            .bind(f.manifest.clone())
            .bind(utc_now())
            .execute(&mut *tx)
            .await
            .map_err(e)?;
        let mut cells_added = 0;
        for r in &run.records {
            if add_cell(&mut tx, &f.run_id, r).await.map_err(e)? {
                cells_added += 1;
            }
        }
        tx.commit().await.map_err(e)?;
        Ok(Added {
            run_id: f.run_id.clone(),
            new_run: inserted.rows_affected() > 0,
            cells_added,
        })
    }

    /// The rows of `statement`, its `$1…` bound to `binds` in order.
    pub async fn rows(&self, statement: &str, binds: &[String]) -> Result<Vec<AnyRow>> {
        let mut q = sqlx::query(statement);
        for b in binds {
            q = q.bind(b.clone());
        }
        q.fetch_all(&self.pool).await.map_err(|e| self.err(e))
    }

    /// Close the pool (waits for connections to finish).
    pub async fn close(self) {
        self.pool.close().await;
    }
}

type Tx<'a> = sqlx::Transaction<'a, sqlx::Any>;

/// Insert one record's cell and metrics; whether the cell was new.
async fn add_cell(tx: &mut Tx<'_>, run_id: &str, r: &Record) -> sqlx::Result<bool> {
    let json = serde_json::to_string(r).unwrap_or_default();
    let reasons = serde_json::to_string(&r.reasons).unwrap_or_default();
    // Not prepared once per connection: sqlx's `Any` types a NULL double as float4, so a
    // statement prepared with one would refuse the next cell's value on PostgreSQL.
    let inserted = sqlx::query(sql::INSERT_CELL)
        .persistent(false)
        .bind(run_id.to_string())
        .bind(r.cell.clone())
        .bind(r.variant.clone())
        .bind(r.phase.as_str().to_string())
        .bind(i64::try_from(r.context).unwrap_or(i64::MAX))
        .bind(i64::from(r.concurrency))
        .bind(r.status.as_str().to_string())
        .bind(reasons)
        .bind(r.total_tok_s)
        .bind(r.per_request_tok_s)
        .bind(r.ttft_ms.map(|s| s.p50))
        .bind(r.tbt_ms.map(|s| s.p50))
        .bind(json)
        .execute(&mut **tx)
        .await?;
    if inserted.rows_affected() == 0 {
        return Ok(false);
    }
    for (key, value, _) in headline(r) {
        let ci95 = r.ci95.as_ref().and_then(|c| c.get(key).copied());
        let repeats = r
            .per_repeat
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(|v| serde_json::to_string(v).ok());
        sqlx::query(sql::INSERT_METRIC)
            .persistent(false)
            .bind(run_id.to_string())
            .bind(r.cell.clone())
            .bind(key.to_string())
            .bind(value)
            .bind(ci95)
            .bind(repeats)
            .execute(&mut **tx)
            .await?;
    }
    Ok(true)
}

/// A lock or a race with another writer: worth trying again.
fn contended(e: &HistoryError) -> bool {
    let HistoryError::Query { message, .. } = e else {
        return false;
    };
    let m = message.to_ascii_lowercase();
    [
        "locked",
        "busy",
        "deadlock",
        "duplicate key",
        "unique constraint",
        "could not serialize",
        // Two processes creating the schema at once: PostgreSQL's `CREATE TABLE IF NOT
        // EXISTS` is not atomic against another's; the loser's retry finds it made.
        "already exists",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Run `f` again (up to 8 times, backing off) while it meets another writer.
async fn retry<T, F, Fut>(mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut wait = Duration::from_millis(20);
    for _ in 0..8 {
        match f().await {
            Err(e) if contended(&e) => {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            other => return other,
        }
    }
    f().await
}
