//! Least squares for the twin's fit: relative error, coefficients ≥ 0, and only the columns
//! the rows can tell apart ([`independent_columns`]); a column no row separates from the others
//! is left at 0 and reported by [`super::identify`] as not identified.

/// Below this, relative to its length, a vector is taken to lie in a span (columns scaled to
/// their largest value first).
pub const TOL: f64 = 1e-4;

/// The columns of `rows` each of which adds a direction the ones before it do not span
/// (columns scaled to their largest |value|, Gram–Schmidt in order).
pub fn independent_columns(rows: &[Vec<f64>]) -> Vec<bool> {
    let k = rows.first().map_or(0, Vec::len);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    (0..k)
        .map(|j| {
            let col: Vec<f64> = rows.iter().map(|r| r[j]).collect();
            let scale = col.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
            if scale == 0.0 {
                return false;
            }
            let col: Vec<f64> = col.iter().map(|v| v / scale).collect();
            extend_basis(&mut basis, &col)
        })
        .collect()
}

/// Add `v`'s component outside `basis` to it (normalised) when it is not negligible: whether
/// it was.
pub fn extend_basis(basis: &mut Vec<Vec<f64>>, v: &[f64]) -> bool {
    let r = outside(basis, v);
    let (len, norm) = (length(v), length(&r));
    if len > 0.0 && norm > TOL * len {
        basis.push(r.iter().map(|x| x / norm).collect());
        true
    } else {
        false
    }
}

/// `v` less its projection on the orthonormal `basis`.
pub fn outside(basis: &[Vec<f64>], v: &[f64]) -> Vec<f64> {
    let mut r = v.to_vec();
    for b in basis {
        let d: f64 = b.iter().zip(&r).map(|(x, y)| x * y).sum();
        for (x, y) in r.iter_mut().zip(b) {
            *x -= d * y;
        }
    }
    r
}

/// Euclidean length.
pub fn length(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Solve the least squares `rows · x ≈ y` relative to y (each row divided by its y), with
/// x ≥ 0, over the [`independent_columns`] (the others stay 0). Exact: every subset of those
/// columns is solved unconstrained and the best solution with no negative coefficient kept
/// (at most 2⁵ small solves). Fixing the most negative coefficient at 0 and refitting the rest,
/// as it once did, can stop far from the optimum: on noisy cells it dropped the intercept
/// first and ended with every cost but one at 0.
pub fn nnls_relative(rows: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let k = rows.first().map_or(0, Vec::len);
    let free: Vec<usize> = independent_columns(rows)
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.then_some(i))
        .collect();
    let mut best = (relative_sse(rows, y, &vec![0.0; k]), vec![0.0; k]);
    // Fuller subsets first, so that of equally good solutions the one using more columns
    // is kept.
    for mask in (1u32..1 << free.len()).rev() {
        let idx: Vec<usize> = (0..free.len())
            .filter(|b| mask & (1 << b) != 0)
            .map(|b| free[b])
            .collect();
        let Some(x) = solve_subset(rows, y, &idx, k) else {
            continue;
        };
        let sse = relative_sse(rows, y, &x);
        if x.iter().all(|v| *v >= 0.0) && sse < best.0 * (1.0 - 1e-12) {
            best = (sse, x);
        }
    }
    best.1
}

/// The unconstrained relative least squares over the columns `idx` (the others 0): `None`
/// when they are singular.
fn solve_subset(rows: &[Vec<f64>], y: &[f64], idx: &[usize], k: usize) -> Option<Vec<f64>> {
    let m = idx.len();
    let mut a = vec![vec![0.0; m + 1]; m];
    for (row, yi) in rows.iter().zip(y) {
        let w = 1.0 / (yi * yi);
        for (p, &i) in idx.iter().enumerate() {
            for (q, &j) in idx.iter().enumerate() {
                a[p][q] += w * row[i] * row[j];
            }
            a[p][m] += w * row[i] * yi;
        }
    }
    let sol = solve(a)?;
    let mut x = vec![0.0; k];
    for (p, &i) in idx.iter().enumerate() {
        x[i] = sol[p];
    }
    Some(x)
}

/// Σ ((row · x − y) / y)².
fn relative_sse(rows: &[Vec<f64>], y: &[f64], x: &[f64]) -> f64 {
    rows.iter()
        .zip(y)
        .map(|(row, yi)| {
            let fit: f64 = row.iter().zip(x).map(|(a, b)| a * b).sum();
            ((fit - yi) / yi).powi(2)
        })
        .sum()
}

/// Gaussian elimination with partial pivoting of an augmented matrix.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let m = a.len();
    for c in 0..m {
        let p = (c..m).max_by(|i, j| a[*i][c].abs().total_cmp(&a[*j][c].abs()))?;
        if a[p][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    let x: Vec<f64> = (0..m).map(|i| a[i][m] / a[i][i]).collect();
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_exact_coefficients_and_drops_negative_ones() {
        // y = 2 + 3x exactly: recovered.
        let rows: Vec<Vec<f64>> = (1..6).map(|x| vec![1.0, f64::from(x)]).collect();
        let y: Vec<f64> = (1..6).map(|x| 2.0 + 3.0 * f64::from(x)).collect();
        let x = nnls_relative(&rows, &y);
        assert!(
            (x[0] - 2.0).abs() < 1e-9 && (x[1] - 3.0).abs() < 1e-9,
            "{x:?}"
        );
        // y = 10 − 0.5x wants a negative slope: held at 0, the intercept refitted.
        let y: Vec<f64> = (1..6).map(|x| 10.0 - 0.5 * f64::from(x)).collect();
        let x = nnls_relative(&rows, &y);
        assert_eq!(x[1], 0.0);
        assert!(x[0] > 8.0 && x[0] < 10.0, "{x:?}");
        // A column of zeros: singular, dropped.
        let rows: Vec<Vec<f64>> = (1..4).map(|x| vec![f64::from(x), 0.0]).collect();
        let x = nnls_relative(&rows, &[1.0, 2.0, 3.0]);
        assert!((x[0] - 1.0).abs() < 1e-9 && x[1] == 0.0, "{x:?}");
    }

    #[test]
    fn the_best_non_negative_solution_is_found_not_a_local_one() {
        // Real vLLM decode cells (CPU build, a machine shared with compilers): per-request
        // tok/s at (N, context), 64 output tokens, in the twin's step columns.
        let cells = [
            (1.0, 256.0, 366.4),
            (2.0, 256.0, 414.7),
            (4.0, 256.0, 251.2),
            (8.0, 256.0, 265.2),
            (2.0, 512.0, 353.3),
            (4.0, 512.0, 168.4),
            (8.0, 512.0, 85.2),
            (1.0, 1024.0, 127.4),
            (2.0, 1024.0, 325.1),
            (4.0, 1024.0, 269.2),
            (8.0, 1024.0, 85.9),
            (1.0, 2048.0, 185.2),
            (2.0, 2048.0, 127.1),
            (4.0, 2048.0, 71.3),
            (8.0, 2048.0, 143.5),
        ];
        let rows: Vec<Vec<f64>> = cells
            .iter()
            .map(|(n, c, _)| vec![1.0, *n, n * (c + 32.0)])
            .collect();
        let y: Vec<f64> = cells.iter().map(|(_, _, t)| 1.0 / t).collect();
        let x = nnls_relative(&rows, &y);
        assert!(x.iter().all(|v| *v >= 0.0), "{x:?}");
        // No worse than any one column alone, or any two (each the best of its kind).
        let sse = relative_sse(&rows, &y, &x);
        for idx in [
            vec![0],
            vec![1],
            vec![2],
            vec![0, 1],
            vec![0, 2],
            vec![1, 2],
        ] {
            if let Some(sub) = solve_subset(&rows, &y, &idx, 3)
                && sub.iter().all(|v| *v >= 0.0)
            {
                assert!(
                    sse <= relative_sse(&rows, &y, &sub) + 1e-12,
                    "{x:?} vs {sub:?}"
                );
            }
        }
        // The fixed cost of a step is what most of these cells spend.
        assert!(x[0] > 1e-3, "{x:?}");
    }

    #[test]
    fn columns_the_rows_cannot_tell_apart_are_not_independent() {
        // One context: N and N × C are proportional, the third column adds nothing.
        let rows = vec![vec![1.0, 1.0, 272.0], vec![1.0, 4.0, 1088.0]];
        assert_eq!(independent_columns(&rows), [true, true, false]);
        // One row: only the first.
        assert_eq!(
            independent_columns(&[vec![1.0, 8.0, 8.0 * 8192.0]]),
            [true, false, false]
        );
        // Two contexts and two concurrencies: all three.
        let rows: Vec<Vec<f64>> = [(1.0, 256.0), (4.0, 256.0), (1.0, 1024.0), (4.0, 1024.0)]
            .iter()
            .map(|(n, c)| vec![1.0, *n, n * c])
            .collect();
        assert_eq!(independent_columns(&rows), [true, true, true]);
    }
}
