//! The minijinja environment reports render in: the built-in templates compiled into the
//! binary, the formatting filters of [`super::format`] (also for user templates), inline SVG
//! charts as the global `charts`, strict undefined (a typo is an error naming the line), and
//! a loader that lets a user template include only files from its own folder.

use super::context::Context;
use super::{ReportError, format, svg, svg_xy};
use minijinja::value::{Serde, Value};
use minijinja::{Environment, UndefinedBehavior};
use std::path::{Component, Path, PathBuf};

/// The built-in templates, by name.
pub const BUILTIN: [(&str, &str); 3] = [
    ("report.md.j2", include_str!("../../templates/report.md.j2")),
    (
        "report.html.j2",
        include_str!("../../templates/report.html.j2"),
    ),
    (
        "compare.md.j2",
        include_str!("../../templates/compare.md.j2"),
    ),
];

/// An environment with the filters, strict undefined, and no templates yet.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.add_filter("tok_s", |v: Value| {
        number(&v).map_or(format::DASH.into(), format::tok_s)
    });
    env.add_filter("ms", |v: Value, d: Option<usize>| {
        number(&v).map_or(format::DASH.into(), |x| format::ms(x, d.unwrap_or(0)))
    });
    env.add_filter("num", |v: Value, d: Option<usize>| {
        number(&v).map_or(format::DASH.into(), |x| format::grouped(x, d.unwrap_or(1)))
    });
    env.add_filter("int", |v: Value| {
        number(&v).map_or(format::DASH.into(), |x| format::grouped(x, 0))
    });
    env.add_filter("secs", |v: Value, d: Option<usize>| {
        number(&v).map_or(format::DASH.into(), |x| format::secs(x, d))
    });
    env.add_filter("pct", |v: Value| {
        number(&v).map_or(format::DASH.into(), format::pct)
    });
    env.add_filter("ctx", |v: Value| {
        number(&v).map_or(format::DASH.into(), |x| format::ctx(x.max(0.0) as u64))
    });
    env.add_filter("markdown", |v: String| {
        Value::from_safe_string(inline_markdown(&v))
    });
    env
}

/// A line of the context's Markdown as HTML: escaped, with `code` spans and **bold**.
pub fn inline_markdown(text: &str) -> String {
    let escaped = super::svg::esc(text);
    let parts: Vec<&str> = escaped.split('`').collect();
    let mut out = String::with_capacity(escaped.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        match (i % 2 == 1, i + 1 < parts.len()) {
            (true, true) => out.push_str(&format!("<code>{part}</code>")),
            // An unpaired backtick stays as written.
            (true, false) => out.push_str(&format!("`{}", bold(part))),
            _ => out.push_str(&bold(part)),
        }
    }
    out
}

/// `**x**` as `<b>x</b>`, pairs only.
fn bold(text: &str) -> String {
    let parts: Vec<&str> = text.split("**").collect();
    let mut out = String::with_capacity(text.len());
    for (i, part) in parts.iter().enumerate() {
        match (i % 2 == 1, i + 1 < parts.len()) {
            (true, true) => out.push_str(&format!("<b>{part}</b>")),
            (true, false) => out.push_str(&format!("**{part}")),
            _ => out.push_str(part),
        }
    }
    out
}

/// A number, or `None` for none, undefined or anything else.
fn number(v: &Value) -> Option<f64> {
    if v.is_none() || v.is_undefined() {
        return None;
    }
    f64::try_from(v.clone()).ok()
}

/// The GPUs' mean power over a cell's window, added up.
fn gpu_power(r: &crate::results::Record) -> Option<f64> {
    r.gpu
        .as_ref()
        .filter(|g| !g.is_empty())
        .map(|g| g.iter().map(|x| x.power_w_mean).sum())
}

fn with_charts(env: &mut Environment<'static>, cx: &Context) {
    let charts = [
        ("prefill", svg::prefill(cx)),
        ("decode", svg::decode(cx, |r| r.total_tok_s, "total tok/s")),
        (
            "per_request",
            svg::decode(cx, |r| r.per_request_tok_s, "per-request tok/s"),
        ),
        (
            "load_ttft",
            svg_xy::latency(cx, |r| r.ttft_ms, "ttft", "TTFT ms"),
        ),
        ("ttft_by_turn", super::svg_turns::ttft_by_turn(cx)),
        (
            "load_tpot",
            svg_xy::latency(cx, |r| r.open.tpot_ms, "tpot", "TPOT ms"),
        ),
        ("power", svg::decode(cx, gpu_power, "GPU W")),
        (
            "tokens_per_joule",
            svg::decode(cx, |r| r.tokens_per_joule, "tok/J"),
        ),
    ];
    let mut map: std::collections::BTreeMap<&str, Value> = charts
        .into_iter()
        .map(|(k, v)| (k, Value::from_safe_string(v)))
        .collect();
    let per_context: Vec<Value> = svg::variants(cx)
        .into_iter()
        .map(Value::from_safe_string)
        .collect();
    map.insert("variants", Value::from(per_context));
    map.insert("capacity", captioned(super::svg_capacity::capacity(cx)));
    map.insert("frontier", captioned(super::svg_frontier::frontier(cx)));
    env.add_global("charts", Value::from(map));
}

/// Charts with their captions as a template list of `{caption, svg}`.
fn captioned(charts: Vec<super::svg_capacity::Captioned>) -> Value {
    let list: Vec<Value> = charts
        .into_iter()
        .map(|c| {
            let mut m = std::collections::BTreeMap::new();
            m.insert("caption", Value::from(c.caption));
            m.insert("svg", Value::from_safe_string(c.svg));
            Value::from(m)
        })
        .collect();
    Value::from(list)
}

/// An environment holding the built-in templates.
fn builtin_env() -> Result<Environment<'static>, ReportError> {
    let mut env = environment();
    for (n, source) in BUILTIN {
        env.add_template(n, source)
            .map_err(|e| template_error(&e))?;
    }
    Ok(env)
}

/// Render the built-in template `name` over `cx`.
pub fn render_builtin(name: &str, cx: &Context) -> Result<String, ReportError> {
    let mut env = builtin_env()?;
    with_charts(&mut env, cx);
    let t = env.get_template(name).map_err(|e| template_error(&e))?;
    t.render(Value::from(Serde(cx)))
        .map_err(|e| template_error(&e))
}

/// Render a built-in template over any serializable value (no charts).
pub fn render_value<T: serde::Serialize>(name: &str, value: &T) -> Result<String, ReportError> {
    let env = builtin_env()?;
    let t = env.get_template(name).map_err(|e| template_error(&e))?;
    t.render(Value::from(Serde(value)))
        .map_err(|e| template_error(&e))
}

/// The user template at `path`, read and compiled into an environment that may include files
/// from its folder only; with its file name and the name of the file it writes.
fn user_env(path: &Path) -> Result<(Environment<'static>, String, String), ReportError> {
    let file = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let Some(out) = file.strip_suffix(".j2").filter(|o| !o.is_empty()) else {
        return Err(ReportError::Template(format!(
            "`{}`: a report template's name ends in `.j2` (`summary.md.j2` writes `summary.md`)",
            path.display()
        )));
    };
    let out = out.to_string();
    let source = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut env = environment();
    env.set_loader(move |name| load_beside(&folder, name));
    env.add_template_owned(file.clone(), source)
        .map_err(|e| template_error(&e))?;
    Ok((env, file, out))
}

/// Render the user template at `path`; returns the output's file name (the template's name
/// without `.j2`) and the text.
pub fn render_file(path: &Path, cx: &Context) -> Result<(String, String), ReportError> {
    let (mut env, file, out) = user_env(path)?;
    with_charts(&mut env, cx);
    let t = env.get_template(&file).map_err(|e| template_error(&e))?;
    let text = t
        .render(Value::from(Serde(cx)))
        .map_err(|e| template_error(&e))?;
    Ok((out, text))
}

/// Read and compile the user template at `path` without rendering it: a missing file, a bad
/// name or a syntax error is found before a run starts rather than after it.
pub fn check_file(path: &Path) -> Result<(), ReportError> {
    user_env(path).map(|_| ())
}

/// The loader of user templates: a relative path inside `folder`, nothing above it.
fn load_beside(folder: &Path, name: &str) -> Result<Option<String>, minijinja::Error> {
    let rel = PathBuf::from(name);
    let inside = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "`{name}` is outside the template's folder; a template includes only files beside it"
            ),
        ));
    }
    match std::fs::read_to_string(folder.join(rel)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("cannot read `{name}`: {e}"),
        )),
    }
}

/// A template error as `template `NAME` line N: what`, with the failing chain.
fn template_error(e: &minijinja::Error) -> ReportError {
    let mut msg = match (e.name(), e.line()) {
        (Some(n), Some(l)) => format!("template `{n}` line {l}: "),
        (Some(n), None) => format!("template `{n}`: "),
        _ => "template: ".to_string(),
    };
    msg.push_str(&e.kind().to_string());
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(inner) = s.downcast_ref::<minijinja::Error>() {
            msg.push_str(&format!("\n  caused by: {}", template_error(inner)));
            break;
        }
        source = s.source();
    }
    ReportError::Template(msg)
}

#[cfg(test)]
mod tests {
    use super::inline_markdown;

    #[test]
    fn inline_markdown_is_escaped_html_with_code_and_bold() {
        assert_eq!(
            inline_markdown("`telemetry.gpu` is **off** <here> & `x"),
            "<code>telemetry.gpu</code> is <b>off</b> &lt;here&gt; &amp; `x"
        );
    }
}
