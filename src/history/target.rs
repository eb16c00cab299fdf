//! Where the history lives ([`Target`]): `--db`, else `BENCHSPEC_HISTORY`, else the default
//! file; an SQLite file or a PostgreSQL URL, shown in messages with its password hidden.

use std::path::PathBuf;

/// Where the history lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://user:password@host:port/db`).
    Postgres(String),
}

impl Target {
    /// `--db` if given, else `BENCHSPEC_HISTORY`, else `./benchspec-history.sqlite`.
    pub fn resolve(db: Option<&str>) -> Target {
        let env = std::env::var(super::DB_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let text = db.map(str::to_string).or(env);
        Target::parse(text.as_deref().unwrap_or(super::DEFAULT_DB))
    }

    /// A `postgres://` or `postgresql://` URL, else an SQLite file path.
    pub fn parse(text: &str) -> Target {
        let t = text.trim();
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            Target::Postgres(t.to_string())
        } else {
            Target::Sqlite(PathBuf::from(t.strip_prefix("sqlite://").unwrap_or(t)))
        }
    }

    /// The target for messages: a URL's password replaced by `***`.
    pub fn shown(&self) -> String {
        match self {
            Target::Sqlite(p) => p.display().to_string(),
            Target::Postgres(url) => hide_password(url),
        }
    }

    /// The driver's URL; an SQLite file is opened read-write, and created only when `create`.
    pub(super) fn url(&self, create: bool) -> String {
        match self {
            Target::Postgres(url) => url.clone(),
            Target::Sqlite(p) => {
                let path = p.display().to_string();
                let escaped = path
                    .replace('%', "%25")
                    .replace('?', "%3F")
                    .replace('#', "%23");
                let mode = if create { "rwc" } else { "rw" };
                format!("sqlite://{escaped}?mode={mode}")
            }
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let cases = [
            ("h.sqlite", Target::Sqlite("h.sqlite".into())),
            ("sqlite://a/b.db", Target::Sqlite("a/b.db".into())),
            (
                "postgres://u:p@127.0.0.1:5/d",
                Target::Postgres("postgres://u:p@127.0.0.1:5/d".into()),
            ),
            (
                "postgresql://u@h/d",
                Target::Postgres("postgresql://u@h/d".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Target::parse(text), want, "{text}");
        }
        let pg = Target::parse("postgres://bench:s3cret@127.0.0.1:5432/hist");
        assert_eq!(pg.shown(), "postgres://bench:***@127.0.0.1:5432/hist");
        assert!(!pg.shown().contains("s3cret"));
        assert_eq!(
            Target::parse("postgres://u@h/d").shown(),
            "postgres://u@h/d"
        );
        assert_eq!(
            Target::parse("a b/h?.sqlite").url(true),
            "sqlite://a b/h%3F.sqlite?mode=rwc"
        );
        assert_eq!(
            Target::parse("h.sqlite").url(false),
            "sqlite://h.sqlite?mode=rw"
        );
    }
}
