//! Number formatting the way the seed page writes numbers, shared by the built-in templates
//! and offered to user templates as filters: `62K`, `13.1K`, `9,049.3`, `1,051 ms`, `3.8 ms`,
//! `7,809`, `8K`. A missing value is written `—`.

/// What a missing value is shown as.
pub const DASH: &str = "—";

/// `x` with `decimals` digits after the point and commas between thousands.
pub fn grouped(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return DASH.to_string();
    }
    let text = format!("{:.*}", decimals, x.abs());
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text.as_str(), None),
    };
    let mut out = String::with_capacity(text.len() + int.len() / 3 + 1);
    if x < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A token rate: from 10,000 up in thousands with one decimal (`62K`, `13.1K`), below it
/// with one decimal and commas (`9,049.3`, `260.3`).
pub fn tok_s(x: f64) -> String {
    if x.abs() >= 9_999.95 {
        let k = format!("{:.1}", x / 1000.0);
        let k = k.strip_suffix(".0").unwrap_or(&k);
        format!("{}K", grouped_text(k))
    } else {
        grouped(x, 1)
    }
}

/// Commas into the integer part of an already formatted number.
fn grouped_text(text: &str) -> String {
    match text.parse::<f64>() {
        Ok(v) => grouped(v, text.split_once('.').map_or(0, |(_, f)| f.len())),
        Err(_) => text.to_string(),
    }
}

/// Milliseconds: `1,051 ms` (0 decimals), `3.8 ms` (1 decimal).
pub fn ms(x: f64, decimals: usize) -> String {
    format!("{} ms", grouped(x, decimals))
}

/// Seconds: `30 s` for a whole number, else `2.5 s`; `decimals` forces a precision.
pub fn secs(x: f64, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) => format!("{} s", grouped(x, d)),
        None if x.fract() == 0.0 => format!("{} s", grouped(x, 0)),
        None => format!("{} s", grouped(x, 1)),
    }
}

/// A token count as a context label: `8K` for a multiple of 1024, else the number.
pub fn ctx(tokens: u64) -> String {
    if tokens >= 1024 && tokens.is_multiple_of(1024) {
        format!("{}K", tokens / 1024)
    } else {
        tokens.to_string()
    }
}

/// A signed change in percent: `+5.2%`, `-12.0%`.
pub fn pct(x: f64) -> String {
    if !x.is_finite() {
        return DASH.to_string();
    }
    let text = grouped(x, 1);
    let sign = if x > 0.0 && text != "0.0" { "+" } else { "" };
    format!("{sign}{text}%")
}

/// Dollars: cents below $100, four decimals below 10¢.
pub fn usd(u: f64) -> String {
    if u < 0.1 {
        format!("${u:.4}")
    } else {
        format!("${u:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_pages_numbers() {
        let cases: [(&str, String); 16] = [
            ("62K", tok_s(62_000.0)),
            ("62K", tok_s(62_049.9)),
            ("13.1K", tok_s(13_100.0)),
            ("56.8K", tok_s(56_812.0)),
            ("9,049.3", tok_s(9_049.3)),
            ("260.3", tok_s(260.3)),
            ("514.0", tok_s(514.0)),
            ("10K", tok_s(9_999.96)),
            ("1,051 ms", ms(1_051.2, 0)),
            ("71 ms", ms(70.6, 0)),
            ("3.8 ms", ms(3.8, 1)),
            ("16,966 ms", ms(16_966.0, 0)),
            ("7,809", grouped(7_809.0, 0)),
            ("393,466", grouped(393_466.0, 0)),
            ("30.0 s", secs(30.0, Some(1))),
            ("30 s", secs(30.0, None)),
        ];
        for (want, got) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn labels_and_signs() {
        assert_eq!(ctx(8192), "8K");
        assert_eq!(ctx(125_952), "123K");
        assert_eq!(ctx(131_071), "131071");
        assert_eq!(ctx(256), "256");
        assert_eq!(pct(5.24), "+5.2%");
        assert_eq!(pct(-12.0), "-12.0%");
        assert_eq!(pct(0.0), "0.0%");
        assert_eq!(pct(0.03), "0.0%");
        assert_eq!(pct(-0.03), "0.0%");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(grouped(f64::NAN, 1), DASH);
        assert_eq!(tok_s(1_234_567.0), "1,234.6K");
    }
}
