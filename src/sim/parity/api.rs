//! Error bodies and SSE streams against a real vLLM 0.32's, for the requests `record.sh`
//! sent.

use super::{call, json, shape, sim};
use serde_json::{Value, json};

const PROMPT: &str =
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.";

/// The events of an SSE body: each `data:` payload, `[DONE]` as it is.
fn events(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

/// A completions or chat body as `record.sh` (and benchspec's client) sends it.
fn request(chat: bool, words: Option<usize>, stream_options: Value, max_tokens: u32) -> Value {
    let text = words.map_or(PROMPT.to_string(), |n| vec!["hello"; n].join(" "));
    let mut body = json!({"model": "tiny", "stream": true, "stream_options": stream_options,
        "temperature": 0, "ignore_eos": true, "max_tokens": max_tokens});
    if chat {
        body["messages"] = json!([{"role": "user", "content": text}]);
    } else {
        body["prompt"] = text.into();
    }
    body
}

/// An unknown model: HTTP 404 with vLLM's body (here the same bytes: the simulator serves
/// `tiny` too); a prompt over `max_model_len`, streamed or not, chat or not: HTTP 400 with
/// one JSON body, vLLM's (the same numbers: 5,000 words are over 4,097 tokens in both).
#[tokio::test(start_paused = true)]
async fn errors_are_vllms_bodies() {
    let sim = sim(16);
    let nope = json!({"model": "nope", "prompt": "hi", "stream": true, "max_tokens": 4});
    let (status, got) = call(&sim, "/v1/completions", Some(&nope)).await;
    assert_eq!(status, 404);
    assert_eq!(json(&got), json(vllm_fixture!("error-unknown-model.json")));
    let usage = json!({"include_usage": true, "continuous_usage_stats": true});
    for (chat, file) in [
        (false, vllm_fixture!("error-too-long.json")),
        (true, vllm_fixture!("error-too-long-chat.json")),
    ] {
        let path = if chat {
            "/v1/chat/completions"
        } else {
            "/v1/completions"
        };
        let body = request(chat, Some(5000), usage.clone(), 16);
        let (status, got) = call(&sim, path, Some(&body)).await;
        assert_eq!(status, 400, "{got}");
        assert_eq!(json(&got), json(file), "{path}");
    }
}

/// A prompt whose output would pass `max_model_len` is not refused: the output stops where
/// the context is full, `finish_reason: length` (4,090 + 6 = 4,096 in the recording).
#[tokio::test(start_paused = true)]
async fn an_output_over_max_model_len_stops_at_the_full_context() {
    let sim = sim(16);
    let usage = json!({"include_usage": true, "continuous_usage_stats": true});
    let body = request(false, Some(4090), usage, 10);
    let (status, got) = call(&sim, "/v1/completions", Some(&body)).await;
    assert_eq!(status, 200, "{got}");
    for text in [got.as_str(), vllm_fixture!("completions-capped.sse")] {
        let ev = events(text);
        let n = ev.len();
        assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
        let last_token = json(&ev[n - 3]);
        assert_eq!(
            last_token["choices"][0]["finish_reason"], "length",
            "{text}"
        );
        let usage = &json(&ev[n - 2])["usage"];
        assert_eq!(
            (&usage["completion_tokens"], &usage["total_tokens"]),
            (&json!(6), &json!(4096))
        );
    }
}

/// Each chunk of the simulator's stream has the shape of the real one at its place: chat's
/// role-only first chunk (empty content, with the running usage when continuous usage is
/// asked), the token chunks, the last one with its finish reason, the final usage chunk
/// with `prompt_tokens_details.cached_tokens`, and `[DONE]`.
#[tokio::test(start_paused = true)]
async fn sse_chunks_have_vllms_shape() {
    let sim = sim(16);
    let continuous = json!({"include_usage": true, "continuous_usage_stats": true});
    let cases = [
        (
            false,
            continuous.clone(),
            vllm_fixture!("completions-stream.sse"),
        ),
        (true, continuous, vllm_fixture!("chat-stream.sse")),
        (
            true,
            json!({"include_usage": true}),
            vllm_fixture!("chat-stream-usage-last.sse"),
        ),
    ];
    for (chat, options, file) in cases {
        let path = if chat {
            "/v1/chat/completions"
        } else {
            "/v1/completions"
        };
        let (status, got) = call(&sim, path, Some(&request(chat, None, options, 8))).await;
        assert_eq!(status, 200, "{got}");
        let (got, real) = (events(&got), events(file));
        assert_eq!(got.len(), real.len(), "{path}: {got:#?}");
        assert_eq!(got.last().map(String::as_str), Some("[DONE]"));
        for (i, (g, r)) in got.iter().zip(&real).enumerate().take(got.len() - 1) {
            assert_eq!(
                shape(&json(g)),
                shape(&json(r)),
                "{path} event {i}: {g}\nvs {r}"
            );
        }
        let last = json(&got[got.len() - 2]);
        assert!(
            last["usage"]["prompt_tokens_details"]["cached_tokens"].is_u64(),
            "{last}"
        );
        if chat {
            let first = json(&got[0]);
            assert_eq!(
                first["choices"][0]["delta"],
                json!({"role": "assistant", "content": ""})
            );
            if first.get("usage").is_some() {
                let u = &first["usage"];
                assert_eq!(
                    (&u["completion_tokens"], &u["total_tokens"]),
                    (&json!(0), &u["prompt_tokens"])
                );
            }
        }
    }
}
