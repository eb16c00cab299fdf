//! What the fitted cells constrain. Each of the fit's three linear groups — decode steps in
//! (1, N, N × (C + O/2)), cold prompts in (1, C, C²), decode cells' first tokens in (1, C,
//! N^¼ − 1) — keeps the span of its fitted rows ([`Design`]). A parameter is identified when
//! its own direction lies in that span; a predicted value is known when its row does (the
//! fitted cells fix that combination of the parameters even where they do not fix each one:
//! decode cells at one context fix every concurrency's step at that context). Anything else
//! is reported as not identified, never given as a number.

use super::lsq::{TOL, extend_basis, length, outside};
use serde::{Deserialize, Serialize};

/// The span of one group's fitted rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// Each column's scale: its largest |value| over the fitted rows (1 when none).
    pub scale: Vec<f64>,
    /// An orthonormal basis of the scaled rows' span: the combinations the cells fix.
    pub basis: Vec<Vec<f64>>,
}

impl Design {
    /// The span of `rows` (`k` columns each).
    pub fn of(rows: &[Vec<f64>], k: usize) -> Design {
        let scale: Vec<f64> = (0..k)
            .map(|j| {
                let m = rows.iter().fold(0.0, |m: f64, r| m.max(r[j].abs()));
                if m > 0.0 { m } else { 1.0 }
            })
            .collect();
        let mut basis = Vec::new();
        for r in rows {
            let z: Vec<f64> = r.iter().zip(&scale).map(|(v, s)| v / s).collect();
            extend_basis(&mut basis, &z);
        }
        Design { scale, basis }
    }

    /// Whether the fitted rows fix the value of `row · parameters`.
    pub fn fixes(&self, row: &[f64]) -> bool {
        if row.len() != self.scale.len() {
            return false;
        }
        let z: Vec<f64> = row.iter().zip(&self.scale).map(|(v, s)| v / s).collect();
        length(&outside(&self.basis, &z)) <= TOL * length(&z)
    }

    /// Whether the `j`-th parameter on its own is fixed.
    pub fn identifies(&self, j: usize) -> bool {
        let mut e = vec![0.0; self.scale.len().max(j + 1)];
        e[j] = 1.0;
        self.fixes(&e)
    }
}

/// The three groups' spans, as fitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Designs {
    /// Decode steps: (1, N, N × (C + O/2)) → `step_s`, `per_seq_s`, `per_kv_token_s`.
    pub step: Design,
    /// Cold prompts: (1, C, C²) → `api_s`, `prefill_token_s`, `prefill_quadratic_s`.
    pub prefill: Design,
    /// Decode cells' first tokens: (1, C, C², N^¼ − 1, C × (burst + 1)) → `cached_request_s`,
    /// `cached_token_s`, `cached_quadratic_s`, `api_stream_s`, `tokenizer_token_s`.
    pub first_token: Design,
}

/// Each group's parameters and the cells that would identify them.
const GROUPS: [(&str, &[&str], &str); 3] = [
    (
        "step",
        &["step_s", "per_seq_s", "per_kv_token_s"],
        "decode, load or session cells at 2 or more concurrencies and 2 or more contexts",
    ),
    (
        "prefill",
        &["api_s", "prefill_token_s", "prefill_quadratic_s"],
        "prefill cells (or one-stream decode cells) with a TTFT at 3 or more contexts",
    ),
    (
        "first_token",
        &[
            "cached_request_s",
            "cached_token_s",
            "cached_quadratic_s",
            "api_stream_s",
            "tokenizer_token_s",
        ],
        "closed-loop decode cells with a TTFT at 3 or more contexts (a quadratic in the context) and 2 or more concurrencies",
    ),
];

/// What identifies `tokenizer_token_s`: a TTFT measured on the burst of requests a closed
/// loop sends at its start.
const BURST_NEEDS: &str = "closed-loop decode cells none or few of whose requests finished inside the window (their median TTFT waited for the others' prompts on the tokenizer)";

/// A parameter no fitted cell constrains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotIdentified {
    /// Its name in `[params]` (whose value there is one of many the fitted cells allow).
    pub param: String,
    /// The cells that would identify it.
    pub needs: String,
}

impl Designs {
    fn group(&self, name: &str) -> &Design {
        match name {
            "step" => &self.step,
            "prefill" => &self.prefill,
            _ => &self.first_token,
        }
    }

    /// The parameters the fitted cells do not fix, with what would.
    pub fn not_identified(&self) -> Vec<NotIdentified> {
        GROUPS
            .iter()
            .flat_map(|(g, params, needs)| {
                let d = self.group(g);
                params
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| !d.identifies(*j))
                    .map(|(_, p)| NotIdentified {
                        param: (*p).into(),
                        needs: if *p == "tokenizer_token_s" {
                            BURST_NEEDS.into()
                        } else {
                            (*needs).into()
                        },
                    })
            })
            .collect()
    }
}

/// Rows of each group for a decode step of `n` requests of `context` and `output` tokens, a
/// cold prompt of `context`, and a decode cell's first token.
pub fn step_row(n: f64, context: f64, output: f64) -> Vec<f64> {
    vec![1.0, n, n * (context + output / 2.0)]
}

/// See [`step_row`].
pub fn prefill_row(context: f64) -> Vec<f64> {
    vec![1.0, context, context * context]
}

/// See [`step_row`].
pub fn first_token_row(context: f64, n: f64, burst: f64) -> Vec<f64> {
    vec![
        1.0,
        context,
        context * context,
        n.max(1.0).powf(0.25) - 1.0,
        context * (burst + 1.0),
    ]
}

/// The metrics of a cell the fitted cells do not fix: `closed` a prefill or decode cell (else
/// a simulated one, whose timeline also holds prefills), `prefill` a cold prompt alone; `n`
/// the requests running at once, `burst` the median request's place in the burst sent at a
/// closed loop's start ([`super::model::burst`]).
pub fn unknown(
    d: &Designs,
    (closed, prefill): (bool, bool),
    context: f64,
    (n, output): (f64, f64),
    burst: f64,
) -> Vec<&'static str> {
    let cold = d.prefill.fixes(&prefill_row(context));
    if prefill {
        return if cold { vec![] } else { vec!["ttft_ms_p50"] };
    }
    let step = d.step.fixes(&step_row(n, context, output)) && (closed || cold);
    let first = if closed {
        d.first_token.fixes(&first_token_row(context, n, burst))
    } else {
        cold
    };
    let mut out = Vec::new();
    if !step {
        out.extend(["total_tok_s", "per_request_tok_s", "tbt_ms_p50"]);
    }
    if !(step && first) {
        out.push("ttft_ms_p50");
    }
    out
}

/// The one-line summary of `list` for people: `NOT IDENTIFIED: a, b (needs …); c (needs …)`.
pub fn summary(list: &[NotIdentified]) -> Option<String> {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for n in list {
        match groups.iter_mut().find(|(_, needs)| *needs == n.needs) {
            Some((params, _)) => params.push(&n.param),
            None => groups.push((vec![&n.param], &n.needs)),
        }
    }
    (!groups.is_empty()).then(|| {
        let parts: Vec<String> = groups
            .iter()
            .map(|(p, needs)| format!("{} (needs {needs})", p.join(", ")))
            .collect();
        format!("NOT IDENTIFIED: {}", parts.join("; "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_context_fixes_its_steps_but_not_the_per_token_cost() {
        let rows = vec![step_row(1.0, 256.0, 32.0), step_row(4.0, 256.0, 32.0)];
        let d = Design::of(&rows, 3);
        assert!(d.identifies(0), "step_s: {d:?}");
        assert!(!d.identifies(1) && !d.identifies(2), "{d:?}");
        // Any concurrency at the fitted context is fixed; another context is not.
        assert!(d.fixes(&step_row(64.0, 256.0, 32.0)));
        assert!(!d.fixes(&step_row(4.0, 1024.0, 32.0)));
        // No rows: nothing fixed but the zero row; a group never fitted fixes nothing.
        let none = Design::of(&[], 3);
        assert!(!none.identifies(0) && none.fixes(&[0.0, 0.0, 0.0]));
        assert!(!Design::default().fixes(&[1.0, 0.0, 0.0]) && !Design::default().identifies(2));
    }

    #[test]
    fn the_summary_names_each_parameter_and_what_identifies_it() {
        let designs = Designs {
            step: Design::of(&[step_row(8.0, 8192.0, 256.0)], 3),
            ..Designs::default()
        };
        let list = designs.not_identified();
        let names: Vec<&str> = list.iter().map(|n| n.param.as_str()).collect();
        // One cell fixes its own step, no parameter alone.
        assert_eq!(names.len(), 11, "{names:?}");
        let s = summary(&list).unwrap_or_default();
        assert!(
            s.starts_with("NOT IDENTIFIED: step_s, per_seq_s, per_kv_token_s (needs decode"),
            "{s}"
        );
        assert!(s.contains("api_s, prefill_token_s, prefill_quadratic_s (needs prefill"));
        assert!(s.contains("tokenizer_token_s (needs closed-loop decode cells none or few"));
    }
}
