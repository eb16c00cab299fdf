//! The frontier charts of the HTML report: per context, every point (a valid decode or load
//! cell of any variant) as tok/s per GPU against per-user tok/s, the frontier's points
//! joined and coloured, the others grey; where the spec has a cost, a second chart of
//! $/Mtok (lower is better) against per-user tok/s.

use super::context::Context;
use super::format::tok_s;
use super::frontier::{FrontierPoint, FrontierView};
use super::svg::{PALETTE, esc, legend, open, scale, y_axis};
use super::svg_capacity::Captioned;
use super::svg_xy::{Plot, x_axis};
use std::fmt::Write;

/// The colour of a point that is on no frontier.
const OFF: &str = "#9ca3af";

/// Every frontier chart of the run: per context with a point, tok/s per GPU, then $/Mtok
/// where there is a cost.
pub fn frontier(cx: &Context) -> Vec<Captioned> {
    let mut out = Vec::new();
    for f in cx.frontier.iter().filter(|f| !f.all.is_empty()) {
        out.push(Captioned {
            caption: format!(
                "Tok/s per GPU ({} GPU(s)) against per-user tok/s at {} context: the frontier joined",
                f.gpu_count, f.context_label
            ),
            svg: chart(f, &f.points, Axis::PerGpu),
        });
        if !f.cost_points.is_empty() {
            out.push(Captioned {
                caption: format!(
                    "$/Mtok against per-user tok/s at {} context (lower is better): the frontier joined",
                    f.context_label
                ),
                svg: chart(f, &f.cost_points, Axis::Cost),
            });
        }
    }
    out
}

/// What the y axis shows.
#[derive(Clone, Copy)]
enum Axis {
    PerGpu,
    Cost,
}

impl Axis {
    fn value(self, p: &FrontierPoint) -> Option<f64> {
        match self {
            Axis::PerGpu => Some(p.tok_s_per_gpu),
            Axis::Cost => p.usd_per_mtok,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Axis::PerGpu => "tok/s per GPU",
            Axis::Cost => "$ per million output tokens",
        }
    }

    fn text(self, v: f64) -> String {
        match self {
            Axis::PerGpu => format!("{} tok/s per GPU", tok_s(v)),
            Axis::Cost => format!("${v:.4} per Mtok"),
        }
    }
}

/// One context's points with the frontier `on` joined.
fn chart(f: &FrontierView, on: &[FrontierPoint], axis: Axis) -> String {
    let ys = f.all.iter().filter_map(|p| axis.value(p));
    let (ymax, ystep) = scale(ys.fold(0.0, f64::max));
    let (xmax, xstep) = scale(f.all.iter().map(|p| p.per_user_tok_s).fold(0.0, f64::max));
    let mut s = open(&format!(
        "{} against per-user tok/s at {} context, the frontier joined",
        axis.label(),
        f.context_label
    ));
    y_axis(&mut s, ymax, ystep, axis.label());
    let plot = Plot { xmax, ymax };
    x_axis(&mut s, &plot, xstep, "per-user tok/s");
    let color = PALETTE[0];
    let path: Vec<String> = on
        .iter()
        .filter_map(|p| Some((p.per_user_tok_s, axis.value(p)?)))
        .map(|(x, y)| format!("{:.1},{:.1}", plot.x(x), plot.y(y)))
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
        path.join(" ")
    );
    for p in &f.all {
        let Some(y) = axis.value(p) else { continue };
        let front = on.iter().any(|o| o.cell == p.cell);
        let (fill, r, word) = if front {
            (color, 4, "on the frontier")
        } else {
            (OFF, 3, "behind the frontier")
        };
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{fill}\"><title>{} ({}): {} at {} per-user tok/s, {word}</title></circle>",
            plot.x(p.per_user_tok_s),
            plot.y(y),
            esc(&p.cell),
            esc(&p.load),
            axis.text(y),
            tok_s(p.per_user_tok_s)
        );
    }
    legend(&mut s, 0, color, "", "frontier");
    legend(&mut s, 1, OFF, "", "other cells");
    s.push_str("</svg>");
    s
}
