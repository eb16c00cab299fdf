//! The cells a run measures: the plan cut to `--shard K/N` (by estimated time, see
//! [`Plan::shard`]) and to the `--only` glob over cell ids. The glob is read as a shell
//! reads one: `*`, `?`, `[…]` and `{a,b}`.

use super::options::RunOptions;
use crate::plan::{GlobError, Plan, PlanError};

/// The plan cut to `--only` and `--shard`.
pub(super) fn select(plan: Plan, opts: &RunOptions) -> Plan {
    let mut plan = match opts.shard {
        Some(s) if opts.split_load => plan.shard_split(s),
        Some(s) => plan.shard(s),
        None => plan,
    };
    if let Some(glob) = &opts.only {
        plan.cells.retain(|c| glob_match(glob, &c.id));
    }
    plan
}

/// `--only GLOB` must name a runnable cell of `plan` (the whole plan, before `--shard`):
/// else the error names the cells there are.
pub fn check_only(plan: &Plan, glob: &str) -> Result<(), PlanError> {
    let parsed = Glob::parse(glob).map_err(|why| PlanError::BadGlob(glob.to_string(), why))?;
    if plan.runnable().any(|c| parsed.matches(&c.id)) {
        return Ok(());
    }
    let ids: Vec<&str> = plan.runnable().map(|c| c.id.as_str()).collect();
    const SHOWN: usize = 24;
    let mut cells = ids
        .iter()
        .take(SHOWN)
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        cells.push_str(&format!(
            " and {} more (`benchspec plan` lists them)",
            ids.len() - SHOWN
        ));
    }
    if ids.is_empty() {
        cells = "none: every cell of the plan is skipped".into();
    }
    Err(PlanError::NoMatch {
        glob: glob.to_string(),
        cells,
    })
}

/// `--only`'s value, checked as clap reads it: a glob that cannot be read is a usage error.
pub fn parse_only(text: &str) -> Result<String, GlobError> {
    Glob::parse(text).map(|_| text.to_string())
}

/// Whether `text` matches `glob` (`*` any run of characters, `?` one, `[a-z]`/`[!x]` one of
/// a set, `{a,b}` either); a glob that cannot be read matches nothing.
pub fn glob_match(glob: &str, text: &str) -> bool {
    Glob::parse(glob).is_ok_and(|g| g.matches(text))
}

/// A parsed glob: its alternatives after `{…}` expansion, each a list of tokens.
#[derive(Debug)]
struct Glob(Vec<Vec<Tok>>);

/// One token of a glob.
#[derive(Debug, Clone)]
enum Tok {
    /// `*`.
    Star,
    /// `?`.
    One,
    /// A literal character.
    Char(char),
    /// `[…]`: inclusive ranges, negated by a leading `!` or `^`.
    Class(bool, Vec<(char, char)>),
}

/// At most this many alternatives after `{…}` expansion.
const MAX_ALTERNATIVES: usize = 1024;

impl Glob {
    fn parse(glob: &str) -> Result<Glob, GlobError> {
        let alts = braces(glob)?;
        if alts.len() > MAX_ALTERNATIVES {
            return Err(GlobError::TooMany(MAX_ALTERNATIVES));
        }
        alts.iter()
            .map(|a| tokens(a))
            .collect::<Result<_, _>>()
            .map(Glob)
    }

    fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        self.0.iter().any(|g| match_tokens(g, &t))
    }
}

/// The patterns `{a,b}` expands into (nested braces too); `[…]` is passed over whole.
fn braces(glob: &str) -> Result<Vec<String>, GlobError> {
    let chars: Vec<char> = glob.chars().collect();
    let Some(open) = first_brace(&chars)? else {
        return Ok(vec![glob.to_string()]);
    };
    let (close, parts) = brace_parts(&chars, open)?;
    let head: String = chars[..open].iter().collect();
    let tail: String = chars[close + 1..].iter().collect();
    let mut out = Vec::new();
    for part in parts {
        out.extend(braces(&format!("{head}{part}{tail}"))?);
        if out.len() > MAX_ALTERNATIVES {
            break;
        }
    }
    Ok(out)
}

/// Where the first `{` outside `[…]` is; a `}` before any `{` is refused.
fn first_brace(chars: &[char]) -> Result<Option<usize>, GlobError> {
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '[' => i = class_end(chars, i)?,
            '{' => return Ok(Some(i)),
            '}' => return Err(GlobError::StrayBrace),
            _ => {}
        }
        i += 1;
    }
    Ok(None)
}

/// The `}` matching the `{` at `open`, and the comma-separated parts between them.
fn brace_parts(chars: &[char], open: usize) -> Result<(usize, Vec<String>), GlobError> {
    let (mut depth, mut parts, mut part) = (0usize, Vec::new(), String::new());
    let mut i = open + 1;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '[' => {
                let end = class_end(chars, i)?;
                part.extend(&chars[i..=end]);
                i = end;
            }
            '{' => {
                depth += 1;
                part.push(c);
            }
            '}' if depth == 0 => {
                parts.push(part);
                return Ok((i, parts));
            }
            '}' => {
                depth -= 1;
                part.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut part)),
            _ => part.push(c),
        }
        i += 1;
    }
    Err(GlobError::UnclosedBrace)
}

/// The index of the `]` closing the class opened at `open` (a `]` first in it is literal).
fn class_end(chars: &[char], open: usize) -> Result<usize, GlobError> {
    let mut i = open + 1;
    if matches!(chars.get(i), Some('!' | '^')) {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while i < chars.len() {
        if chars[i] == ']' {
            return Ok(i);
        }
        i += 1;
    }
    Err(GlobError::UnclosedClass)
}

/// The tokens of one brace-free pattern.
fn tokens(glob: &str) -> Result<Vec<Tok>, GlobError> {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        out.push(match chars[i] {
            '*' => Tok::Star,
            '?' => Tok::One,
            '[' => {
                let end = class_end(&chars, i)?;
                let tok = class(&chars[i + 1..end]);
                i = end;
                tok
            }
            c => Tok::Char(c),
        });
        i += 1;
    }
    Ok(out)
}

/// The class of the characters between `[` and `]`.
fn class(inner: &[char]) -> Tok {
    let (negated, inner) = match inner.first() {
        Some('!' | '^') => (true, &inner[1..]),
        _ => (false, inner),
    };
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        if i + 2 < inner.len() && inner[i + 1] == '-' {
            ranges.push((inner[i], inner[i + 2]));
            i += 3;
        } else {
            ranges.push((inner[i], inner[i]));
            i += 1;
        }
    }
    Tok::Class(negated, ranges)
}

/// Whether `t` matches the tokens `g` (backtracking to the last `*` only).
fn match_tokens(g: &[Tok], t: &[char]) -> bool {
    let one = |tok: &Tok, c: char| match tok {
        Tok::One => true,
        Tok::Char(x) => *x == c,
        Tok::Class(neg, ranges) => ranges.iter().any(|(a, b)| (*a..=*b).contains(&c)) != *neg,
        Tok::Star => false,
    };
    let (mut gi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if gi < g.len() && one(&g[gi], t[ti]) {
            gi += 1;
            ti += 1;
        } else if gi < g.len() && matches!(g[gi], Tok::Star) {
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
    g[gi..].iter().all(|c| matches!(c, Tok::Star))
}

#[cfg(test)]
mod tests {
    use super::{Glob, glob_match};

    #[test]
    fn globs() {
        let cases = [
            ("decode/8K/*", "decode/8K/c4", true),
            ("decode/8K/*", "decode/16K/c4", false),
            ("*/c1", "decode/64K/c1", true),
            ("prefill/?K", "prefill/8K", true),
            ("prefill/?K", "prefill/16K", false),
            ("*", "x", true),
            ("decode/8K/c[14]", "decode/8K/c4", true),
            ("decode/8K/c[14]", "decode/8K/c2", false),
            ("decode/8K/c[1-3]", "decode/8K/c2", true),
            ("decode/8K/c[!1-3]", "decode/8K/c2", false),
            ("decode/8K/c[^1-3]", "decode/8K/c8", true),
            ("{prefill,decode}/8K*", "prefill/8K", true),
            ("{prefill,decode}/8K*", "decode/8K/c1", true),
            ("{prefill,decode}/8K*", "load/8K/r1", false),
            ("decode/{8K,16K}/c{1,2}", "decode/16K/c2", true),
            ("decode/{8K,16K}/c{1,2}", "decode/16K/c4", false),
            ("{a,b{c,d}}/*", "bd/x", true),
            ("x[{]y", "x{y", true),
            ("[]]", "]", true),
        ];
        for (g, t, want) in cases {
            assert_eq!(glob_match(g, t), want, "{g} {t}");
        }
    }

    #[test]
    fn broken_globs_are_refused() {
        for (g, says) in [
            ("decode/[18K", "`[` is not closed"),
            ("{prefill,decode/8K", "`{` is not closed"),
            ("decode}", "closes no `{`"),
            (
                "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",
                "more than",
            ),
        ] {
            let e = Glob::parse(g).map(|_| ()).unwrap_err();
            assert!(e.to_string().contains(says), "{g}: {e}");
            assert!(!glob_match(g, "decode"));
        }
    }
}
