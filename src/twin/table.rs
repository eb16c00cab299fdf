//! `predict`'s table for people: each cell's values with their 90% intervals and marks
//! (simulated, extrapolated, phase not fitted), then capacity, what was not predicted, not
//! identified and not modelled.

use super::predict::{PredictedCell, Prediction};

/// A cell's marks in the table's last column.
fn marks(c: &PredictedCell) -> String {
    let mut m = Vec::new();
    if c.method == "simulated" {
        m.push("simulated");
    }
    if c.extrapolated {
        m.push("extrapolated");
    }
    let iv = &c.interval;
    let has_interval = [
        iv.total_tok_s,
        iv.per_request_tok_s,
        iv.ttft_ms_p50,
        iv.tbt_ms_p50,
    ]
    .iter()
    .any(Option::is_some);
    // Only an interval there is can be doubled.
    if !c.phase_fitted && c.known() && has_interval {
        m.push("phase not fitted: interval doubled");
    }
    m.join(", ")
}

/// The prediction as a table.
pub fn table(p: &Prediction) -> String {
    let iv = &p.intervals;
    let basis = |name: &str, b: &super::interval::Basis| b.describe(name);
    let mut out = format!(
        "predicted by the twin (90% intervals inside the fitted range: {}; {}; {}; phases fitted: {})\n\n| Cell | Total tok/s | Per request tok/s | TTFT p50 ms | TBT p50 ms | |\n|---|---|---|---|---|---|\n",
        basis("tok/s", &iv.tok_s),
        basis("TTFT", &iv.ttft),
        basis("prefill TTFT", &iv.prefill_ttft),
        iv.phases.join(", ")
    );
    for c in &p.cells {
        let f = |m: &str, v: Option<f64>, h: Option<f64>| match (v, h) {
            _ if c.unknown.contains(&m) => "unknown".into(),
            (Some(v), Some(h)) => format!("{v} ± {h}"),
            (Some(v), None) => format!("{v}"),
            _ => "—".into(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            c.cell,
            f("total_tok_s", c.total_tok_s, c.interval.total_tok_s),
            f(
                "per_request_tok_s",
                c.per_request_tok_s,
                c.interval.per_request_tok_s
            ),
            f("ttft_ms_p50", c.ttft_ms_p50, c.interval.ttft_ms_p50),
            f("tbt_ms_p50", c.tbt_ms_p50, c.interval.tbt_ms_p50),
            marks(c)
        ));
    }
    if let Some(c) = &p.capacity {
        for at in &c.cells {
            out.push_str(&format!(
                "\ncapacity at {} under the SLO: {} {}{}",
                at.cell,
                at.value.map_or("none meets it".into(), |v| format!("{v}")),
                c.search,
                at.interval.map_or(String::new(), |h| format!(" ± {h}"))
            ));
        }
        out.push('\n');
    }
    for n in &p.not_predicted {
        out.push_str(&format!("\n{n}"));
    }
    for n in &p.not_identified {
        out.push_str(&format!("\nunknown: {n}"));
    }
    if !p.not_modelled.is_empty() {
        out.push_str(&format!(
            "\nnot modelled (the prediction ignores them): {}",
            p.not_modelled.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twin::model::Predicted;

    #[test]
    fn a_cell_of_an_unseen_phase_is_marked_doubled_only_with_an_interval() {
        let none = Predicted {
            total_tok_s: None,
            per_request_tok_s: None,
            ttft_ms_p50: None,
            tbt_ms_p50: None,
        };
        let mut c = PredictedCell {
            cell: "prefill/1K".into(),
            phase: "prefill".into(),
            context: 1024,
            concurrency: 1,
            total_tok_s: None,
            per_request_tok_s: None,
            ttft_ms_p50: Some(38.0),
            tbt_ms_p50: None,
            interval: none,
            extrapolated: false,
            phase_fitted: false,
            method: "simulated",
            unknown: Vec::new(),
        };
        // A one-cell twin earned no interval: there is nothing to double.
        assert!(!marks(&c).contains("interval doubled"), "{}", marks(&c));
        c.interval.ttft_ms_p50 = Some(4.0);
        assert!(marks(&c).contains("phase not fitted: interval doubled"));
    }
}
