//! How long the history takes: adding the seed run (46 measured cells of the H200 page, from
//! tests/fixtures/seed-run) to a new database, and reading and rendering the trend of 1,000
//! runs of it (each a copy with its own run id, a day apart, values with 2% noise). SQLite
//! always; PostgreSQL too when `BENCHSPEC_TEST_POSTGRES` names a server (`eval "$(scripts/postgres
//! start)"`), each measurement in a database of its own. Medians over repeats.
//! Run: `cargo bench --bench history`.

use benchspec::history::render::{self, TrendFormat};
use benchspec::history::{Store, Target, Trend, TrendQuery, trend};
use benchspec::report::exporter;
use benchspec::results::rfc3339;
use benchspec::rng::Rng;
use benchspec::rundir::{Run, RunDir};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Copy `i` of the seed run: its own id, `i` days later, every rate and latency × (1 ± 2%).
fn copy(seed: &Run, i: u64, rng: &mut Rng) -> Run {
    let mut r = Run {
        path: seed.path.clone(),
        manifest: seed.manifest.clone(),
        spec: seed.spec.clone(),
        plan: seed.plan.clone(),
        records: seed.records.clone(),
    };
    r.manifest.run_id = Some(format!("bench-{i:06}"));
    r.manifest.started_at = rfc3339(1_780_000_000 + i * 86_400);
    for rec in &mut r.records {
        let f = 1.0 + 0.02 * rng.normal();
        rec.total_tok_s = rec.total_tok_s.map(|x| x * f);
        rec.per_request_tok_s = rec.per_request_tok_s.map(|x| x * f);
        rec.prefill_tok_s = rec.prefill_tok_s.map(|x| x * f);
        if let Some(t) = &mut rec.ttft_ms {
            t.p50 /= f;
        }
        if let Some(t) = &mut rec.tbt_ms {
            t.p50 /= f;
        }
    }
    r
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

async fn fresh(base: Option<&str>, n: usize) -> Res<Target> {
    match base {
        None => {
            let p =
                std::env::temp_dir().join(format!("bs-bench-{}-{n}.sqlite", std::process::id()));
            let _ = std::fs::remove_file(&p);
            Ok(Target::Sqlite(p))
        }
        Some(url) => {
            use sqlx::Connection;
            let name = format!("bs_bench_{}_{n}", std::process::id());
            let mut c = sqlx::PgConnection::connect(url).await?;
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
                .execute(&mut c)
                .await?;
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut c)
                .await?;
            let root = url.rsplit_once('/').map_or(url, |(b, _)| b);
            Ok(Target::Postgres(format!("{root}/{name}")))
        }
    }
}

async fn measure(label: &str, base: Option<&str>, seed: &Run) -> Res<()> {
    let measured = seed
        .records
        .iter()
        .filter(|r| r.total_tok_s.is_some() || r.prefill_tok_s.is_some())
        .count();
    let mut adds = Vec::new();
    for n in 0..7 {
        let store = Store::open(fresh(base, n).await?).await?;
        let t = Instant::now();
        store.add(seed).await?;
        adds.push(t.elapsed());
        store.close().await;
    }
    let store = Store::open(fresh(base, 100).await?).await?;
    let mut rng = Rng::new(7);
    let t = Instant::now();
    for i in 0..1000 {
        store.add(&copy(seed, i, &mut rng)).await?;
    }
    let fill = t.elapsed();
    let mut reads = Vec::new();
    let mut renders = Vec::new();
    let mut series = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let got = trend::trend(&store, &TrendQuery::default()).await?;
        reads.push(t.elapsed());
        let t = Instant::now();
        let md = render::markdown(&got.series);
        let html = render::html(&got.series, "bench", &|_| None);
        let json = exporter::<Trend>(TrendFormat::Json).render(&got)?;
        renders.push(t.elapsed());
        series = got.series;
        assert!(md.len() + html.len() + json.len() > 0);
    }
    let points: usize = series.iter().map(|s| s.points.len()).sum();
    println!(
        "{label:10} add one {measured}-measured-cell run: median {:>7.1} ms (7 fresh databases) | 1,000 runs added in {:.1} s | trend of 1,000 runs ({} series, {points} points): read + judge {:>6.0} ms, render md+html+json {:>6.0} ms (medians of 3)",
        median(adds).as_secs_f64() * 1e3,
        fill.as_secs_f64(),
        series.len(),
        median(reads).as_secs_f64() * 1e3,
        median(renders).as_secs_f64() * 1e3,
    );
    store.close().await;
    Ok(())
}

fn main() -> Res<()> {
    let seed =
        RunDir::open(std::path::Path::new("tests/fixtures/seed-run")).and_then(|d| d.load())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        measure("sqlite", None, &seed).await?;
        if let Ok(url) = std::env::var("BENCHSPEC_TEST_POSTGRES") {
            measure("postgres", Some(&url), &seed).await?;
        }
        Ok(())
    })
}
