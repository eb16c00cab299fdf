//! The sessions chart of the HTML report: TTFT by turn (p50 solid, p90 dashed), one colour
//! per session cell, with the SLO's TTFT thresholds dashed across.

use super::context::Context;
use super::svg::{legend_rows, open, scale, y_axis};
use super::svg_xy::{Line, Plot, draw, slo_lines, x_axis};

/// TTFT p50 and p90 against the turn index of every measured session cell.
pub fn ttft_by_turn(cx: &Context) -> String {
    let mut lines = Vec::new();
    for c in cx.sessions.iter().filter(|c| c.status.measured()) {
        let Some(turns) = c.record.as_ref().and_then(|r| r.by_turn.as_ref()) else {
            continue;
        };
        for (p, dashed) in [("p50", false), ("p90", true)] {
            let points = turns
                .iter()
                .filter_map(|t| {
                    let s = t.ttft_ms?;
                    Some((f64::from(t.turn), if dashed { s.p90 } else { s.p50 }))
                })
                .collect();
            lines.push(Line {
                // `1/s p90`, not `1 sessions/s p90`: the legend's margin holds 12 letters.
                name: format!("{} {p}", c.level_label.replace(" sessions/s", "/s")),
                dashed,
                points,
            });
        }
    }
    let limits: Vec<(String, f64)> = cx
        .slo
        .iter()
        .filter(|t| t.metric == "ttft")
        .map(|t| (t.label.clone(), t.limit_ms))
        .collect();
    let points = || lines.iter().flat_map(|l| l.points.iter());
    let ys = points().map(|p| p.1).chain(limits.iter().map(|l| l.1));
    let (ymax, ystep) = scale(ys.fold(0.0, f64::max));
    let (xmax, xstep) = scale(points().map(|p| p.0).fold(1.0, f64::max));
    let mut s = open("TTFT by turn");
    y_axis(&mut s, ymax, ystep, "TTFT ms");
    let plot = Plot { xmax, ymax };
    x_axis(&mut s, &plot, xstep.max(1.0), "turn");
    let taken = slo_lines(&mut s, &plot, &limits);
    let rows = legend_rows(lines.len(), &taken);
    for (k, l) in lines.iter().enumerate() {
        draw(&mut s, &plot, (k, l), rows[k], |x| format!("turn {x}"));
    }
    s.push_str("</svg>");
    s
}
