//! `/metrics`, `/v1/models`, `/version`, `/tokenize` and cached-token blocks against a real
//! vLLM 0.32's.

use super::{call, json, shape, sim};
use crate::telemetry::server::wanted;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// One metric family of an exposition: its `# TYPE`, its samples' label names (`le` aside)
/// and a histogram's bucket bounds.
#[derive(Debug, Default, PartialEq)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
    bounds: Vec<f64>,
}

/// The `vllm:` families of a Prometheus text, by the name `# TYPE` gives them.
fn families(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (parts.next(), parts.next()) {
                out.entry(name.to_string()).or_default().kind = kind.to_string();
            }
        }
    }
    for sample in crate::telemetry::prom::parse(text) {
        let name = sample.name.as_str();
        if !name.starts_with("vllm:") {
            continue;
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| name.strip_suffix(s))
            .find(|base| out.get(*base).is_some_and(|f| f.kind == "histogram"))
            .unwrap_or(name);
        let Some(f) = out.get_mut(family) else {
            panic!("a sample of no # TYPE family: {name}");
        };
        for (k, v) in &sample.labels {
            if k == "le" {
                if let Ok(b) = v.parse::<f64>() {
                    f.bounds.push(b);
                }
            } else {
                f.labels.insert(k.clone());
            }
        }
    }
    out.retain(|name, _| name.starts_with("vllm:"));
    for f in out.values_mut() {
        f.bounds.dedup();
    }
    out
}

/// Every `vllm:` family the simulator serves is a real vLLM's with the same type, label
/// names and bucket bounds (`cache_config_info`: a few of its labels); every family
/// benchspec reads that vLLM serves, and the histograms a reader compares, are served.
#[tokio::test(start_paused = true)]
async fn metrics_are_vllms_names_types_labels_and_buckets() {
    let real = families(vllm_fixture!("metrics-after.txt"));
    let sim = sim(16);
    let body =
        json!({"model": "tiny", "prompt": "one two three", "max_tokens": 4, "ignore_eos": true});
    assert_eq!(call(&sim, "/v1/completions", Some(&body)).await.0, 200);
    let (status, text) = call(&sim, "/metrics", None).await;
    assert_eq!(status, 200);
    let served = families(&text);
    for (name, f) in &served {
        let Some(r) = real.get(name) else {
            panic!("the simulator serves `{name}`, which vLLM 0.32 does not");
        };
        assert_eq!(f.kind, r.kind, "{name}: type");
        assert_eq!(f.bounds, r.bounds, "{name}: bucket bounds");
        if name == "vllm:cache_config_info" {
            assert!(f.labels.is_subset(&r.labels), "{name}: {f:?} vs {r:?}");
            for key in ["block_size", "num_gpu_blocks", "engine"] {
                assert!(f.labels.contains(key), "{name}: no `{key}`: {f:?}");
            }
        } else {
            assert_eq!(f.labels, r.labels, "{name}: label names");
        }
    }
    let compared = [
        "vllm:e2e_request_latency_seconds",
        "vllm:request_time_per_output_token_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:prompt_tokens_cached_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
    ];
    for name in real.keys() {
        if wanted(name) || compared.contains(&name.as_str()) {
            assert!(
                served.contains_key(name),
                "vLLM serves `{name}`, the simulator not"
            );
        }
    }
    assert_eq!(served.len(), 16, "{served:#?}");
    // Units: a ratio of 0 to 1, seconds (one request of a few milliseconds on `tiny`).
    let samples = crate::telemetry::prom::parse(&text);
    let value = |n: &str| samples.iter().find(|s| s.name == n).map(|s| s.value);
    assert!(value("vllm:kv_cache_usage_perc").is_some_and(|v| (0.0..=1.0).contains(&v)));
    let ttft = value("vllm:time_to_first_token_seconds_sum");
    assert!(ttft.is_some_and(|t| t > 0.0 && t < 0.1), "{ttft:?} s");
    let e2e = value("vllm:e2e_request_latency_seconds_sum");
    assert!(
        e2e.is_some_and(|e| e > ttft.unwrap_or(0.0) && e < 0.1),
        "{e2e:?} s"
    );
}

/// `/v1/models`' model object, `/version` and `/tokenize` (prompt and messages) have the
/// real ones' keys and types.
#[tokio::test(start_paused = true)]
async fn models_version_and_tokenize_have_vllms_keys() {
    let sim = sim(16);
    let keys = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let real = json(vllm_fixture!("models.json"));
    let (_, got) = call(&sim, "/v1/models", None).await;
    let got = json(&got);
    assert_eq!(keys(&got), keys(&real));
    assert_eq!(keys(&got["data"][0]), keys(&real["data"][0]), "{got}");
    assert_eq!(got["data"][0]["max_model_len"], 4096);
    assert_eq!(got["data"][0]["owned_by"], "vllm");
    let (_, version) = call(&sim, "/version", None).await;
    assert_eq!(
        shape(&json(&version)),
        shape(&json(vllm_fixture!("version.json")))
    );
    let prompt = "The quick brown fox jumps over the lazy dog.";
    for (body, file) in [
        (
            json!({"model": "tiny", "prompt": prompt}),
            vllm_fixture!("tokenize.json"),
        ),
        (
            json!({"model": "tiny", "messages": [{"role": "user", "content": prompt}]}),
            vllm_fixture!("tokenize-chat.json"),
        ),
    ] {
        let (_, got) = call(&sim, "/tokenize", Some(&body)).await;
        let (got, real) = (json(&got), json(file));
        assert_eq!(keys(&got), keys(&real), "{got}");
        assert_eq!(got["token_strs"], real["token_strs"]);
        assert_eq!(got["max_model_len"], real["max_model_len"]);
        let n = got["tokens"].as_array().map(Vec::len);
        assert_eq!(got["count"].as_u64(), n.map(|n| n as u64));
    }
}

/// The cached tokens of a repeated 4,090-token prompt: whole blocks. vLLM's CPU build
/// (blocks of 128) reported 3,968 = 31 × 128 (`completions-capped.sse`) and counted them in
/// `prefix_cache_hits`; with `block_size: 128` the simulator does too, and says 128 in
/// `cache_config_info`; with GPU vLLM's 16 it finds 4,080 = 255 × 16.
#[tokio::test(start_paused = true)]
async fn cached_tokens_come_in_whole_blocks_of_the_block_size() {
    let real = vllm_fixture!("completions-capped.sse");
    assert!(real.contains("\"prompt_tokens_details\":{\"cached_tokens\":3968}"));
    let prompt = vec!["hello"; 4090].join(" ");
    let body = json!({"model": "tiny", "prompt": prompt, "max_tokens": 2});
    for (block, want) in [(128, 3968), (16, 4080)] {
        let sim = sim(block);
        for expected in [0, want] {
            let (status, got) = call(&sim, "/v1/completions", Some(&body)).await;
            assert_eq!(status, 200, "{got}");
            let got = json(&got);
            assert_eq!(got["usage"]["prompt_tokens"], 4090);
            let cached = &got["usage"]["prompt_tokens_details"]["cached_tokens"];
            assert_eq!(cached, expected, "block {block}");
        }
        let (_, text) = call(&sim, "/metrics", None).await;
        let info = format!("block_size=\"{block}\"");
        assert!(text.contains(&info), "{text}");
        let hits =
            format!("vllm:prompt_tokens_cached_total{{engine=\"0\",model_name=\"tiny\"}} {want}.0");
        assert!(text.contains(&hits), "{text}");
    }
}
