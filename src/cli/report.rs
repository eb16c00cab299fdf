//! `benchspec report`, `compare` and `merge`: render a run directory's reports from disk
//! alone, set two runs side by side, and join the shards of one plan.

use super::exit::Exit;
use super::output::Out;
use crate::Error;
use crate::report::{self, CompareFormat, ReportError, compare};
use crate::spec::Format;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// Options of `benchspec report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory (the `--out` of `benchspec run`).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// Which built-in reports to write (default: the spec's `report.formats`). Repeatable.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Vec<ReportFormat>,
    /// Also render this user template (`NAME.EXT.j2` writes `NAME.EXT`); one named like a
    /// built-in (`report.md.j2`) replaces it. Repeatable.
    #[arg(long, value_name = "FILE.j2")]
    pub template: Vec<PathBuf>,
    /// Where to write (default: the run directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A built-in report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// `report.md`.
    Markdown,
    /// `report.html`.
    Html,
    /// `results.csv`.
    Csv,
    /// `results.json` (the template context).
    Json,
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Format {
        match f {
            ReportFormat::Markdown => Format::Markdown,
            ReportFormat::Html => Format::Html,
            ReportFormat::Csv => Format::Csv,
            ReportFormat::Json => Format::Json,
        }
    }
}

/// Options of `benchspec compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The run to compare against.
    #[arg(value_name = "BASE_RUN")]
    pub base: PathBuf,
    /// The run to judge (omitted with `--variants`).
    #[arg(value_name = "NEW_RUN", required_unless_present = "variants")]
    pub new: Option<PathBuf>,
    /// Compare two engine variants of BASE_RUN: the first as the base, the second as new.
    #[arg(long, num_args = 2, value_names = ["BASE_VARIANT", "NEW_VARIANT"], conflicts_with = "new")]
    pub variants: Option<Vec<String>>,
    /// How a change is judged.
    #[command(flatten)]
    pub judge: Judging,
    /// `markdown` (a pull request comment, `$GITHUB_STEP_SUMMARY`) or `json`.
    #[arg(long, value_enum, default_value_t = CompareFormat::Markdown)]
    pub format: CompareFormat,
    /// Pass even when cells of the base run are missing from the new run (they are listed);
    /// without it a missing cell fails the comparison. A comparison with no cell in common
    /// fails either way.
    #[arg(long)]
    pub allow_missing: bool,
}

/// How a change is judged: `compare`'s options, which `history trend` and `site` share.
#[derive(Debug, Args, Clone)]
pub struct Judging {
    /// A rate down, or a latency up, by more than this is a regression.
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub threshold: String,
    /// With repeats (for `history`, also from 3 earlier runs on), a change counts only when
    /// the t-test gives p below this.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    pub alpha: f64,
    /// Latency changes smaller than this (ms) never count, however large in percent.
    #[arg(long, value_name = "MS", default_value_t = 1.0)]
    pub min_delta_ms: f64,
    /// Rate changes smaller than this (tok/s) never count.
    #[arg(long, value_name = "TOK_S", default_value_t = 1.0)]
    pub min_delta_tok_s: f64,
}

impl Judging {
    /// The rules these options give (a bad `--threshold` refused).
    pub fn rules(&self) -> Result<compare::Rules, ReportError> {
        Ok(compare::Rules {
            threshold_pct: compare::parse_threshold(&self.threshold)?,
            alpha: self.alpha,
            min_delta_ms: self.min_delta_ms,
            min_delta_tok_s: self.min_delta_tok_s,
        })
    }
}

/// Run `benchspec report`.
pub fn report(args: &ReportArgs, out: &Out) -> Result<i32, Error> {
    let run = report::load(&args.run_dir)?;
    let formats: Vec<Format> = if args.format.is_empty() {
        run.spec.report.formats.clone()
    } else {
        args.format.iter().map(|f| Format::from(*f)).collect()
    };
    let mut user = args.template.clone();
    if args.template.is_empty() {
        // The spec's templates: the copies the run kept, else beside the spec it was made from.
        let files = crate::spec::files::Files::Kept(args.run_dir.clone());
        let listed = &run.spec.report.templates;
        for t in crate::spec::files::templates(&files, &run.manifest.spec, listed) {
            if t.is_file() {
                user.push(t);
            } else {
                out.info(&format!(
                    "note: the spec's template `{}` is not there; skipped",
                    t.display()
                ));
            }
        }
    }
    let dir = args.out.clone().unwrap_or_else(|| args.run_dir.clone());
    let written = report::render(&run, &formats, &user, &dir)?;
    for w in written {
        out.info(&format!("wrote {}", w.display()));
    }
    Ok(0)
}

/// Run `benchspec compare`: exit 1 when a cell regressed, a base cell is missing from the new
/// run (unless `--allow-missing`), or no cell is in both.
pub fn compare_cmd(args: &CompareArgs, out: &Out) -> Result<i32, Error> {
    let rules = args.judge.rules()?;
    let (base, new) = compared_runs(args)?;
    let c = compare::compare(&base, &new, rules, args.allow_missing);
    out.print(&report::exporter::<compare::Comparison>(args.format).render(&c)?);
    Ok(Exit::findings(!c.passed).code())
}

/// The two runs `compare` judges: two run directories, or two variants of one.
fn compared_runs(
    args: &CompareArgs,
) -> Result<(crate::rundir::Run, crate::rundir::Run), ReportError> {
    let base = report::load(&args.base)?;
    match (&args.new, args.variants.as_deref()) {
        (Some(new), None) => Ok((base, report::load(new)?)),
        (None, Some([a, b])) => {
            let pick = |name: &str| {
                report::only_variant(&base, name).ok_or_else(|| ReportError::NoVariant {
                    dir: args.base.display().to_string(),
                    name: name.to_string(),
                    have: match report::variant_names(&base).as_slice() {
                        [] => "none (it was not a run of `engine.variants`)".to_string(),
                        names => names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                })
            };
            Ok((pick(a)?, pick(b)?))
        }
        _ => Err(ReportError::CompareUsage(
            "give two run directories, or one and `--variants BASE_VARIANT NEW_VARIANT`".into(),
        )),
    }
}

/// Run `benchspec merge`: join the shards, then render the spec's reports of the whole.
pub fn merge(dirs: &[PathBuf], dir: &Path, allow_missing: bool, out: &Out) -> Result<i32, Error> {
    let merged = crate::rundir::merge(dirs, dir, allow_missing)?;
    out.info(&format!(
        "merged {} run directories: {} records into {}",
        merged.parts,
        merged.records,
        dir.display()
    ));
    if !merged.missing_shards.is_empty() {
        let list: Vec<String> = merged.missing_shards.iter().map(u32::to_string).collect();
        out.info(&format!(
            "note: shard(s) {} of the plan were not given; merge again with them for the whole plan",
            list.join(", ")
        ));
    }
    if !merged.missing_cells.is_empty() {
        out.info(&format!(
            "note: {} cell(s) have no record and are shown as not run: {}",
            merged.missing_cells.len(),
            merged.missing_cells.join(", ")
        ));
    }
    if !merged.partial_cells.is_empty() {
        out.info(&format!(
            "note: {} split load cell(s) lack a shard's part and are marked invalid: {}",
            merged.partial_cells.len(),
            merged.partial_cells.join(", ")
        ));
    }
    if !merged.not_together.is_empty() {
        out.info(&format!(
            "warning: the shards did not run {} together (sending windows overlap under {:.0}%): marked invalid; run the shards with `--start-at`",
            merged.not_together.join(", "),
            crate::rundir::MIN_OVERLAP * 100.0
        ));
    }
    let run = report::load(dir)?;
    let files = crate::spec::files::Files::Kept(dir.to_path_buf());
    let templates: Vec<PathBuf> =
        crate::spec::files::templates(&files, &run.manifest.spec, &run.spec.report.templates)
            .into_iter()
            .filter(|t| t.is_file())
            .collect();
    for w in report::render(&run, &run.spec.report.formats, &templates, dir)? {
        out.info(&format!("wrote {}", w.display()));
    }
    Ok(0)
}
