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
/// x ≥ 0, over the [`independent_columns`] (the others stay 0): a negative coefficient is
/// fixed at 0 and the others refitted.
pub fn nnls_relative(rows: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let k = rows.first().map_or(0, Vec::len);
    let mut free = independent_columns(rows);
    loop {
        let idx: Vec<usize> = (0..k).filter(|i| free[*i]).collect();
        let mut x = vec![0.0; k];
        if idx.is_empty() {
            return x;
        }
        // Normal equations of the weighted problem.
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
        let Some(sol) = solve(a) else {
            // Singular: drop the last free coefficient.
            if let Some(last) = idx.last() {
                free[*last] = false;
            }
            continue;
        };
        for (p, &i) in idx.iter().enumerate() {
            x[i] = sol[p];
        }
        match idx
            .iter()
            .copied()
            .filter(|i| x[*i] < 0.0)
            .min_by(|a, b| x[*a].total_cmp(&x[*b]))
        {
            Some(worst) => free[worst] = false,
            None => return x,
        }
    }
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
