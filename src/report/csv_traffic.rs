//! `results.csv`'s columns of what a cell's requests carried (docs/reports.md): its images
//! (`images`), speculative decoding's counts (`spec_decode`) and its LoRA adapters
//! (`by_adapter`, `lora`), each empty for a cell without them.

use crate::results::Record;

/// The columns, in order.
pub(super) const COLUMNS: [&str; 17] = [
    "images_total",
    "images_per_request",
    "image_text_prompt_tokens",
    "image_server_prompt_tokens",
    "image_tokens",
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "spec_acceptance_rate",
    "spec_accepted_per_draft",
    "spec_drafted_per_output_token",
    "spec_source",
    "by_adapter_requests",
    "by_adapter_total_tok_s",
    "by_adapter_ttft_ms_p50",
    "lora_max_lora",
    "lora_running_adapters_max",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The columns' values of `r`.
pub(super) fn values(r: &Record) -> Vec<String> {
    let i = r.images;
    let s = r.spec_decode.as_ref();
    let rows = r.by_adapter.as_deref().unwrap_or_default();
    let each = |f: &dyn Fn(&crate::results::AdapterUse) -> String| {
        rows.iter()
            .map(|a| format!("{}={}", a.adapter, f(a)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    vec![
        opt(i.map(|i| i.total)),
        opt(i.map(|i| i.per_request)),
        opt(i.map(|i| i.text_prompt_tokens)),
        opt(i.and_then(|i| i.server_prompt_tokens)),
        opt(i.and_then(|i| i.image_tokens)),
        opt(s.and_then(|s| s.drafts)),
        opt(s.map(|s| s.draft_tokens)),
        opt(s.map(|s| s.accepted_tokens)),
        opt(s.map(|s| s.acceptance_rate)),
        opt(s.and_then(|s| s.accepted_per_draft)),
        opt(s.and_then(|s| s.drafted_per_output_token)),
        opt(s.map(|s| s.source.as_str())),
        each(&|a| a.requests.to_string()),
        each(&|a| opt(a.total_tok_s)),
        each(&|a| opt(a.ttft_ms_p50)),
        opt(r.lora.as_ref().and_then(|l| l.max_lora)),
        opt(r.lora.as_ref().map(|l| l.running_adapters_max)),
    ]
}
