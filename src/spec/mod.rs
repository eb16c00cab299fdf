//! The spec stage: read a YAML, TOML or JSON spec into a located tree, check it against the JSON
//! Schema and the meaning rules (docs/spec.md), and hand back the typed [`Spec`] — or every
//! problem, each located at `FILE:LINE:COL`. Nothing here touches the network or an engine.

pub mod adapters;
mod checks;
pub mod command;
pub mod dataset;
mod diag;
pub mod dialect;
mod doc;
mod engine;
pub mod files;
pub mod images;
mod json;
mod load;
mod model;
pub mod schema;
mod sessions;
mod sim_engine;
pub mod telemetry;
pub mod trace;
mod units;
pub mod variant;
mod workload;

pub use checks::Stage;
pub use diag::{Diagnostic, Problem, Severity};
pub use engine::{
    BalanceSpec, DEFAULT_SIM_PROFILE, EngineKind, EngineSpec, Launch, LaunchCommand,
    SimDialectSpec, SimEngine, SimFaults,
};
pub use images::{Amount, ImageFormat, ImageLimit, Images};
pub use load::{
    Arrivals, Capacity, DEFAULT_LOAD_DURATION, Distribution, Load, Objective, Rate, SearchAxis,
    Slo, SloMetric, Spread,
};
pub use model::{Hardware, HardwareType, Model, Spec};
pub use sessions::{DEFAULT_SESSIONS_DURATION, Sessions, Think, ThinkDist, Turns};
pub use units::{Size, Span, Tokens, UnitError};
pub use workload::{
    ApiSpec, DecodeMode, DecodeSpec, Format, Matrix, Phases, PrefillMode, PrefillSpec, Prefix,
    PromptCache, Report, ResumeRepeats, Validity, WorkloadSpec,
};

use std::path::Path;

/// Specs larger than this are refused before parsing: a spec is a page of settings.
pub const MAX_SPEC_BYTES: usize = 1 << 20;

/// Why a spec could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The spec path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The spec has problems; every one is listed.
    #[error("{} has {} error(s)", .path, .diagnostics.iter().filter(|d| d.severity == Severity::Error).count())]
    Invalid {
        /// The spec path.
        path: String,
        /// Errors and warnings, in source order.
        diagnostics: Vec<Diagnostic>,
    },
}

impl SpecError {
    /// The diagnostics to print (a read error has none).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            SpecError::Invalid { diagnostics, .. } => diagnostics,
            SpecError::Read { .. } => &[],
        }
    }
}

/// The source syntax of a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `.yaml` / `.yml`.
    Yaml,
    /// `.toml`.
    Toml,
    /// `.json`.
    Json,
}

impl Syntax {
    /// The syntax a file name implies.
    pub fn of(path: &str) -> Option<Syntax> {
        let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "yaml" | "yml" => Some(Syntax::Yaml),
            "toml" => Some(Syntax::Toml),
            "json" => Some(Syntax::Json),
            _ => None,
        }
    }
}

/// A spec that passed every check.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The path as given.
    pub path: String,
    /// The file's bytes as text, byte for byte (copied into the run directory).
    pub source: String,
    /// The typed spec.
    pub spec: Spec,
    /// Warnings that do not stop a run.
    pub warnings: Vec<Diagnostic>,
    /// Where the files the spec names are found.
    pub files: files::Files,
}

impl Loaded {
    /// The path of the file `name` (as the spec writes it) of kind `what`.
    pub fn resolve(&self, what: files::FileRef, name: &str) -> std::path::PathBuf {
        self.files.resolve(&self.path, what, name)
    }
}

/// Read and check the spec at `path` against the process environment.
pub fn load(path: &str, stage: Stage) -> Result<Loaded, SpecError> {
    load_in(path, stage, files::Files::BesideSpec)
}

/// [`load`], with the files the spec names looked for as `files` says (the copies a run
/// directory kept, for `run --resume`).
pub fn load_in(path: &str, stage: Stage, files: files::Files) -> Result<Loaded, SpecError> {
    let read_err = |source| SpecError::Read {
        path: path.to_string(),
        source,
    };
    // At most one byte past the cap is read: a huge file or an endless stream (a pipe) is
    // refused without being held in memory.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path).map_err(read_err)?,
            MAX_SPEC_BYTES as u64 + 1,
        ),
        &mut bytes,
    )
    .map_err(read_err)?;
    if bytes.len() > MAX_SPEC_BYTES {
        let d = Diagnostic::new(
            path,
            "",
            doc::Pos { line: 1, col: 1 },
            1,
            Severity::Error,
            format!("the spec is larger than {MAX_SPEC_BYTES} bytes; a spec is a page of settings"),
            String::new(),
        );
        return Err(SpecError::Invalid {
            path: path.to_string(),
            diagnostics: vec![d],
        });
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let valid = String::from_utf8_lossy(&e.as_bytes()[..offset]).into_owned();
            let pos = doc::LineIndex::new(&valid).pos(&valid, offset);
            let d = Diagnostic::new(
                path,
                &valid,
                pos,
                1,
                Severity::Error,
                "the file is not UTF-8 text".into(),
                String::new(),
            );
            return Err(SpecError::Invalid {
                path: path.to_string(),
                diagnostics: vec![d],
            });
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    parse_in(path, &text, stage, &env, files)
}

/// Where the value at JSON `pointer` stands in spec text `text` named `path`, as
/// `FILE:LINE:COL` (a check made after loading, e.g. against the server: an adapter it does
/// not list).
pub fn locate(path: &str, text: &str, pointer: &str) -> String {
    let root = read_tree(path, text).ok();
    let d = Problem::error(pointer, "").locate(path, text, root.as_ref());
    format!("{}:{}:{}", d.file, d.line, d.column)
}

/// Check spec text named `path` (its extension picks the syntax); pure apart from `env`.
pub fn parse(
    path: &str,
    text: &str,
    stage: Stage,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Loaded, SpecError> {
    parse_in(path, text, stage, env, files::Files::BesideSpec)
}

/// [`parse`], with the files the spec names looked for as `files` says.
pub fn parse_in(
    path: &str,
    text: &str,
    stage: Stage,
    env: &dyn Fn(&str) -> Option<String>,
    files: files::Files,
) -> Result<Loaded, SpecError> {
    let invalid = |diagnostics: Vec<Diagnostic>| SpecError::Invalid {
        path: path.to_string(),
        diagnostics,
    };
    let root = read_tree(path, text).map_err(|d| invalid(vec![*d]))?;
    let json = root.to_json();
    let mut problems = schema::check(&root, &json);
    problems.extend(checks::check(&json, stage, env));
    let resolve = |what, name: &str| files.resolve(path, what, name);
    problems.extend(dataset::check(&json, &resolve));
    problems.extend(trace::check(&json, &resolve));
    problems.extend(twin_check(&json, &resolve));
    problems.extend(dialect::check(&json, &resolve));
    let clean = problems.iter().all(|p| p.severity == Severity::Warning);
    let spec = match serde_json::from_value::<Spec>(json) {
        Ok(spec) => Some(spec),
        Err(e) if clean => {
            problems.push(Problem::error(
                "",
                format!("the spec does not fit the model: {e}"),
            ));
            None
        }
        Err(_) => None,
    };
    let mut diagnostics: Vec<Diagnostic> = problems
        .into_iter()
        .map(|p| p.locate(path, text, Some(&root)))
        .collect();
    diagnostics.sort_by(|a, b| (a.line, a.column, &a.message).cmp(&(b.line, b.column, &b.message)));
    diagnostics.dedup();
    match spec {
        Some(spec) if diagnostics.iter().all(|d| d.severity == Severity::Warning) => Ok(Loaded {
            path: path.to_string(),
            source: text.to_string(),
            spec,
            warnings: diagnostics,
            files,
        }),
        _ => Err(invalid(diagnostics)),
    }
}

/// The located tree of `text`, or the one diagnostic that says why there is none: too big,
/// an extension that names no syntax, or a syntax error.
fn read_tree(path: &str, text: &str) -> Result<doc::Node, Box<Diagnostic>> {
    let at = |pos: doc::Pos, message: String| {
        Box::new(Diagnostic::new(
            path,
            text,
            pos,
            1,
            Severity::Error,
            message,
            String::new(),
        ))
    };
    let start = doc::Pos { line: 1, col: 1 };
    if text.len() > MAX_SPEC_BYTES {
        return Err(at(
            start,
            format!(
                "the spec is {} bytes; a spec may be at most {MAX_SPEC_BYTES}",
                text.len()
            ),
        ));
    }
    let Some(syntax) = Syntax::of(path) else {
        return Err(at(
            start,
            "cannot tell the spec's syntax; name it `.yaml`, `.yml`, `.toml` or `.json`".into(),
        ));
    };
    let (parsed, what) = match syntax {
        Syntax::Yaml => (doc::parse_yaml(text), "invalid YAML"),
        Syntax::Toml => (doc::parse_toml(text), "invalid TOML"),
        Syntax::Json => (json::parse_json(text), "invalid JSON"),
    };
    parsed.map_err(|e| at(e.pos, format!("{what}: {}", e.message)))
}

/// `engine.sim.twin` must be a twin file the simulator can read.
fn twin_check(json: &serde_json::Value, resolve: &files::Resolve) -> Vec<diag::Problem> {
    let Some(name) = json
        .pointer("/engine/sim/twin")
        .and_then(serde_json::Value::as_str)
    else {
        return Vec::new();
    };
    let path = resolve(files::FileRef::Twin, name);
    let why = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            crate::sim::profile::from_twin(&text)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
    match why {
        Ok(()) => Vec::new(),
        Err(why) => vec![diag::Problem::error(
            "/engine/sim/twin",
            format!(
                "cannot read the twin `{name}` ({}): {why}; `benchspec fit RUN_DIR --out FILE` writes one",
                path.display()
            ),
        )],
    }
}
