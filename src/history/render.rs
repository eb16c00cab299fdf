//! `history trend` output: JSON (`{"series": [...]}`), CSV (one line per point), Markdown
//! (one table per cell, a column per metric, flagged points marked) and HTML (one chart per
//! cell and metric, the 95% band where repeats exist, flagged points coloured) — the HTML
//! also being the trend page of `history site`.

use super::page::{short, value};
use super::trend::{Flag, Series};
use crate::report::format;
use crate::report::svg::esc;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The JSON document.
#[derive(Serialize)]
struct Doc<'a> {
    series: &'a [Series],
}

/// `{"series": [...]}`.
pub fn json(series: &[Series]) -> String {
    serde_json::to_string_pretty(&Doc { series }).unwrap_or_default() + "\n"
}

/// One line per point.
pub fn csv(series: &[Series]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "spec",
        "cell",
        "metric",
        "run",
        "started_at",
        "value",
        "ci95",
        "change_pct",
        "p_value",
        "flag",
        "labels",
    ]);
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for s in series {
        for p in &s.points {
            let _ = w.write_record([
                s.spec.clone(),
                s.cell.clone(),
                s.metric.clone(),
                p.run.clone(),
                p.started_at.clone(),
                p.value.to_string(),
                num(p.ci95),
                num(p.change_pct),
                num(p.p_value),
                flag_word(p.flag).to_string(),
                serde_json::to_string(&p.labels).unwrap_or_default(),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn flag_word(f: Option<Flag>) -> &'static str {
    match f {
        Some(Flag::Regression) => "regression",
        Some(Flag::Improvement) => "improvement",
        None => "",
    }
}

/// The regressions at the newest point of a series, in words, naming the run.
pub fn regressions(series: &[Series]) -> Vec<String> {
    series
        .iter()
        .filter_map(|s| {
            let p = s.newest_regression()?;
            Some(format!(
                "{} `{}` {}: {} ({}) in run {} started {}",
                s.spec,
                s.cell,
                s.metric,
                value(&s.metric, p.value),
                format::pct(p.change_pct.unwrap_or_default()),
                p.run,
                p.started_at
            ))
        })
        .collect()
}

type Cells<'a> = BTreeMap<(&'a str, &'a str), Vec<&'a Series>>;

fn by_cell(series: &[Series]) -> Cells<'_> {
    let mut out: Cells = BTreeMap::new();
    for s in series {
        out.entry((&s.spec, &s.cell)).or_default().push(s);
    }
    out
}

/// One table per spec and cell: a row per run, a column per metric.
pub fn markdown(series: &[Series]) -> String {
    let mut out = String::from("# benchspec history trend\n\n");
    let regs = regressions(series);
    if regs.is_empty() {
        out.push_str("No regression at the newest point of any series.\n");
    } else {
        let _ = writeln!(
            out,
            "**{} regression(s) at the newest point:**\n",
            regs.len()
        );
        for r in &regs {
            let _ = writeln!(out, "- {r}");
        }
    }
    for ((spec, cell), group) in by_cell(series) {
        let _ = write!(out, "\n## {spec} · `{cell}`\n\n| Run | Started |");
        for s in &group {
            let _ = write!(out, " {} |", s.metric);
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(group.len()));
        out.push('\n');
        for (run, started) in runs(&group) {
            let _ = write!(out, "| `{}` | {started} |", short(run));
            for s in &group {
                let cell = s
                    .points
                    .iter()
                    .find(|p| p.run == run)
                    .map_or("—".into(), |p| {
                        let v = value(&s.metric, p.value);
                        let ci = p
                            .ci95
                            .map(|c| format!(" ± {}", value(&s.metric, c)))
                            .unwrap_or_default();
                        match p.flag {
                            Some(Flag::Regression) => format!(
                                "**{v}{ci} ▼ {}**",
                                format::pct(p.change_pct.unwrap_or_default())
                            ),
                            Some(Flag::Improvement) => {
                                format!(
                                    "{v}{ci} ▲ {}",
                                    format::pct(p.change_pct.unwrap_or_default())
                                )
                            }
                            None => format!("{v}{ci}"),
                        }
                    });
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
    }
    out
}

/// The runs of a cell's series, in the first series' order.
fn runs<'a>(group: &[&'a Series]) -> Vec<(&'a str, &'a str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for s in group {
        for p in &s.points {
            if !out.iter().any(|(r, _)| *r == p.run) {
                out.push((&p.run, &p.started_at));
            }
        }
    }
    out
}

/// A self-contained HTML page: the summary, then per cell its charts.
pub fn html(series: &[Series], title: &str, run_link: &dyn Fn(&str) -> Option<String>) -> String {
    let mut body = String::new();
    let regs = regressions(series);
    if regs.is_empty() {
        body.push_str("<p class=\"ok\">No regression at the newest point of any series.</p>\n");
    } else {
        let _ = writeln!(
            body,
            "<p class=\"bad\"><b>{} regression(s) at the newest point:</b></p><ul>",
            regs.len()
        );
        for r in &regs {
            let _ = writeln!(body, "<li>{}</li>", esc(&r.replace('`', "")));
        }
        body.push_str("</ul>\n");
    }
    for ((spec, cell), group) in by_cell(series) {
        let _ = writeln!(
            body,
            "<section><h2>{} · <code>{}</code></h2><div class=\"charts\">",
            esc(spec),
            esc(cell)
        );
        for s in &group {
            body.push_str(&super::chart::chart(s, run_link));
        }
        body.push_str("</div></section>\n");
    }
    super::page::page(title, &body)
}
