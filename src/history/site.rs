//! `history site --out DIR`: a static dashboard, self-contained (inline CSS and SVG, no
//! script, no server), publishable as GitHub Pages — `index.html` (every spec with its runs
//! and the regressions at its newest point; every run, newest first, linked to its report),
//! one trend page per spec, and each run's own HTML report under `runs/<run>/`, rendered from
//! its directory when that is still where it was added.

use super::page::{page, short};
use super::trend::{Series, TrendQuery};
use super::{HistoryError, HistoryRun, Store};
use crate::report::svg::esc;
use crate::spec::Format;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A spec's page name: `spec-<name with only letters, digits and dashes>.html`.
fn slug(spec: &str) -> String {
    let s: String = spec
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("spec-{}.html", s.trim_matches('-'))
}

/// Render run `r`'s own HTML report into `out/runs/<run>/`, from its directory.
fn run_report(r: &HistoryRun, out: &Path) -> Option<String> {
    let run = crate::report::load(Path::new(&r.path)).ok()?;
    let dir = out.join("runs").join(&r.run);
    crate::report::render(&run, &[Format::Html], &[], &dir).ok()?;
    Some(format!(
        "runs/{}/{}",
        r.run,
        crate::report::output_name(Format::Html)
    ))
}

/// What `history site` wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The index page.
    pub index: PathBuf,
    /// Spec pages.
    pub specs: usize,
    /// Runs listed.
    pub runs: usize,
    /// Runs whose report was linked (the others' directories have moved).
    pub linked: usize,
}

fn write(path: &Path, text: &str) -> Result<(), HistoryError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| HistoryError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| HistoryError::Write {
        path: path.to_path_buf(),
        source,
    })
}

type Link<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The spec table of the index, writing each spec's trend page.
fn specs(
    runs: &[HistoryRun],
    series: &[Series],
    out: &Path,
    link: Link,
) -> Result<(String, usize), HistoryError> {
    let mut by_spec: BTreeMap<&str, Vec<Series>> = BTreeMap::new();
    for s in series {
        by_spec.entry(&s.spec).or_default().push(s.clone());
    }
    let mut body = String::from(
        "<h2>Specs</h2><table><tr><th>Spec</th><th>Measured runs</th><th>Newest run</th><th>Regressions at the newest point</th></tr>\n",
    );
    for (spec, group) in &by_spec {
        let spec_runs: Vec<&HistoryRun> = runs
            .iter()
            .filter(|r| r.spec == *spec && r.predicted_by.is_none())
            .collect();
        let regs = super::render::regressions(group).len();
        let newest = spec_runs
            .last()
            .map_or(String::new(), |r| r.started_at.clone());
        let class = if regs > 0 { "bad" } else { "ok" };
        let _ = writeln!(
            body,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"{class}\">{regs}</td></tr>",
            slug(spec),
            esc(spec),
            spec_runs.len(),
            esc(&newest),
        );
        let page_html = super::render::html(group, &format!("{spec} — trends"), link);
        let back = "<p><a href=\"index.html\">← all specs</a></p><h1>";
        write(&out.join(slug(spec)), &page_html.replace("<h1>", back))?;
    }
    body.push_str("</table>\n");
    Ok((body, by_spec.len()))
}

/// The run table of the index, newest first, each linked to its report.
fn run_table(runs: &[HistoryRun], link: Link) -> String {
    let mut body = String::from(
        "<h2>Runs</h2><table><tr><th>Run</th><th>Spec</th><th>Started</th><th>Engine</th><th>Cells</th><th>Report</th></tr>\n",
    );
    for r in runs.iter().rev() {
        let report = match link(&r.run) {
            Some(href) => format!("<a class=\"report\" href=\"{}\">report</a>", esc(&href)),
            None => format!("<span title=\"{}\">moved</span>", esc(&r.path)),
        };
        // A predicted run is marked (its cells say by which twin), and in no trend.
        let class = if r.predicted_by.is_some() {
            " class=\"predicted\""
        } else {
            ""
        };
        let engine = format!(
            "{} {}",
            r.engine.kind,
            r.engine.version.clone().unwrap_or_default()
        );
        let _ = writeln!(
            body,
            "<tr{class}><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{report}</td></tr>",
            esc(short(&r.run)),
            esc(&r.spec),
            esc(&r.started_at),
            esc(engine.trim()),
            esc(&r.cells_text()),
        );
    }
    body.push_str("</table>\n");
    body
}

/// Write the dashboard of `store` into `out`.
pub async fn build(store: &Store, out: &Path, q: &TrendQuery) -> Result<Written, HistoryError> {
    let runs = super::list::list(store, None).await?;
    let series = super::trend::trend(store, q).await?.series;
    let links: BTreeMap<String, String> = runs
        .iter()
        .filter_map(|r| Some((r.run.clone(), run_report(r, out)?)))
        .collect();
    let link = |run: &str| links.get(run).cloned();
    let (spec_table, specs_written) = specs(&runs, &series, out, &link)?;
    let body = spec_table + &run_table(&runs, &link);
    let index = out.join("index.html");
    write(&index, &page("benchspec history", &body))?;
    Ok(Written {
        index,
        specs: specs_written,
        runs: runs.len(),
        linked: links.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::chart::chart;
    use crate::history::trend::{Flag, Point};

    fn series(ci: &[Option<f64>], flags: &[Option<Flag>]) -> Series {
        let points = ci
            .iter()
            .zip(flags)
            .enumerate()
            .map(|(i, (c, f))| Point {
                run: format!("run{i}"),
                started_at: format!("2026-12-0{}T00:00:00Z", i + 1),
                value: 100.0 + i as f64,
                ci95: *c,
                labels: Default::default(),
                flag: *f,
                change_pct: None,
                p_value: None,
                repeats: Vec::new(),
            })
            .collect();
        Series {
            spec: "s".into(),
            cell: "decode/1K/c4".into(),
            metric: "total_tok_s".into(),
            higher_is_better: true,
            points,
        }
    }

    #[test]
    fn a_chart_has_a_band_with_repeats_and_marks_flags() {
        let none = |_: &str| None;
        let cases = [
            (vec![Some(2.0), Some(3.0), Some(2.5)], true),
            (vec![None, None, None], false),
            (vec![Some(2.0), None, None], false),
        ];
        for (ci, band) in cases {
            let svg = chart(&series(&ci, &[None, None, Some(Flag::Regression)]), &none);
            assert_eq!(svg.contains("class=\"band\""), band, "{ci:?}");
            assert_eq!(svg.matches("class=\"regression\"").count(), 1);
            assert_eq!(svg.matches("<circle").count(), 3);
        }
        let linked = chart(
            &series(&[None, None], &[None, Some(Flag::Improvement)]),
            &|r: &str| Some(format!("runs/{r}/report.html")),
        );
        assert!(linked.contains("href=\"runs/run1/report.html\""));
        assert!(linked.contains("class=\"improvement\""));
    }

    #[test]
    fn spec_pages_have_safe_names() {
        assert_eq!(
            slug("gemma-4-E2B-it on H200 NVL 141GB"),
            "spec-gemma-4-e2b-it-on-h200-nvl-141gb.html"
        );
        assert_eq!(slug("../x"), "spec-x.html");
    }
}
