//! One trend series as a small inline SVG line chart: the 95% band where points have one,
//! regressions red, improvements green, each point's run in its tooltip (and linked, when a
//! link is given); text in `currentColor`, so it follows a light or dark page.

use super::page::{short, value};
use super::trend::{Flag, Series};
use crate::report::svg::esc;
use std::fmt::Write;

const W: f64 = 360.0;
const H: f64 = 170.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// Where values and points go.
struct Frame {
    lo: f64,
    hi: f64,
    n: f64,
}

impl Frame {
    fn of(s: &Series) -> Frame {
        let lo = s
            .points
            .iter()
            .map(|p| p.value - p.ci95.unwrap_or(0.0))
            .fold(f64::INFINITY, f64::min);
        let hi = s
            .points
            .iter()
            .map(|p| p.value + p.ci95.unwrap_or(0.0))
            .fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if hi > lo {
            (lo - (hi - lo) * 0.1, hi + (hi - lo) * 0.1)
        } else {
            (lo * 0.9, hi * 1.1 + 1e-9)
        };
        Frame {
            lo,
            hi,
            n: s.points.len().max(2) as f64 - 1.0,
        }
    }

    fn x(&self, i: usize) -> f64 {
        LEFT + (W - LEFT - RIGHT) * i as f64 / self.n
    }

    fn y(&self, v: f64) -> f64 {
        TOP + (H - TOP - BOTTOM) * (1.0 - (v - self.lo) / (self.hi - self.lo))
    }
}

/// The value labels, the base line and the first and last dates.
fn axes(s: &Series, f: &Frame, out: &mut String) {
    for v in [f.lo, f.hi] {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 4.0,
            f.y(v) + 4.0,
            esc(&value(&s.metric, v))
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"currentColor\" stroke-opacity=\".3\"/>",
        H - BOTTOM,
        W - RIGHT
    );
    if let (Some(first), Some(last)) = (s.points.first(), s.points.last()) {
        let date = |p: &super::trend::Point| esc(p.started_at.get(..10).unwrap_or_default());
        let _ = write!(
            out,
            "<text x=\"{LEFT}\" y=\"{0}\">{1}</text><text x=\"{2}\" y=\"{0}\" text-anchor=\"end\">{3}</text>",
            H - 8.0,
            date(first),
            W - RIGHT,
            date(last)
        );
    }
}

/// The 95% band through the points that have one (at least two).
fn band(s: &Series, f: &Frame, out: &mut String) {
    let band: Vec<(usize, f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.value, p.ci95?)))
        .collect();
    if band.len() < 2 {
        return;
    }
    let upper = band
        .iter()
        .map(|(i, v, c)| format!("{:.1},{:.1}", f.x(*i), f.y(v + c)));
    let lower = band
        .iter()
        .rev()
        .map(|(i, v, c)| format!("{:.1},{:.1}", f.x(*i), f.y(v - c)));
    let points = upper.chain(lower).collect::<Vec<_>>().join(" ");
    let _ = write!(
        out,
        "<polygon class=\"band\" points=\"{points}\" fill=\"#3b82f6\" fill-opacity=\".18\"/>"
    );
}

/// The line and a dot per point, flagged ones larger and coloured.
fn points(s: &Series, f: &Frame, link: &dyn Fn(&str) -> Option<String>, out: &mut String) {
    let line: Vec<String> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", f.x(i), f.y(p.value)))
        .collect();
    let _ = write!(
        out,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#3b82f6\" stroke-width=\"2\"/>",
        line.join(" ")
    );
    for (i, p) in s.points.iter().enumerate() {
        let (colour, class) = match p.flag {
            Some(Flag::Regression) => ("#dc2626", "regression"),
            Some(Flag::Improvement) => ("#059669", "improvement"),
            None => ("#3b82f6", "point"),
        };
        let r = if p.flag.is_some() { 5 } else { 3 };
        let tip = format!(
            "{} · {} · {}",
            esc(short(&p.run)),
            esc(&p.started_at),
            esc(&value(&s.metric, p.value))
        );
        let dot = format!(
            "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{colour}\"><title>{tip}</title></circle>",
            f.x(i),
            f.y(p.value)
        );
        match link(&p.run) {
            Some(href) => {
                let _ = write!(out, "<a href=\"{}\">{dot}</a>", esc(&href));
            }
            None => out.push_str(&dot),
        }
    }
}

/// One series as a small line chart.
pub fn chart(s: &Series, link: &dyn Fn(&str) -> Option<String>) -> String {
    let f = Frame::of(s);
    let mut out = format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" font-size=\"11\" fill=\"currentColor\"><title>{} {}</title>",
        esc(&s.metric),
        esc(&s.cell),
        esc(&s.metric)
    );
    axes(s, &f, &mut out);
    band(s, &f, &mut out);
    points(s, &f, link, &mut out);
    out.push_str("</svg></figure>\n");
    out
}
