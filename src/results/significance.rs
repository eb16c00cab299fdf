//! Statistics of repeated measurements: the mean with a 95% confidence interval (Student t),
//! and Welch's t-test of two sets of repeats — whether a difference between two runs is
//! more than their noise. Student's t distribution comes from the regularized incomplete
//! beta function (continued fraction), so any degrees of freedom work, fractional included.

/// ln Γ(x), Lanczos' approximation (|error| < 2e-10 for x > 0).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 6] = [
        76.180_091_729_471_46,
        -86.505_320_329_416_77,
        24.014_098_240_830_91,
        -1.231_739_572_450_155,
        0.120_865_097_386_617_9e-2,
        -0.539_523_938_495_3e-5,
    ];
    let tmp = x + 5.5 - (x + 0.5) * (x + 5.5).ln();
    let mut ser = 1.000_000_000_190_015;
    for (j, c) in C.iter().enumerate() {
        ser += c / (x + 1.0 + j as f64);
    }
    -tmp + (2.506_628_274_631_000_5 * ser / x).ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = if d.abs() < TINY { TINY } else { d };
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            d = if d.abs() < TINY { TINY } else { d };
            c = 1.0 + aa / c;
            c = if c.abs() < TINY { TINY } else { c };
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom.
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    beta_inc(df / 2.0, 0.5, df / (df + t * t))
}

/// The t with P(|T| ≥ t) = `alpha` (0.05 gives the 97.5% quantile), by bisection.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1e4);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if two_sided_p(mid, df) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Mean and sample variance.
fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// The mean of `v` and the half-width of its 95% confidence interval (`None` for one value).
pub fn mean_ci95(v: &[f64]) -> Option<(f64, Option<f64>)> {
    if v.is_empty() {
        return None;
    }
    let (mean, var) = moments(v);
    let n = v.len() as f64;
    let half = (v.len() > 1).then(|| t_critical(0.05, n - 1.0) * (var / n).sqrt());
    Some((mean, half))
}

/// Welch's t-test of `a` against `b`: the two-sided p-value that their means are equal;
/// `None` with fewer than two values on a side. Two sets without any spread are different
/// when their means are (p = 0) and equal otherwise (p = 1).
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (moments(a), moments(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    if sa + sb == 0.0 {
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (ma - mb) / (sa + sb).sqrt();
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    Some(two_sided_p(t, df))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_quantiles_match_the_tables() {
        // t(0.975) by degrees of freedom, from the standard table.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (11.0, 2.201),
            (30.0, 2.042),
            (1e6, 1.960),
        ] {
            let got = t_critical(0.05, df);
            assert!((got - t).abs() < 0.001, "df {df}: {got} vs {t}");
        }
        assert!((two_sided_p(2.0, 10.0) - 0.0734).abs() < 1e-4);
    }

    #[test]
    fn confidence_intervals_and_welch() {
        let v = [10.0, 12.0, 11.0];
        let (mean, half) = mean_ci95(&v).unwrap_or_default();
        assert!((mean - 11.0).abs() < 1e-12);
        // s = 1, n = 3: 4.303 / √3.
        assert!((half.unwrap_or_default() - 4.303 / 3f64.sqrt()).abs() < 1e-3);
        assert_eq!(mean_ci95(&[5.0]), Some((5.0, None)));
        // Welch, the two samples of the Wikipedia article: t = −2.46, df = 24.99, p = 0.0214.
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let p = welch_p(&a, &b).unwrap_or_default();
        assert!((p - 0.02138).abs() < 1e-4, "{p}");
        assert_eq!(welch_p(&[1.0], &b), None);
        assert_eq!(welch_p(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
    }
}
