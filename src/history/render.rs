//! `history trend` output, one `report::Exporter` per `--format`: JSON (`{"series": [...]}`),
//! CSV (one line per point), Markdown (one table per cell, a column per metric, flagged points
//! marked) and HTML (one chart per cell and metric, the 95% band where repeats exist, flagged
//! points coloured) — the HTML also being the trend page of `history site`.

use super::page::{short, value};
use super::trend::{Flag, Series, Trend};
use crate::report::svg::esc;
use crate::report::{Exported, Exporter, Json, ReportError, format};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How a trend is written (`history trend --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrendFormat {
    /// One table per cell.
    Markdown,
    /// One chart per cell and metric.
    Html,
    /// One line per point.
    Csv,
    /// `{"series": [...]}`.
    Json,
}

/// A trend's Markdown, HTML or CSV: the file it is written to and the function writing it.
struct Text(&'static str, fn(&[Series]) -> String);

impl Exporter<Trend> for Text {
    fn file_name(&self) -> &'static str {
        self.0
    }

    fn render(&self, t: &Trend) -> Result<String, ReportError> {
        Ok((self.1)(&t.series))
    }
}

/// The HTML page of `history trend`: its own title, no run linked.
fn page(series: &[Series]) -> String {
    html(series, "benchspec history trend", &|_| None)
}

impl Exported for Trend {
    type Format = TrendFormat;

    fn exporter(format: TrendFormat) -> &'static dyn Exporter<Trend> {
        match format {
            TrendFormat::Markdown => &Text("trend.md", markdown),
            TrendFormat::Html => &Text("trend.html", page),
            TrendFormat::Csv => &Text("trend.csv", csv),
            TrendFormat::Json => &Json("trend.json"),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Point;
    use crate::report::exporter;

    /// One series of one point, and one predicted run left out.
    fn trend() -> Trend {
        let point = Point {
            run: "r1".into(),
            started_at: "2026-12-07T10:00:00Z".into(),
            value: 1000.0,
            ci95: None,
            labels: BTreeMap::new(),
            flag: None,
            change_pct: None,
            p_value: None,
            repeats: Vec::new(),
        };
        Trend {
            series: vec![Series {
                spec: "s".into(),
                cell: "decode/1K/c1".into(),
                metric: "total_tok_s".into(),
                higher_is_better: true,
                points: vec![point],
            }],
            predicted: vec!["p1".into()],
        }
    }

    /// `--format` picks the exporter and its file `trend.<ext>`; the JSON is `{"series":
    /// [...]}` alone (the predicted runs are said on stderr, not in it), the CSV a header and
    /// a line per point.
    #[test]
    fn each_format_its_exporter_and_file() -> Result<(), Box<dyn std::error::Error>> {
        let t = trend();
        let formats = [
            TrendFormat::Markdown,
            TrendFormat::Html,
            TrendFormat::Csv,
            TrendFormat::Json,
        ];
        let names = formats.map(|f| exporter::<Trend>(f).file_name());
        assert_eq!(names, ["trend.md", "trend.html", "trend.csv", "trend.json"]);
        let json = exporter::<Trend>(TrendFormat::Json).render(&t)?;
        assert!(json.ends_with("}\n"), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json)?;
        let keys: Vec<&String> = v
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["series"]);
        assert_eq!(v["series"][0]["points"][0]["value"], 1000.0);
        let csv = exporter::<Trend>(TrendFormat::Csv).render(&t)?;
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2, "{csv}");
        assert!(
            lines[1].starts_with("s,decode/1K/c1,total_tok_s,r1,"),
            "{csv}"
        );
        let md = exporter::<Trend>(TrendFormat::Markdown).render(&t)?;
        assert!(md.contains("| `r1` | 2026-12-07T10:00:00Z |"), "{md}");
        Ok(())
    }
}
