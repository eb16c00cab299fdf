//! What a cell of `compare` carried besides its speed, in both runs: speculative decoding's
//! acceptance, the images in its prompts and its requests' spread over LoRA adapters. Each
//! explains a change of speed (a lower acceptance, more image tokens, another mix) and is
//! shown beside it; none is judged — a comparison's verdict stays its rates' and latencies'.

use crate::results::Record;
use crate::results::stats::round;
use schemars::JsonSchema;
use serde::Serialize;

/// Speculative decoding's acceptance rate (`spec_decode.acceptance_rate`) in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Acceptance {
    /// In the base run.
    pub base: Option<f64>,
    /// In the new run.
    pub new: Option<f64>,
    /// new − base, in points of acceptance (0 to 1).
    pub change: Option<f64>,
}

/// The acceptance of `b` and `n`, when either has it.
pub(super) fn acceptance(b: &Record, n: &Record) -> Option<Acceptance> {
    let rate = |r: &Record| r.spec_decode.as_ref().map(|s| s.acceptance_rate);
    let (base, new) = (rate(b), rate(n));
    (base.is_some() || new.is_some()).then(|| Acceptance {
        base,
        new,
        change: base.zip(new).map(|(x, y)| round(y - x, 4)),
    })
}

/// The images of a cell's prompts (`images` in the record) in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImagesChange {
    /// Images per request in the base run (`images.per_request`).
    pub base_per_request: Option<f64>,
    /// In the new run.
    pub new_per_request: Option<f64>,
    /// What the base run's server charged a request for its images, tokens
    /// (`images.image_tokens`: its prompt tokens with images less the text's).
    pub base_image_tokens: Option<f64>,
    /// The new run's.
    pub new_image_tokens: Option<f64>,
    /// new − base image tokens per request.
    pub image_tokens_change: Option<f64>,
}

/// The images of `b` and `n`, when either sent images.
pub(super) fn images(b: &Record, n: &Record) -> Option<ImagesChange> {
    if b.images.is_none() && n.images.is_none() {
        return None;
    }
    let per = |r: &Record| r.images.map(|i| i.per_request);
    let tokens = |r: &Record| r.images.and_then(|i| i.image_tokens);
    Some(ImagesChange {
        base_per_request: per(b),
        new_per_request: per(n),
        base_image_tokens: tokens(b),
        new_image_tokens: tokens(n),
        image_tokens_change: tokens(b).zip(tokens(n)).map(|(x, y)| round(y - x, 2)),
    })
}

/// One LoRA adapter's share of a cell (`by_adapter`) in both runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AdapterChange {
    /// The adapter's name.
    pub adapter: String,
    /// Its requests started in the base run's window; null when the base run did not send
    /// it any.
    pub base_requests: Option<u64>,
    /// In the new run's.
    pub new_requests: Option<u64>,
    /// Its output tok/s in the base run.
    pub base_tok_s: Option<f64>,
    /// In the new run.
    pub new_tok_s: Option<f64>,
    /// (new − base) / base tok/s, percent.
    pub tok_s_change_pct: Option<f64>,
}

/// Each adapter of `b` or `n` (the base run's order, then the new run's others), when
/// either spread its requests over adapters.
pub(super) fn adapters(b: &Record, n: &Record) -> Option<Vec<AdapterChange>> {
    if b.by_adapter.is_none() && n.by_adapter.is_none() {
        return None;
    }
    let (rows_b, rows_n) = (
        b.by_adapter.as_deref().unwrap_or_default(),
        n.by_adapter.as_deref().unwrap_or_default(),
    );
    let mut names: Vec<&str> = rows_b.iter().map(|a| a.adapter.as_str()).collect();
    for a in rows_n {
        if !names.contains(&a.adapter.as_str()) {
            names.push(&a.adapter);
        }
    }
    let find = |rows: &'_ [crate::results::AdapterUse], name: &str| {
        rows.iter().find(|a| a.adapter == name).cloned()
    };
    let each = names.into_iter().map(|name| {
        let (x, y) = (find(rows_b, name), find(rows_n, name));
        let (bt, nt) = (
            x.as_ref().and_then(|a| a.total_tok_s),
            y.as_ref().and_then(|a| a.total_tok_s),
        );
        AdapterChange {
            adapter: name.to_string(),
            base_requests: x.map(|a| a.requests),
            new_requests: y.map(|a| a.requests),
            base_tok_s: bt,
            new_tok_s: nt,
            tok_s_change_pct: bt
                .zip(nt)
                .filter(|(b, _)| *b != 0.0)
                .map(|(b, n)| round((n - b) / b * 100.0, 2)),
        }
    });
    Some(each.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{AdapterUse, ImageUse};

    fn rec() -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": "benchspec.result.v1", "cell": "load/1K/r4", "phase": "load",
            "context": 1024, "concurrency": 0, "status": "valid", "reasons": [],
            "started_at": "", "measured_s": 2.0, "prompt_tokens": 1024, "output_tokens": 100,
            "token_source": "usage", "total_tok_s": 100.0, "per_request_tok_s": null,
            "avg_active": 1.0, "requests_started": 2, "completed": 1, "errors": 0,
            "error_kinds": {}, "tbt_ms": null, "prefill_tok_s": null, "labels": {},
            "server_prompt_tokens": null, "ttft_ms": null
        }))
        .unwrap_or_else(|e| unreachable!("{e}"))
    }

    fn row(name: &str, requests: u64, tok_s: f64) -> AdapterUse {
        AdapterUse {
            adapter: name.into(),
            requests,
            total_tok_s: Some(tok_s),
            ttft_ms_p50: None,
        }
    }

    fn imaged(per_request: f64, image_tokens: f64) -> ImageUse {
        ImageUse {
            requests: 10,
            total: (per_request * 10.0) as u64,
            per_request,
            answered: 10,
            text_prompt_tokens: 1024.0,
            server_prompt_tokens: Some(1024.0 + image_tokens),
            image_tokens: Some(image_tokens),
        }
    }

    /// Worked by hand: 2 images of 192 tokens → 3 of 192 is +192 a request; adapter `a`
    /// 40 → 30 tok/s is −25%, `b` only in the base run, `c` only in the new one.
    #[test]
    fn images_and_adapters_side_by_side_only_where_a_run_has_them() {
        let (plain, mut b, mut n) = (rec(), rec(), rec());
        assert!(images(&plain, &plain).is_none() && adapters(&plain, &plain).is_none());
        b.images = Some(imaged(2.0, 384.0));
        n.images = Some(imaged(3.0, 576.0));
        let i = images(&b, &n).unwrap_or_else(|| unreachable!());
        assert_eq!(
            (i.base_per_request, i.new_per_request),
            (Some(2.0), Some(3.0))
        );
        assert_eq!(i.image_tokens_change, Some(192.0));
        let i = images(&b, &plain).unwrap_or_else(|| unreachable!());
        assert_eq!((i.new_per_request, i.image_tokens_change), (None, None));
        b.by_adapter = Some(vec![row("a", 20, 40.0), row("b", 10, 20.0)]);
        n.by_adapter = Some(vec![row("a", 15, 30.0), row("c", 15, 30.0)]);
        let got = adapters(&b, &n).unwrap_or_default();
        let view: Vec<_> = got
            .iter()
            .map(|a| {
                (
                    a.adapter.as_str(),
                    a.base_requests,
                    a.new_requests,
                    a.tok_s_change_pct,
                )
            })
            .collect();
        assert_eq!(
            view,
            [
                ("a", Some(20), Some(15), Some(-25.0)),
                ("b", Some(10), None, None),
                ("c", None, Some(15), None),
            ]
        );
    }
}
