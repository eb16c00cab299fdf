//! The history's schema and statements, one text for SQLite and PostgreSQL: portable types
//! (TEXT, BIGINT, DOUBLE PRECISION), `$n` parameters (both engines read them), JSON kept as
//! text, and `ON CONFLICT … DO NOTHING` so that adding a run twice — or two processes adding
//! at once — keeps one copy. Migrations are numbered and applied in order; each statement is
//! safe to apply twice (`IF NOT EXISTS`), so two processes migrating together both succeed.

/// The schema's migrations, by version: the statements that take the previous version to it.
pub const MIGRATIONS: &[(i64, &[&str])] = &[(
    1,
    &[
        "CREATE TABLE IF NOT EXISTS runs (
            run_id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,
            spec_sha256 TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            tool TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            engine_kind TEXT NOT NULL,
            engine_version TEXT,
            variants TEXT NOT NULL,
            model TEXT NOT NULL,
            hardware TEXT NOT NULL,
            host TEXT NOT NULL,
            labels TEXT NOT NULL,
            git_commit TEXT,
            path TEXT NOT NULL,
            report TEXT,
            manifest TEXT NOT NULL,
            added_at TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS runs_by_spec ON runs (spec, started_at)",
        "CREATE TABLE IF NOT EXISTS cells (
            run_id TEXT NOT NULL,
            cell TEXT NOT NULL,
            variant TEXT,
            phase TEXT NOT NULL,
            context BIGINT NOT NULL,
            concurrency BIGINT NOT NULL,
            status TEXT NOT NULL,
            reasons TEXT NOT NULL,
            total_tok_s DOUBLE PRECISION,
            per_request_tok_s DOUBLE PRECISION,
            ttft_ms_p50 DOUBLE PRECISION,
            tbt_ms_p50 DOUBLE PRECISION,
            record TEXT NOT NULL,
            PRIMARY KEY (run_id, cell))",
        "CREATE TABLE IF NOT EXISTS metrics (
            run_id TEXT NOT NULL,
            cell TEXT NOT NULL,
            metric TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            ci95 DOUBLE PRECISION,
            repeats TEXT,
            PRIMARY KEY (run_id, cell, metric))",
    ],
)];

/// The version table (created before any migration).
pub const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS benchspec_schema (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)";

/// The newest version applied.
pub const VERSION: &str = "SELECT COALESCE(MAX(version), 0) AS version FROM benchspec_schema";

/// Record that a version was applied.
pub const SET_VERSION: &str = "INSERT INTO benchspec_schema (version, applied_at) VALUES ($1, $2)
    ON CONFLICT (version) DO NOTHING";

/// Add a run (nothing when its identity is already there).
pub const INSERT_RUN: &str = "INSERT INTO runs (run_id, spec, spec_sha256, started_at, ended_at,
    tool, tool_version, engine_kind, engine_version, variants, model, hardware, host, labels,
    git_commit, path, report, manifest, added_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
    ON CONFLICT (run_id) DO NOTHING";

/// Add a cell of a run (nothing when the run already has it).
pub const INSERT_CELL: &str = "INSERT INTO cells (run_id, cell, variant, phase, context,
    concurrency, status, reasons, total_tok_s, per_request_tok_s, ttft_ms_p50, tbt_ms_p50, record)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
    ON CONFLICT (run_id, cell) DO NOTHING";

/// Add one metric of a cell.
pub const INSERT_METRIC: &str = "INSERT INTO metrics (run_id, cell, metric, value, ci95, repeats)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (run_id, cell, metric) DO NOTHING";

/// The runs, oldest first, with their number of cells, valid and skipped ones, and their
/// manifest (which says whether the run was predicted).
pub const RUNS: &str = "SELECT r.run_id, r.spec, r.started_at, r.ended_at, r.tool,
    r.engine_kind, r.engine_version, r.model, r.hardware, r.labels, r.git_commit, r.path,
    r.report, r.manifest, (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id) AS cells,
    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id AND c.status = 'valid') AS valid,
    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id AND c.status = 'skipped')
    AS skipped
    FROM runs r ORDER BY r.started_at, r.run_id";

/// Every metric of every run, for trends (filtered by the caller).
pub const POINTS: &str = "SELECT r.run_id, r.spec, r.started_at, r.engine_version, r.labels,
    m.cell, m.metric, m.value, m.ci95, m.repeats
    FROM metrics m JOIN runs r ON r.run_id = m.run_id";
