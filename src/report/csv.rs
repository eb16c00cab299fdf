//! `results.csv`: one row per cell in plan order (its engine variant second), the record's fields as columns (latency
//! summaries flattened to `ttft_ms_p50` and so on, `reasons` joined with `; `, `error_kinds`
//! and `labels` as `key=value` pairs, then the client's footprint as `client_cpu_busy` …, the
//! open-loop fields, the engine's view as `server_…`, the GPUs added up, and the images,
//! speculative decoding and LoRA adapters of `csv_traffic`). A planned cell
//! without a record is a row with status `missing`.

use super::ReportError;
use super::context::Context;
use crate::results::TokenSource;
use crate::results::stats::Summary;

const STATS: [&str; 7] = ["mean", "min", "p50", "p90", "p95", "p99", "max"];
const CLIENT: [&str; 4] = ["cpu_busy", "threads", "rss_mb", "cpu_s"];
/// Open-loop fields, as the record names them.
const OPEN: [&str; 15] = [
    "rate_offered",
    "rate_sent",
    "rate_achieved",
    "saturated",
    "arrivals",
    "arrival_cv",
    "peak_active",
    "input_tokens_mean",
    "output_tokens_mean",
    "goodput_rps",
    "slo_fraction",
    "slo_met",
    "search",
    "capacity",
    "capacity_bound",
];
/// Open-loop latency summaries.
const OPEN_STATS: [&str; 5] = [
    "tpot_ms",
    "itl_ms",
    "e2e_ms",
    "queue_ms",
    "send_lateness_ms",
];
/// The engine's view (`server_…`).
const SERVER: [&str; 9] = [
    "running_mean",
    "running_max",
    "waiting_max",
    "kv_usage_max",
    "prefix_hit_rate",
    "preemptions",
    "ttft_ms_p50",
    "itl_ms_p50",
    "source",
];
/// Shared prefixes and sessions: the expected prefix reuse, the sessions' counts, and each
/// turn's figures in turn order, `; `-separated.
const SESSIONS: [&str; 8] = [
    "prefix_hit_expected",
    "sessions_started",
    "sessions_completed",
    "sessions_turns_mean",
    "sessions_ended_at_max_len",
    "by_turn_input_tokens_mean",
    "by_turn_ttft_ms_p50",
    "by_turn_tpot_ms_p50",
];

/// The GPUs, added up over all of them; the cost; the warnings.
const GPU: [&str; 7] = [
    "gpu_count",
    "gpu_power_w_mean",
    "gpu_power_w_max",
    "gpu_energy_j",
    "tokens_per_joule",
    "usd_per_mtok",
    "warnings",
];

/// The frontier (`frontier.rs`): tok/s per GPU, on the tok/s-per-GPU and $/Mtok frontiers
/// (empty for a cell that is no point).
const FRONTIER: [&str; 3] = ["tok_s_per_gpu", "on_frontier", "on_cost_frontier"];

fn header() -> Vec<String> {
    let mut h: Vec<String> = [
        "cell",
        "variant",
        "phase",
        "context",
        "concurrency",
        "status",
        "reasons",
        "started_at",
        "measured_s",
        "prompt_tokens",
        "server_prompt_tokens",
        "output_tokens",
        "token_source",
        "total_tok_s",
        "per_request_tok_s",
        "avg_active",
        "requests_started",
        "completed",
        "errors",
        "error_kinds",
        "prefill_tok_s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for which in ["ttft_ms", "tbt_ms"] {
        h.extend(STATS.iter().map(|s| format!("{which}_{s}")));
    }
    h.push("labels".into());
    h.extend(CLIENT.iter().map(|s| format!("client_{s}")));
    h.extend(OPEN.iter().map(|s| s.to_string()));
    for which in OPEN_STATS {
        h.extend(STATS.iter().map(|s| format!("{which}_{s}")));
    }
    h.extend(SERVER.iter().map(|s| format!("server_{s}")));
    h.extend(GPU.iter().map(|s| s.to_string()));
    h.extend(SESSIONS.iter().map(|s| s.to_string()));
    h.extend(super::csv_traffic::COLUMNS.iter().map(|s| s.to_string()));
    h.extend(FRONTIER.iter().map(|s| s.to_string()));
    h
}

/// The prefix and session columns of `r`.
fn sessions(r: &crate::results::Record) -> Vec<String> {
    let s = r.sessions;
    let turns = r.by_turn.as_deref().unwrap_or_default();
    let each = |f: &dyn Fn(&crate::results::TurnStats) -> Option<f64>| {
        turns
            .iter()
            .map(|t| opt(f(t)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    vec![
        opt(r.prefix_hit_expected),
        opt(s.map(|s| s.started)),
        opt(s.map(|s| s.completed)),
        opt(s.and_then(|s| s.turns_mean)),
        opt(s.map(|s| s.ended_at_max_len)),
        each(&|t| t.input_tokens_mean),
        each(&|t| t.ttft_ms.map(|s| s.p50)),
        each(&|t| t.tpot_ms.map(|s| s.p50)),
    ]
}

/// A JSON scalar as a cell: null empty, strings bare.
fn scalar(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The open-loop, server and GPU columns of `r`.
fn observed(r: &crate::results::Record) -> Vec<String> {
    let open = serde_json::to_value(&r.open).unwrap_or_default();
    let mut row: Vec<String> = OPEN.iter().map(|k| scalar(open.get(*k))).collect();
    for which in OPEN_STATS {
        let s = open
            .get(which)
            .and_then(|v| serde_json::from_value::<Summary>(v.clone()).ok());
        row.extend(stats(s));
    }
    let server = serde_json::to_value(&r.server).unwrap_or_default();
    row.extend(SERVER.iter().map(|k| scalar(server.get(*k))));
    let gpus = r.gpu.as_deref().unwrap_or_default();
    let sum = |f: fn(&crate::results::GpuUse) -> f64| {
        (!gpus.is_empty()).then(|| gpus.iter().map(f).sum::<f64>())
    };
    row.extend([
        opt((!gpus.is_empty()).then_some(gpus.len())),
        opt(sum(|g| g.power_w_mean)),
        opt(sum(|g| g.power_w_max)),
        opt(sum(|g| g.energy_j)),
        opt(r.tokens_per_joule),
        opt(r.usd_per_mtok),
        r.warnings.join("; "),
    ]);
    row
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn stats(s: Option<Summary>) -> Vec<String> {
    match s {
        Some(s) => [s.mean, s.min, s.p50, s.p90, s.p95, s.p99, s.max]
            .iter()
            .map(f64::to_string)
            .collect(),
        None => vec![String::new(); STATS.len()],
    }
}

fn pairs<V: ToString>(m: &std::collections::BTreeMap<String, V>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", v.to_string()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The CSV text of `cx`'s cells.
pub fn render(cx: &Context) -> Result<String, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| ReportError::Template(format!("results.csv: {e}"));
    w.write_record(header()).map_err(err)?;
    for c in &cx.cells {
        let mut row = vec![
            c.id.clone(),
            c.variant.clone().unwrap_or_default(),
            c.phase.as_str().to_string(),
            c.context.to_string(),
            c.concurrency.to_string(),
            c.status.as_str().to_string(),
        ];
        match &c.record {
            Some(r) => {
                row.extend([
                    r.reasons.join("; "),
                    r.started_at.clone(),
                    opt(r.measured_s),
                    r.prompt_tokens.to_string(),
                    opt(r.server_prompt_tokens),
                    opt(r.output_tokens),
                    opt(r.token_source.map(TokenSource::as_str)),
                    opt(r.total_tok_s),
                    opt(r.per_request_tok_s),
                    opt(r.avg_active),
                    r.requests_started.to_string(),
                    r.completed.to_string(),
                    r.errors.to_string(),
                    pairs(&r.error_kinds),
                    opt(r.prefill_tok_s),
                ]);
                row.extend(stats(r.ttft_ms));
                row.extend(stats(r.tbt_ms));
                row.push(pairs(&r.labels));
                let c = r.client;
                row.extend([
                    opt(c.map(|c| c.cpu_busy)),
                    opt(c.map(|c| c.threads)),
                    opt(c.and_then(|c| c.rss_mb)),
                    opt(c.map(|c| c.cpu_s)),
                ]);
                row.extend(observed(r));
                row.extend(sessions(r));
                row.extend(super::csv_traffic::values(r));
            }
            None => row.resize(header().len() - FRONTIER.len(), String::new()),
        }
        row.extend([
            opt(c.tok_s_per_gpu),
            opt(c.on_frontier),
            opt(c.on_cost_frontier),
        ]);
        w.write_record(&row).map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| ReportError::Template(format!("results.csv: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
