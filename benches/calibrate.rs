//! The simulator's calibration table: every cell of the seed page, the seed's value, the
//! `h200-gemma-4-e2b` profile's value and their ratio. Run: `cargo bench --bench calibrate`.

use benchspec::sim::{calibrate, profile};

fn main() {
    let Some(p) = profile::profile("h200-gemma-4-e2b") else {
        return;
    };
    let rows = calibrate::seed_table(&p, 30.0, 4096);
    println!("| cell | seed tok/s | simulated tok/s | ratio |\n|---|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.3} |",
            r.cell,
            r.seed,
            r.sim,
            r.ratio()
        );
    }
    let worst = rows
        .iter()
        .map(|r| (r.ratio() - 1.0).abs())
        .fold(0.0, f64::max);
    println!("\nworst |ratio - 1| = {worst:.3} over {} cells", rows.len());
    let ttft = calibrate::ttft_table(&p, 30.0, 4096);
    println!(
        "\n| cell | seed TTFT p50 ms | simulated (counted as the seed counts it) | ratio |\n|---|---:|---:|---:|"
    );
    for r in &ttft {
        println!(
            "| {} | {:.0} | {:.0} | {:.3} |",
            r.cell,
            r.seed,
            r.sim,
            r.ratio()
        );
    }
    let within = ttft
        .iter()
        .filter(|r| (r.ratio() - 1.0).abs() <= 0.25)
        .count();
    println!(
        "\nTTFT within 25% of the seed: {within} of {} cells",
        ttft.len()
    );
}
