//! The capacity chart of the HTML report: a capacity search's probes as the SLO metric (at
//! the SLO's own percentile) against the searched value, probes that met the SLO green and
//! the others red, the SLO's threshold dashed across, and the capacity found marked by a
//! vertical line labelled above the plot. One chart per searched context and SLO term.

use super::capacity::CapacityView;
use super::context::Context;
use super::slo_terms::SloTerm;
use super::svg::{BOTTOM, H, TOP, esc, open, scale, y_axis};
use super::svg_xy::{Plot, slo_lines, x_axis};
use std::fmt::Write;

/// Green for a probe that met the SLO, red for one that did not; both read on light and dark.
const MET: &str = "#10b981";
const MISSED: &str = "#ef4444";
const LINE: &str = "#3b82f6";

/// A chart with its caption.
pub struct Captioned {
    /// `TTFT p90 against requests at once at 1K context`.
    pub caption: String,
    /// The inline SVG.
    pub svg: String,
}

/// Every capacity chart of the run.
pub fn capacity(cx: &Context) -> Vec<Captioned> {
    let mut out = Vec::new();
    for c in &cx.capacity {
        for (i, term) in cx.slo.iter().enumerate() {
            let points: Vec<(f64, f64, bool)> = c
                .probes
                .iter()
                .filter_map(|p| {
                    let v = p.cell.slo.get(i)?;
                    Some((p.value, v.value_ms?, v.met && p.meets_slo))
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            out.push(Captioned {
                caption: format!(
                    "{} against {} at {} context · SLO {}",
                    term.head,
                    c.axis_label.to_lowercase(),
                    c.context_label,
                    term.label
                ),
                svg: chart(c, term, &points),
            });
        }
    }
    out
}

fn chart(c: &CapacityView, term: &SloTerm, points: &[(f64, f64, bool)]) -> String {
    let ymax = points.iter().map(|p| p.1).fold(term.limit_ms, f64::max);
    let (ymax, ystep) = scale(ymax);
    let xmax = points
        .iter()
        .map(|p| p.0)
        .fold(c.capacity.unwrap_or(0.0), f64::max);
    let (xmax, xstep) = scale(xmax);
    let unit = c.axis_label.to_lowercase();
    let mut s = open(&format!(
        "{} against {unit} at {} context, with the SLO and the capacity found",
        term.head, c.context_label
    ));
    let y_label = format!("{} ms", term.head);
    y_axis(&mut s, ymax, ystep, &y_label);
    let plot = Plot { xmax, ymax };
    x_axis(&mut s, &plot, xstep, &unit);
    slo_lines(&mut s, &plot, &[(term.label.clone(), term.limit_ms)]);
    if let Some(cap) = c.capacity {
        let x = plot.x(cap);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"{MET}\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{MET}\">capacity {cap}</text>",
            H - BOTTOM,
            TOP - 4.0
        );
    }
    let path: Vec<String> = points
        .iter()
        .map(|(x, y, _)| format!("{:.1},{:.1}", plot.x(*x), plot.y(*y)))
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{LINE}\" stroke-width=\"1.5\" stroke-opacity=\"0.6\"/>",
        path.join(" ")
    );
    for (x, y, met) in points {
        let (color, word) = if *met {
            (MET, "meets")
        } else {
            (MISSED, "misses")
        };
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\"><title>{x}: {} {y:.1} ms, {word} the SLO</title></circle>",
            plot.x(*x),
            plot.y(*y),
            esc(&term.head)
        );
    }
    s.push_str("</svg>");
    s
}
