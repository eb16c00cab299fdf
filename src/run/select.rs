//! The cells a run measures: the plan cut to `--shard K/N` (by estimated time, see
//! [`Plan::shard`]) and to the `--only` glob over cell ids.

use super::RunOptions;
use crate::plan::Plan;

/// The plan cut to `--only` and `--shard`.
pub(super) fn select(plan: Plan, opts: &RunOptions) -> Plan {
    let mut plan = match opts.shard {
        Some(s) => plan.shard(s),
        None => plan,
    };
    if let Some(glob) = &opts.only {
        plan.cells.retain(|c| glob_match(glob, &c.id));
    }
    plan
}

/// `*` matches any run of characters, `?` one character.
pub fn glob_match(glob: &str, text: &str) -> bool {
    let (g, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    let (mut gi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if gi < g.len() && (g[gi] == '?' || g[gi] == t[ti]) {
            gi += 1;
            ti += 1;
        } else if gi < g.len() && g[gi] == '*' {
            star = Some(gi);
            mark = ti;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        let cases = [
            ("decode/8K/*", "decode/8K/c4", true),
            ("decode/8K/*", "decode/16K/c4", false),
            ("*/c1", "decode/64K/c1", true),
            ("prefill/?K", "prefill/8K", true),
            ("prefill/?K", "prefill/16K", false),
            ("*", "x", true),
        ];
        for (g, t, want) in cases {
            assert_eq!(glob_match(g, t), want, "{g} {t}");
        }
    }
}
