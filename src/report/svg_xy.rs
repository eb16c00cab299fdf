//! The latency–throughput chart of the HTML report: a latency (TTFT or TPOT, p50 and p99)
//! against the achieved request rate of the load cells, one line per context and
//! percentile, with the SLO's thresholds for that metric drawn as dashed lines.

use super::context::Context;
use super::svg::{
    BOTTOM, H, LEFT, PALETTE, RIGHT, TOP, W, axis_label, esc, legend_at, legend_rows, open, scale,
    y_axis,
};
use crate::results::{Record, Summary};
use std::fmt::Write;

/// One line: its name, dash pattern and points (x, y).
pub(super) struct Line {
    pub(super) name: String,
    pub(super) dashed: bool,
    pub(super) points: Vec<(f64, f64)>,
}

fn lines(cx: &Context, pick: fn(&Record) -> Option<Summary>) -> Vec<Line> {
    let mut contexts: Vec<(u64, String)> = cx
        .load
        .iter()
        .map(|c| (c.context, c.context_label.clone()))
        .collect();
    contexts.dedup();
    let mut out = Vec::new();
    for (context, label) in contexts {
        for (p, dashed) in [("p50", false), ("p99", true)] {
            let mut points: Vec<(f64, f64)> = cx
                .load
                .iter()
                .filter(|c| c.context == context && c.status.measured())
                .filter_map(|c| {
                    let r = c.record.as_ref()?;
                    let s = pick(r)?;
                    Some((r.open.rate_achieved?, if dashed { s.p99 } else { s.p50 }))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            out.push(Line {
                name: format!("{label} {p}"),
                dashed,
                points,
            });
        }
    }
    out
}

/// `label` (`metric`'s summaries by `pick`) against achieved requests per second.
pub fn latency(
    cx: &Context,
    pick: fn(&Record) -> Option<Summary>,
    metric: &str,
    label: &str,
) -> String {
    let lines = lines(cx, pick);
    let limits: Vec<(String, f64)> = cx
        .slo
        .iter()
        .filter(|t| t.metric == metric)
        .map(|t| (t.label.clone(), t.limit_ms))
        .collect();
    let points = || lines.iter().flat_map(|l| l.points.iter());
    let ys = points().map(|p| p.1).chain(limits.iter().map(|l| l.1));
    let (ymax, ystep) = scale(ys.fold(0.0, f64::max));
    let (xmax, xstep) = scale(points().map(|p| p.0).fold(0.0, f64::max));
    let mut s = open(&format!("{label} against achieved requests per second"));
    y_axis(&mut s, ymax, ystep, label);
    let plot = Plot { xmax, ymax };
    x_axis(&mut s, &plot, xstep, "achieved requests per second");
    let taken = slo_lines(&mut s, &plot, &limits);
    let rows = legend_rows(lines.len(), &taken);
    for (k, l) in lines.iter().enumerate() {
        draw(&mut s, &plot, (k, l), rows[k], |x| format!("{x:.2} req/s"));
    }
    s.push_str("</svg>");
    s
}

/// The SLO's thresholds as dashed lines across the plot, each labelled in the right margin
/// beside its line (so that no label lies on a data line); the labels' baselines.
pub(super) fn slo_lines(s: &mut String, plot: &Plot, limits: &[(String, f64)]) -> Vec<f64> {
    let mut taken: Vec<f64> = Vec::new();
    for (name, v) in limits {
        let y = plot.y(*v);
        let mut base = (y + 4.0).clamp(TOP + 10.0, H - BOTTOM + 4.0);
        while taken.iter().any(|t| (t - base).abs() < 14.0) {
            base += 14.0;
        }
        taken.push(base);
        // `TTFT p90 ≤ 300 ms` says the metric the chart's axis already names.
        let short = name.split_once(' ').map_or(name.as_str(), |(_, rest)| rest);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-dasharray=\"2 4\"/><text x=\"{:.1}\" y=\"{base:.1}\" font-size=\"11\"><title>SLO {}</title>SLO {}</text>",
            W - RIGHT,
            W - RIGHT + 6.0,
            esc(name),
            esc(short)
        );
    }
    taken
}

/// The plot area's scale: data to SVG coordinates.
pub(super) struct Plot {
    pub(super) xmax: f64,
    pub(super) ymax: f64,
}

impl Plot {
    pub(super) fn x(&self, x: f64) -> f64 {
        LEFT + (W - LEFT - RIGHT) * x / self.xmax
    }

    pub(super) fn y(&self, y: f64) -> f64 {
        TOP + (H - TOP - BOTTOM) * (1.0 - y / self.ymax)
    }
}

/// Tick labels along x and the axis title.
pub(super) fn x_axis(s: &mut String, plot: &Plot, step: f64, title: &str) {
    let mut x = 0.0;
    while x <= plot.xmax + step / 2.0 {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            plot.x(x),
            H - BOTTOM + 16.0,
            axis_label(x)
        );
        x += step;
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 6.0,
        esc(title)
    );
}

/// The `k`th line with a dot per point and its legend entry (a context's colour; p99
/// dashed); `at` says where a point is in its tooltip.
pub(super) fn draw(
    s: &mut String,
    plot: &Plot,
    (k, l): (usize, &Line),
    legend_y: f64,
    at: impl Fn(f64) -> String,
) {
    let color = PALETTE[(k / 2) % PALETTE.len()];
    let dash = if l.dashed {
        " stroke-dasharray=\"6 3\""
    } else {
        ""
    };
    let path: Vec<String> = l
        .points
        .iter()
        .map(|(x, y)| format!("{:.1},{:.1}", plot.x(*x), plot.y(*y)))
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
        path.join(" ")
    );
    for (x, y) in &l.points {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}: {y:.1} ms at {}</title></circle>",
            plot.x(*x),
            plot.y(*y),
            esc(&l.name),
            at(*x)
        );
    }
    legend_at(s, legend_y, color, dash, &l.name);
}
