//! `fit --suggest N`: the cells to measure next. Among the plan's prefill and decode cells not
//! yet measured, greedily the one farthest — in log₂ context and log₂ concurrency — from every
//! measured or already-suggested cell of its phase: the corners outside the fitted range first
//! (where intervals are widest), then the largest gaps inside it.

use crate::plan::{Phase, Plan};

fn point(context: u64, n: u32) -> (f64, f64) {
    ((context.max(1) as f64).log2(), f64::from(n.max(1)).log2())
}

/// Up to `n` cell ids of `plan` to measure next, given the `measured` ids.
pub fn suggest(plan: &Plan, measured: &[String], n: usize) -> Vec<String> {
    let cells: Vec<&crate::plan::Cell> = plan
        .cells
        .iter()
        .filter(|c| c.runs() && matches!(c.phase(), Phase::Prefill | Phase::Decode))
        .collect();
    let mut known: Vec<(Phase, (f64, f64))> = cells
        .iter()
        .filter(|c| measured.contains(&c.id))
        .map(|c| (c.phase(), point(c.prompt_tokens, c.concurrency)))
        .collect();
    let mut out: Vec<String> = Vec::new();
    while out.len() < n {
        let best = cells
            .iter()
            .filter(|c| !measured.contains(&c.id) && !out.contains(&c.id))
            .map(|c| {
                let p = point(c.prompt_tokens, c.concurrency);
                let d = known
                    .iter()
                    .filter(|(ph, _)| *ph == c.phase())
                    .map(|(_, q)| (p.0 - q.0).hypot(p.1 - q.1))
                    .fold(f64::INFINITY, f64::min);
                (c, d)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((c, _)) = best else { break };
        known.push((c.phase(), point(c.prompt_tokens, c.concurrency)));
        out.push(c.id.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_first_then_gaps() {
        let text = "version: 1\nname: s\nengine: {kind: sim}\nmodel: {served_name: m}\nmatrix: {contexts: [1K, 2K, 4K, 8K, 16K], concurrency: [1, 2, 4, 8, 16]}\nphases: {prefill: {enabled: false}, decode: {duration: 1s}}\n";
        let loaded = crate::spec::parse("s.yaml", text, crate::spec::Stage::Validate, &|_| None)
            .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()));
        let plan = crate::plan::expand(&loaded.spec, &crate::plan::sim::rates_for);
        let measured: Vec<String> = ["decode/2K/c2", "decode/4K/c4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let got = suggest(&plan, &measured, 3);
        assert_eq!(
            got[0], "decode/16K/c16",
            "the farthest corner first: {got:?}"
        );
        // Then the two other corners, equally far.
        let mut next = got[1..].to_vec();
        next.sort();
        assert_eq!(next, ["decode/16K/c1", "decode/1K/c16"], "{got:?}");
        assert_eq!(got.len(), 3);
        assert!(!got.iter().any(|c| measured.contains(c)));
        assert!(
            suggest(&plan, &measured, 100).len() == 23,
            "every unmeasured cell at most"
        );
    }
}
