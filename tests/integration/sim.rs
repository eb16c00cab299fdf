//! The simulator driven over HTTP with a plain client, its API shapes checked against vLLM's:
//! models, tokenize, streamed chunks with usage, errors, metrics, and the fault options.

use benchspec::sim::{self, Faults, Options, Sim, profile, tokenizer};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn start(f: impl FnOnce(&mut Options)) -> Sim {
    let mut opts = Options::new(profile::profile("tiny").unwrap());
    f(&mut opts);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    sim::start(listener, opts).unwrap()
}

fn client() -> reqwest::Client {
    benchspec::client::http_builder()
        .no_proxy()
        .build()
        .unwrap()
}

/// The `data:` payloads of an SSE body, `[DONE]` included.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

fn chunks(body: &str) -> Vec<Value> {
    events(body)
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

async fn post(sim: &Sim, path: &str, body: Value) -> (u16, String) {
    let r = client()
        .post(format!("{}{path}", sim.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn health_version_and_models() {
    let sim = start(|_| {}).await;
    let c = client();
    assert_eq!(
        c.get(format!("{}/health", sim.base_url()))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let v: Value = c
        .get(format!("{}/version", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["version"], "0.0.0+sim.tiny");
    let m: Value = c
        .get(format!("{}/v1/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "tiny");
    assert_eq!(m["data"][0]["max_model_len"], 8192);
    sim.stop().await;
}

#[tokio::test]
async fn tokenize_agrees_with_usage() {
    let sim = start(|_| {}).await;
    let text = "one two three benchmarking, again";
    let (code, body) = post(&sim, "/tokenize", json!({"model": "tiny", "prompt": text})).await;
    assert_eq!(code, 200);
    let t: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(t["count"], tokenizer::count(text));
    assert_eq!(t["tokens"].as_array().unwrap().len(), 7);
    assert_eq!(t["max_model_len"], 8192);
    let (_, body) = post(
        &sim,
        "/v1/completions",
        json!({"model": "tiny", "prompt": text, "max_tokens": 2}),
    )
    .await;
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["usage"]["prompt_tokens"], 7);
    // Chat: the template is counted the same way by /tokenize and by the completion.
    let messages =
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]);
    let (_, body) = post(
        &sim,
        "/tokenize",
        json!({"model": "tiny", "messages": messages}),
    )
    .await;
    let chat_count = serde_json::from_str::<Value>(&body).unwrap()["count"].clone();
    let (_, body) = post(
        &sim,
        "/v1/chat/completions",
        json!({"model": "tiny", "messages": messages, "max_tokens": 2}),
    )
    .await;
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["usage"]["prompt_tokens"], chat_count);
    assert_eq!(r["object"], "chat.completion");
    sim.stop().await;
}

#[tokio::test]
async fn completion_stream_has_vllm_usage_chunks() {
    let sim = start(|_| {}).await;
    let body = json!({"model": "tiny", "prompt": "hello there", "max_tokens": 20, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true}});
    let (code, text) = post(&sim, "/v1/completions", body).await;
    assert_eq!(code, 200);
    let evs = events(&text);
    assert_eq!(evs.last().map(String::as_str), Some("[DONE]"));
    let cs = chunks(&text);
    let (usage_chunk, token_chunks) = cs.split_last().unwrap();
    assert_eq!(
        usage_chunk["choices"],
        json!([]),
        "vLLM sends usage in a separate final chunk"
    );
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 20);
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 2);
    assert_eq!(token_chunks.len(), 20);
    for (i, c) in token_chunks.iter().enumerate() {
        assert_eq!(c["object"], "text_completion");
        assert_eq!(
            c["usage"]["completion_tokens"],
            i + 1,
            "continuous usage is cumulative"
        );
        let finish = if i == 19 {
            json!("length")
        } else {
            Value::Null
        };
        assert_eq!(c["choices"][0]["finish_reason"], finish);
    }
    let all: String = token_chunks
        .iter()
        .map(|c| c["choices"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        tokenizer::count(&all),
        20,
        "the generated text is as many tokens as reported"
    );
    sim.stop().await;
}

#[tokio::test]
async fn without_ignore_eos_the_model_stops_by_itself() {
    let sim = start(|_| {}).await;
    let (_, text) = post(&sim, "/v1/completions", json!({"model": "tiny", "prompt": "x", "max_tokens": 4000, "min_tokens": 20, "stream": true, "stream_options": {"include_usage": true}})).await;
    let cs = chunks(&text);
    let n = cs.last().unwrap()["usage"]["completion_tokens"]
        .as_u64()
        .unwrap();
    assert!((20..4000).contains(&n), "{n}");
    assert_eq!(cs[cs.len() - 2]["choices"][0]["finish_reason"], "stop");
    sim.stop().await;
}

#[tokio::test]
async fn chat_streams_reasoning_first_and_several_tokens_per_chunk() {
    let sim = start(|o| {
        o.reasoning_tokens = 3;
        o.tokens_per_chunk = 4;
    })
    .await;
    let body = json!({"model": "tiny", "messages": [{"role": "user", "content": "think"}], "max_tokens": 11, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true}});
    let (_, text) = post(&sim, "/v1/chat/completions", body).await;
    let cs = chunks(&text);
    assert_eq!(cs[0]["choices"][0]["delta"]["role"], "assistant");
    let deltas: Vec<(bool, u64)> = cs[1..cs.len() - 1]
        .iter()
        .map(|c| {
            (
                c["choices"][0]["delta"].get("reasoning_content").is_some(),
                c["usage"]["completion_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    // 3 reasoning tokens in one chunk, then content in chunks of 4: 7, 11.
    assert_eq!(deltas, vec![(true, 3), (false, 7), (false, 11)]);
    let reasoning = cs[1]["choices"][0]["delta"]["reasoning_content"]
        .as_str()
        .unwrap();
    assert_eq!(tokenizer::count(reasoning), 3);
    sim.stop().await;
}

#[tokio::test]
async fn errors_have_vllm_shapes() {
    let sim = start(|_| {}).await;
    // vLLM 0.32's answers (tests/fixtures/vllm/error-too-long.json, completions-capped.sse):
    // a prompt over max_model_len is refused, counted up to max_model_len + 1 tokens.
    let long = "word ".repeat(9000);
    let (code, body) = post(
        &sim,
        "/v1/completions",
        json!({"model": "tiny", "prompt": long, "max_tokens": 10, "stream": true}),
    )
    .await;
    assert_eq!(code, 400);
    let e: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(e["error"]["type"], "BadRequestError");
    assert_eq!(e["error"]["code"], 400);
    assert_eq!(e["error"]["param"], "input_tokens");
    assert_eq!(
        e["error"]["message"],
        "This model's maximum context length is 8192 tokens. However, your prompt contains at least 8193 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=8193)"
    );
    // A prompt whose output would not fit is served up to the full context.
    let (code, body) = post(
        &sim,
        "/v1/completions",
        json!({"model": "tiny", "prompt": "word ".repeat(8180), "max_tokens": 100}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["usage"]["completion_tokens"], 12, "{body}");
    assert_eq!(r["choices"][0]["finish_reason"], "length", "{body}");
    let (code, body) = post(
        &sim,
        "/v1/completions",
        json!({"model": "gpt-5", "prompt": "a"}),
    )
    .await;
    assert_eq!(code, 404);
    assert!(body.contains("The model `gpt-5` does not exist. Valid aliases: tiny."));
    let r = client()
        .post(format!("{}/v1/completions", sim.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    sim.stop().await;
}

/// The simulator's `/metrics` text.
async fn metrics(c: &reqwest::Client, sim: &Sim) -> String {
    let r = c.get(format!("{}/metrics", sim.base_url())).send().await;
    r.unwrap().text().await.unwrap()
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

#[tokio::test]
async fn metrics_use_vllm_names_and_count_prefix_hits() {
    let sim = start(|_| {}).await;
    let prompt = "cache me ".repeat(100);
    for _ in 0..2 {
        post(
            &sim,
            "/v1/completions",
            json!({"model": "tiny", "prompt": prompt, "max_tokens": 1}),
        )
        .await;
    }
    let text = metrics(&client(), &sim).await;
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
    ] {
        assert!(metric(&text, name).is_finite(), "{name} missing:\n{text}");
    }
    assert_eq!(metric(&text, "vllm:prefix_cache_queries_total"), 400.0);
    assert_eq!(
        metric(&text, "vllm:prefix_cache_hits_total"),
        192.0,
        "the second prompt hits all its full blocks but the last"
    );
    assert_eq!(metric(&text, "vllm:num_preemptions_total"), 0.0);
    // The cache's size as vLLM states it: blocks × block size is the profile's KV tokens.
    let info = text
        .lines()
        .find(|l| l.starts_with("vllm:cache_config_info{"))
        .unwrap_or_else(|| panic!("no cache_config_info:\n{text}"));
    let label = |k: &str| -> u64 {
        let v = info.split(&format!("{k}=\"")).nth(1).unwrap();
        v[..v.find('"').unwrap()].parse().unwrap()
    };
    let kv = profile::profile("tiny").unwrap().kv_tokens;
    assert_eq!(label("num_gpu_blocks") * label("block_size"), kv, "{info}");
    sim.stop().await;
}

/// The TTFT and inter-token-latency histograms count every request and every gap between
/// its tokens, and their sums are the engine's own times: above its modelled step time and
/// below what the client waited in all.
#[tokio::test]
async fn latency_histograms_count_what_the_engine_did() {
    let sim = start(|_| {}).await;
    let started = Instant::now();
    for n in [1, 5, 9] {
        let body =
            json!({"model": "tiny", "prompt": "time me", "max_tokens": n, "ignore_eos": true});
        let (status, _) = post(&sim, "/v1/completions", body).await;
        assert_eq!(status, 200);
    }
    let waited = started.elapsed().as_secs_f64();
    let text = metrics(&client(), &sim).await;
    let ttft = "vllm:time_to_first_token_seconds";
    let itl = "vllm:inter_token_latency_seconds";
    assert_eq!(metric(&text, &format!("{ttft}_count")), 3.0, "{text}");
    assert_eq!(
        metric(&text, &format!("{itl}_count")),
        12.0,
        "0 + 4 + 8 gaps: {text}"
    );
    let step = profile::profile("tiny").unwrap().step_s;
    let itl_sum = metric(&text, &format!("{itl}_sum"));
    // The engine paces steps on absolute deadlines: a step the machine made late is followed
    // by shorter gaps that catch up, so the sum may fall a little under 12 steps (seen: 7.06
    // ms of 7.2 under the full suite's load).
    assert!(
        itl_sum >= 0.75 * 12.0 * step && itl_sum < waited,
        "{itl_sum} s: {text}"
    );
    let ttft_sum = metric(&text, &format!("{ttft}_sum"));
    assert!(
        ttft_sum >= 3.0 * step && ttft_sum < waited,
        "{ttft_sum} s: {text}"
    );
    sim.stop().await;
}

#[tokio::test]
async fn a_dropped_stream_is_cancelled_in_the_engine() {
    let sim = start(|_| {}).await;
    let c = client();
    let body = json!({"model": "tiny", "prompt": "x", "max_tokens": 5000, "ignore_eos": true, "stream": true});
    let mut r = c
        .post(format!("{}/v1/completions", sim.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let _ = r.chunk().await.unwrap();
    drop(r);
    let mut running = f64::NAN;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let text = metrics(&c, &sim).await;
        running = metric(&text, "vllm:num_requests_running");
        if running == 0.0 {
            break;
        }
    }
    assert_eq!(running, 0.0);
    sim.stop().await;
}

#[tokio::test]
async fn streams_are_paced_by_the_performance_model() {
    let sim = start(|_| {}).await;
    let p = profile::profile("tiny").unwrap();
    let n = 300;
    let modelled = n as f64 * (p.step_s + p.decode_s(1, 150));
    let start = Instant::now();
    post(
        &sim,
        "/v1/completions",
        json!({"model": "tiny", "prompt": "x", "max_tokens": n, "ignore_eos": true}),
    )
    .await;
    let took = start.elapsed().as_secs_f64();
    // Correctness of the pacing, not a performance claim: never faster than the model says.
    assert!(
        took >= modelled * 0.9,
        "{took} s for {modelled} s of modelled decode"
    );
    assert!(
        took < modelled * 5.0 + 1.0,
        "{took} s for {modelled} s of modelled decode"
    );
    sim.stop().await;
}

#[tokio::test]
async fn fault_failure_rate_answers_500() {
    let sim = start(|o| {
        o.faults = Faults {
            failure_rate: 1.0,
            ..Faults::default()
        }
    })
    .await;
    let (code, body) = post(
        &sim,
        "/v1/completions",
        json!({"model": "tiny", "prompt": "x", "max_tokens": 3}),
    )
    .await;
    assert_eq!(code, 500);
    assert!(body.contains("InternalServerError"));
    sim.stop().await;
}

#[tokio::test]
async fn fault_disconnect_cuts_the_stream() {
    let sim = start(|o| {
        o.faults = Faults {
            disconnect_rate: 1.0,
            ..Faults::default()
        }
    })
    .await;
    let body = json!({"model": "tiny", "prompt": "x", "max_tokens": 50, "ignore_eos": true, "stream": true});
    let r = client()
        .post(format!("{}/v1/completions", sim.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut r = r;
    let mut got = String::new();
    let err = loop {
        match r.chunk().await {
            Ok(Some(b)) => got.push_str(&String::from_utf8_lossy(&b)),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    assert!(err.is_some(), "the body must end in an error, got {got}");
    assert!(!got.contains("[DONE]"));
    sim.stop().await;
}

#[tokio::test]
async fn fault_stall_goes_silent() {
    let sim = start(|o| {
        o.faults = Faults {
            stall_rate: 1.0,
            ..Faults::default()
        }
    })
    .await;
    let body = json!({"model": "tiny", "prompt": "x", "max_tokens": 50, "ignore_eos": true, "stream": true});
    let mut r = client()
        .post(format!("{}/v1/completions", sim.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let silent = loop {
        match tokio::time::timeout(Duration::from_millis(500), r.chunk()).await {
            Err(_) => break true,
            Ok(Ok(Some(b))) => assert!(!String::from_utf8_lossy(&b).contains("[DONE]")),
            Ok(_) => break false,
        }
    };
    assert!(silent, "a stalled stream stays open and silent");
    sim.stop().await;
}

#[tokio::test]
async fn fault_die_after_stops_the_server() {
    let mut sim = start(|o| {
        o.faults = Faults {
            die_after: Some(Duration::from_millis(300)),
            ..Faults::default()
        }
    })
    .await;
    let url = format!("{}/health", sim.base_url());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 200);
    tokio::time::timeout(Duration::from_secs(5), sim.wait())
        .await
        .unwrap();
    assert!(
        client().get(&url).send().await.is_err(),
        "connections are refused once it died"
    );
}
