//! What the history's pages share: the HTML frame and style, a value and a run id as the
//! pages write them — one for the trend pages (`render`), their charts (`chart`) and the
//! dashboard (`site`).

use crate::report::format;
use crate::report::svg::esc;

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1f2937;background:#fff}
@media(prefers-color-scheme:dark){body{color:#e5e7eb;background:#111827}a{color:#93c5fd}}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border-bottom:1px solid #8884;padding:.25rem .6rem;text-align:left}
code{font-size:92%}.bad{color:#dc2626}.ok{color:#059669}.charts{display:flex;flex-wrap:wrap;gap:1rem}
.predicted td{font-style:italic;opacity:.75}figure{margin:0}figcaption{font-weight:600}svg{width:360px;height:170px}";

/// An HTML page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><style>{CSS}</style></head>\n<body><h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

/// A value as reports write it.
pub fn value(metric: &str, v: f64) -> String {
    if metric.ends_with("_tok_s") {
        format::tok_s(v)
    } else if metric.contains("_ms_") {
        format::ms(v, if v < 20.0 { 1 } else { 0 })
    } else {
        format::grouped(v, 2)
    }
}

/// A run id shortened for tables.
pub fn short(run: &str) -> &str {
    run.get(..12).unwrap_or(run)
}
