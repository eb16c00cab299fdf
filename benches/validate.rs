//! How fast `validate` is per spec: parse, schema and meaning checks of the shipped specs,
//! repeated, reporting the median over batches. Run: `cargo bench --bench validate`.

use benchspec::spec::{self, Stage};
use std::time::Instant;

fn main() {
    let set = |_: &str| Some("x".to_string());
    let specs: Vec<(String, String)> = [
        "specs/h200-nvl-gemma-4-e2b.yaml",
        "specs/h200-nvl-gemma-4-e2b.toml",
        "examples/minimal.yaml",
    ]
    .iter()
    .map(|p| {
        (
            p.to_string(),
            std::fs::read_to_string(p).unwrap_or_default(),
        )
    })
    .collect();
    for (path, text) in &specs {
        // The first call compiles the schema validator once per process.
        let first = Instant::now();
        let ok = spec::parse(path, text, Stage::Validate, &set).is_ok();
        let first = first.elapsed();
        let mut batches = Vec::new();
        for _ in 0..15 {
            let start = Instant::now();
            for _ in 0..100 {
                std::hint::black_box(spec::parse(path, text, Stage::Validate, &set).is_ok());
            }
            batches.push(start.elapsed().as_secs_f64() / 100.0);
        }
        batches.sort_by(f64::total_cmp);
        let median = batches[batches.len() / 2];
        println!(
            "{path}: valid={ok} first={:.2} ms median={:.1} us/spec ({:.0} specs/s)",
            first.as_secs_f64() * 1e3,
            median * 1e6,
            1.0 / median
        );
    }
}
