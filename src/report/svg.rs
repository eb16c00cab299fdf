//! Inline SVG charts for the HTML report: prefill tok/s by context as bars, and a decode rate
//! against concurrency with one line per context. Text and axes draw in `currentColor`, so a
//! chart follows the page's light or dark scheme; series colours read on both.

use super::context::Context;
use super::format::tok_s;
use crate::results::Record;
use std::fmt::Write;

pub(super) const W: f64 = 640.0;
pub(super) const H: f64 = 300.0;
pub(super) const LEFT: f64 = 64.0;
pub(super) const RIGHT: f64 = 120.0;
pub(super) const TOP: f64 = 16.0;
pub(super) const BOTTOM: f64 = 40.0;
/// Series colours that keep their contrast on white and on near-black.
pub(super) const PALETTE: [&str; 8] = [
    "#3b82f6", "#ef4444", "#10b981", "#f59e0b", "#a855f7", "#06b6d4", "#ec4899", "#84cc16",
];

/// `s` as HTML or SVG text or attribute value: `&`, `<`, `>` and `"` escaped. The one
/// escaper of the crate (the report's charts and templates, the history's pages and charts).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A rounded-up axis maximum and its tick step.
pub(super) fn scale(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

pub(super) fn open(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" class=\"chart\" font-size=\"12\" fill=\"currentColor\"><title>{}</title>",
        esc(title)
    )
}

/// A tick label: `500`, `2.5K`, `15K`.
pub(super) fn axis_label(v: f64) -> String {
    if v >= 1000.0 {
        let k = format!("{:.1}", v / 1000.0);
        format!("{}K", k.trim_end_matches(".0"))
    } else {
        format!("{v}")
    }
}

/// The y axis with grid lines and labels.
pub(super) fn y_axis(s: &mut String, max: f64, step: f64, label: &str) {
    let plot_h = H - TOP - BOTTOM;
    let mut v = 0.0;
    while v <= max + step / 2.0 {
        let y = TOP + plot_h * (1.0 - v / max);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            axis_label(v)
        );
        v += step;
    }
    let _ = write!(
        s,
        "<text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        TOP + plot_h / 2.0,
        esc(label)
    );
}

/// Prefill tok/s by context, one bar per measured context.
pub fn prefill(cx: &Context) -> String {
    let bars: Vec<(String, f64)> = cx
        .prefill
        .iter()
        .filter_map(|c| Some((c.context_label.clone(), c.record.as_ref()?.prefill_tok_s?)))
        .collect();
    let mut s = open("Prefill tok/s by context length");
    let (max, step) = scale(bars.iter().map(|b| b.1).fold(0.0, f64::max));
    y_axis(&mut s, max, step, "prompt tok/s");
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    // The bars share the axis evenly, each at most 80 wide in the middle of its slot.
    let slot = plot_w / bars.len().max(1) as f64;
    let bar = (slot * 0.7).min(80.0);
    for (i, (label, v)) in bars.iter().enumerate() {
        let h = plot_h * v / max;
        let x = LEFT + slot * (i as f64 + 0.5) - bar / 2.0;
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{} context: {} tok/s</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP + plot_h - h,
            bar,
            PALETTE[0],
            esc(label),
            tok_s(*v),
            x + bar / 2.0,
            TOP + plot_h - h - 4.0,
            tok_s(*v),
            x + bar / 2.0,
            H - BOTTOM + 16.0,
            esc(label)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">context length</text></svg>",
        LEFT + plot_w / 2.0,
        H - 6.0
    );
    s
}

/// One line of a chart: its name and a value (or none) per column.
type Series = (String, Vec<Option<f64>>);

/// A decode rate (`pick` of each record) against concurrency, one line per context.
pub fn decode(cx: &Context, pick: fn(&Record) -> Option<f64>, label: &str) -> String {
    let series = decode_series(cx, pick);
    lines(
        &format!("Decode {label} against simultaneous requests, one line per context"),
        &cx.decode.concurrency,
        &series,
        label,
        " context",
    )
}

/// Total tok/s against concurrency at each context of a run of engine variants, one line
/// per variant, one chart per context.
pub fn variants(cx: &Context) -> Vec<String> {
    cx.side_by_side
        .iter()
        .map(|t| {
            let series: Vec<Series> = t
                .rows
                .iter()
                .map(|r| {
                    let points = r
                        .cells
                        .iter()
                        .map(|c| {
                            let c = c.as_ref().filter(|c| c.status.measured())?;
                            c.record.as_ref()?.total_tok_s
                        })
                        .collect();
                    (r.variant.clone(), points)
                })
                .collect();
            lines(
                &format!(
                    "Total tok/s against simultaneous requests at {} context, one line per variant",
                    t.context_label
                ),
                &t.concurrency,
                &series,
                "total tok/s",
                "",
            )
        })
        .collect()
}

/// Lines of values against the columns `cols`, one per series, named `<name><suffix>`.
fn lines(title: &str, cols: &[u32], series: &[Series], label: &str, suffix: &str) -> String {
    let max = series
        .iter()
        .flat_map(|(_, p)| p.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let (max, step) = scale(max);
    let mut s = open(title);
    y_axis(&mut s, max, step, label);
    let plot_w = W - LEFT - RIGHT;
    let x_of = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / cols.len().max(1) as f64;
    for (i, c) in cols.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>",
            x_of(i),
            H - BOTTOM + 16.0
        );
    }
    for (k, line) in series.iter().enumerate() {
        polyline(&mut s, k, line, max, &x_of, (label, suffix));
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">simultaneous requests</text></svg>",
        LEFT + plot_w / 2.0,
        H - 6.0
    );
    s
}

/// The measured value of every decode cell, a series per context row.
fn decode_series(cx: &Context, pick: fn(&Record) -> Option<f64>) -> Vec<Series> {
    cx.decode
        .rows
        .iter()
        .map(|row| {
            let points = row
                .cells
                .iter()
                .map(|c| {
                    let c = c.as_ref().filter(|c| c.status.measured())?;
                    c.record.as_ref().and_then(pick)
                })
                .collect();
            (row.context_label.clone(), points)
        })
        .collect()
}

/// The `k`th series as a line with a dot per value and its legend entry.
fn polyline(
    s: &mut String,
    k: usize,
    (name, points): &Series,
    max: f64,
    x_of: &dyn Fn(usize) -> f64,
    (label, suffix): (&str, &str),
) {
    let plot_h = H - TOP - BOTTOM;
    let color = PALETTE[k % PALETTE.len()];
    let coords: Vec<(f64, f64, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (x_of(i), TOP + plot_h * (1.0 - v / max), v)))
        .collect();
    let path: Vec<String> = coords
        .iter()
        .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
        path.join(" ")
    );
    for (x, y, v) in &coords {
        let _ = write!(
            s,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{color}\"><title>{}{}: {} {}</title></circle>",
            esc(name),
            esc(suffix),
            tok_s(*v),
            esc(label)
        );
    }
    legend(s, k, color, "", &format!("{name}{suffix}"));
}

/// The `k`th legend entry: a stroke of `color` (`dash` its SVG attributes) and `name`.
pub(super) fn legend(s: &mut String, k: usize, color: &str, dash: &str, name: &str) {
    legend_at(s, TOP + 14.0 + 18.0 * k as f64, color, dash, name);
}

/// The baselines of `n` legend rows in the right margin, from the top, skipping the rows
/// that would touch a label already at one of the baselines `taken`.
pub(super) fn legend_rows(n: usize, taken: &[f64]) -> Vec<f64> {
    let mut rows = Vec::with_capacity(n);
    let mut y = TOP + 14.0;
    while rows.len() < n {
        if taken.iter().all(|t| (t - y).abs() >= 16.0) {
            rows.push(y);
        }
        y += 18.0;
    }
    rows
}

/// The width a legend's text has before the chart's edge.
const LEGEND_TEXT: f64 = RIGHT - 38.0 - 2.0;

/// A legend entry whose text sits on the baseline `ly`. A name wider than the margin (at
/// about 6.5 px a letter of the 12 px font) is squeezed to fit rather than cut off.
pub(super) fn legend_at(s: &mut String, ly: f64, color: &str, dash: &str, name: &str) {
    let fit = if name.chars().count() as f64 * 6.5 > LEGEND_TEXT {
        format!(" textLength=\"{LEGEND_TEXT:.0}\" lengthAdjust=\"spacingAndGlyphs\"")
    } else {
        String::new()
    };
    let _ = write!(
        s,
        "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"3\"{dash}/><text x=\"{:.1}\" y=\"{ly:.1}\"{fit}>{}</text>",
        W - RIGHT + 12.0,
        W - RIGHT + 32.0,
        ly - 4.0,
        ly - 4.0,
        W - RIGHT + 38.0,
        esc(name)
    );
}

#[cfg(test)]
mod tests {
    use super::{esc, scale};

    #[test]
    fn axis_maxima_round_up() {
        for (max, want) in [
            (13_100.0, (15_000.0, 5_000.0)),
            (62_000.0, (80_000.0, 20_000.0)),
            (260.3, (300.0, 100.0)),
            (0.0, (1.0, 0.25)),
        ] {
            assert_eq!(scale(max), want, "{max}");
        }
    }

    /// One escaper for text and attributes alike: a quote in a cell id or a run's label
    /// cannot close an attribute (`href="…"`, `<title>`), in the report or the history.
    #[test]
    fn esc_makes_text_and_attributes_safe() {
        let cases = [
            ("plain", "plain"),
            ("a & b", "a &amp; b"),
            ("<script>", "&lt;script&gt;"),
            ("say \"hi\"", "say &quot;hi&quot;"),
            ("&amp;", "&amp;amp;"),
        ];
        for (text, want) in cases {
            assert_eq!(esc(text), want, "{text}");
        }
    }
}
