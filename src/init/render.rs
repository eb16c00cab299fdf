//! The spec `init --from` writes: commented YAML that attaches to the server asked (no
//! `launch`), names its model, and sizes a small matrix and short windows to fit its context
//! limit, so the first `run` ends in about a minute.

use super::probe::Served;
use crate::spec::EngineKind;
use std::fmt::Write as _;

/// What the user chose beside what the server said.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// Each decode cell's measured window, as written (`5s`).
    pub duration: String,
    /// `workload.tokenizer`, when given.
    pub tokenizer: Option<String>,
    /// `engine.api_key_env`, when given.
    pub api_key_env: Option<String>,
}

/// The matrix sized to a context limit: output tokens, contexts and concurrencies.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// `workload.max_output_tokens`.
    pub output: u64,
    /// `matrix.contexts`, ascending.
    pub contexts: Vec<u64>,
    /// `matrix.concurrency`, ascending.
    pub concurrency: Vec<u64>,
}

/// Sizes that fit `max_model_len` (every context + the output, and every prefill prompt,
/// below it) and the server's slots.
pub fn sizes(max_model_len: Option<u64>, slots: Option<u64>) -> Sizes {
    let output = max_model_len.map_or(256, |m| (m / 16).clamp(16, 256));
    let fits = |c: u64| max_model_len.is_none_or(|m| c + output <= m && c < m);
    let largest = [4096, 2048, 1024, 512, 256, 128, 64, 32, 16]
        .into_iter()
        .find(|&c| fits(c))
        .unwrap_or(8);
    let contexts = if largest >= 256 {
        vec![largest / 4, largest]
    } else {
        vec![largest]
    };
    let most = slots.map_or(4, |s| s.clamp(1, 4));
    let mut concurrency = vec![1, most];
    concurrency.dedup();
    Sizes {
        output,
        contexts,
        concurrency,
    }
}

/// The spec's text.
pub fn render(s: &Served, c: &Choices) -> String {
    let size = sizes(s.max_model_len, s.slots);
    let mut t = String::new();
    header(&mut t, s);
    engine(&mut t, s, c);
    model(&mut t, s);
    workload(&mut t, s, c, &size);
    let list = |v: &[u64]| v.iter().map(|n| tokens(*n)).collect::<Vec<_>>().join(", ");
    let (contexts, concurrency) = (
        list(&size.contexts),
        size.concurrency
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    );
    let _ = write!(
        t,
        "\nmatrix:\n  contexts: [{contexts}]{}# prompt lengths: each + max_output_tokens fits the limit\n  concurrency: [{concurrency}]{}# requests in flight at once\n",
        pad(14 + contexts.len()),
        pad(17 + concurrency.len()),
    );
    let _ = write!(
        t,
        "\nphases:\n  prefill:\n    mode: decode-warmup         # prefill tok/s from each context's first warm-up request\n  decode:\n    mode: fixed-duration\n    duration: {}{}# each cell's measured window; 30s gives steadier numbers\n",
        c.duration,
        pad(14 + c.duration.len()),
    );
    t
}

fn header(t: &mut String, s: &Served) {
    let _ = writeln!(
        t,
        "# A first spec, written by `benchspec init --from {}`\n\
         # from what the server reported. Check it with `benchspec validate`, see its cells with\n\
         # `benchspec plan`, measure with `benchspec run`; then widen the matrix and lengthen the\n\
         # windows.\n\
         version: 1\nname: {}",
        s.base_url,
        quote(&format!(
            "{} on {} at {}",
            s.model,
            s.kind.as_str(),
            host(&s.base_url)
        )),
    );
    let _ = writeln!(
        t,
        "\n# hardware:                     # what the engine runs on, shown in reports: fill in\n\
         #   type: discrete-gpu          # discrete-gpu | integrated-gpu | cpu | accelerator\n\
         #   gpu: H200 NVL\n#   gpu_count: 1"
    );
}

fn engine(t: &mut String, s: &Served, c: &Choices) {
    let _ = writeln!(
        t,
        "\nengine:\n  kind: {}{}# recognised by {}",
        s.kind.as_str(),
        pad(8 + s.kind.as_str().len()),
        s.kind_from
    );
    match &s.version {
        Some(v) => {
            let _ = writeln!(
                t,
                "  version: {}{}# from {}; a run warns when the server's differs",
                quote(v),
                pad(11 + quote(v).len()),
                s.version_from
            );
        }
        None => t.push_str(
            "  # version: 1.2.3              # the server did not say; recorded in reports\n",
        ),
    }
    if let Some(q) = &s.quantization {
        let _ = writeln!(t, "  quantization: {}", quote(q));
    }
    let _ = writeln!(
        t,
        "  base_url: {}{}# attach to this server: no `launch`, benchspec starts nothing",
        quote(&s.base_url),
        pad(12 + quote(&s.base_url).len())
    );
    match &c.api_key_env {
        Some(name) => {
            let _ = writeln!(
                t,
                "  api_key_env: {}{}# the NAME of the variable holding the key",
                quote(name),
                pad(15 + quote(name).len())
            );
        }
        None => t.push_str(
            "  # api_key_env: API_KEY        # the NAME of a variable holding the key, if it needs one\n",
        ),
    }
}

fn model(t: &mut String, s: &Served) {
    let others: Vec<String> = s
        .models
        .iter()
        .filter(|m| **m != s.model)
        .map(|m| format!("`{m}`"))
        .collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        format!("; it also serves {}", others.join(", "))
    };
    let _ = writeln!(
        t,
        "\nmodel:\n  served_name: {}{}# from `/v1/models`{also}",
        quote(&s.model),
        pad(15 + quote(&s.model).len())
    );
    match s.max_model_len {
        Some(m) => {
            let _ = writeln!(
                t,
                "  max_model_len: {m}{}# from {}: prompt + output tokens",
                pad(17 + m.to_string().len()),
                s.max_model_len_from
            );
        }
        None => t.push_str(
            "  # max_model_len: 8192          # not reported here; the run asks the server again\n",
        ),
    }
}

fn workload(t: &mut String, s: &Served, c: &Choices, size: &Sizes) {
    let _ = writeln!(
        t,
        "\nworkload:\n  api: completions              # completions | chat\n  max_output_tokens: {}{}# tokens each decode request generates",
        size.output,
        pad(21 + size.output.to_string().len())
    );
    if s.kind == EngineKind::Openai {
        t.push_str(
            "  ignore_eos: false             # hosted APIs refuse it: output lengths vary\n",
        );
    }
    match &c.tokenizer {
        Some(path) => {
            let _ = writeln!(
                t,
                "  tokenizer: {}{}# prompts are sized with this tokenizer, not the server's",
                quote(path),
                pad(13 + quote(path).len())
            );
        }
        None => t.push_str(
            "  tokenizer: server             # the engine's `/tokenize` sizes the prompts\n",
        ),
    }
}

/// Spaces that bring a comment to column 33 (at least one).
fn pad(used: usize) -> String {
    " ".repeat(32usize.saturating_sub(used).max(1))
}

/// A token count as a spec writes it (`4K`, `512`).
fn tokens(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}K", n / 1024)
    } else {
        n.to_string()
    }
}

/// A YAML double-quoted scalar (JSON's string syntax is YAML's).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// `host:port` of a URL.
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fit_the_context_limit() {
        let s = sizes(Some(131072), None);
        assert_eq!(
            (s.output, s.contexts, s.concurrency),
            (256, vec![1024, 4096], vec![1, 4])
        );
        let s = sizes(Some(4096), Some(2));
        assert_eq!(
            (s.output, s.contexts, s.concurrency),
            (256, vec![512, 2048], vec![1, 2])
        );
        let s = sizes(Some(512), Some(1));
        assert_eq!(
            (s.output, s.contexts, s.concurrency),
            (32, vec![64, 256], vec![1])
        );
        for m in [40, 100, 300, 1000, 5000, 9000] {
            let s = sizes(Some(m), None);
            for c in &s.contexts {
                assert!(c + s.output <= m && *c < m, "{m}: {s:?}");
            }
        }
    }
}
