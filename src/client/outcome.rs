//! What a request's stream delivered: each token-bearing chunk with its arrival time and
//! token count, how the request ended, and the kinds of failure counted in `error_kinds`.
//! The client produces these; the chunk reader and the measuring window consume them.

use tokio::time::Instant;

/// Why a request failed: the kinds counted in `error_kinds`. Written as its key
/// ([`Failure::kind`]) and read back from it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Failure {
    /// The server answered with this HTTP status.
    Http(u16),
    /// The connection was refused (nothing listens).
    Refused,
    /// The connection failed or was reset before the response.
    Connect,
    /// The stream ended before the response was complete.
    Disconnect,
    /// A line of the stream was not valid SSE.
    Sse,
    /// A chunk was not the JSON expected.
    Json,
    /// The stream carried an error event.
    StreamError,
    /// No bytes for `stall_timeout`.
    Stall,
    /// Fewer tokens than asked although `ignore_eos` was set.
    Short,
    /// HTTP 429: a rate limit (the `retry-after` is in the outcome).
    RateLimited,
}

impl Failure {
    /// The key in `error_kinds`.
    pub fn kind(&self) -> String {
        match self {
            Failure::Http(code) => format!("http_{code}"),
            Failure::Refused => "connection_refused".into(),
            Failure::Connect => "connection_error".into(),
            Failure::Disconnect => "disconnect".into(),
            Failure::Sse => "malformed_sse".into(),
            Failure::Json => "malformed_json".into(),
            Failure::StreamError => "stream_error".into(),
            Failure::Stall => "stall_timeout".into(),
            Failure::Short => "short_output".into(),
            Failure::RateLimited => "rate_limited".into(),
        }
    }
}

impl From<Failure> for String {
    fn from(f: Failure) -> String {
        f.kind()
    }
}

impl TryFrom<String> for Failure {
    type Error = String;

    /// The failure whose key is `kind`.
    fn try_from(kind: String) -> Result<Failure, String> {
        const PLAIN: [Failure; 9] = [
            Failure::Refused,
            Failure::Connect,
            Failure::Disconnect,
            Failure::Sse,
            Failure::Json,
            Failure::StreamError,
            Failure::Stall,
            Failure::Short,
            Failure::RateLimited,
        ];
        if let Some(code) = kind.strip_prefix("http_").and_then(|c| c.parse().ok()) {
            return Ok(Failure::Http(code));
        }
        PLAIN
            .into_iter()
            .find(|f| f.kind() == kind)
            .ok_or_else(|| format!("`{kind}` is not a failure kind"))
    }
}

/// What one token-bearing chunk carried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chunk {
    /// Just before its request was written (the start of its TTFT).
    pub sent: Instant,
    /// When it arrived.
    pub at: Instant,
    /// Tokens in it: from cumulative usage when the server sends it, else 1.
    pub tokens: u64,
    /// Whether `tokens` came from the server's usage.
    pub from_usage: bool,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Just before the request was written.
    pub sent: Instant,
    /// Token-bearing chunks received.
    pub chunks: u64,
    /// Tokens counted from the chunks (usage differences or one per chunk).
    pub counted: u64,
    /// The server's final `usage.completion_tokens`.
    pub usage_completion: Option<u64>,
    /// The server's `usage.prompt_tokens`.
    pub usage_prompt: Option<u64>,
    /// The server's `usage.prompt_tokens_details.cached_tokens`: prompt tokens it found in
    /// its prefix cache.
    pub usage_cached: Option<u64>,
    /// The server's `timings.draft_n` and `timings.draft_n_accepted` (llama.cpp with a draft
    /// model): draft tokens proposed for this response and accepted.
    pub drafted: Option<(u64, u64)>,
    /// The generated text (`text`, or the chat `content`), for a request that keeps it.
    pub text: Option<String>,
    /// Whether every token-bearing chunk carried usage.
    pub all_usage: bool,
    /// Why it failed, if it did.
    pub failure: Option<Failure>,
    /// How long a rate-limited request (HTTP 429) was asked to wait before the next.
    pub retry_after: Option<std::time::Duration>,
    /// The server's own words for its failure, verbatim: an error answer's `error.message`
    /// (or its body's text), or a stream error event's.
    pub message: Option<String>,
}

impl Outcome {
    /// A request sent at `sent`, nothing received yet.
    pub fn started(sent: Instant) -> Outcome {
        Outcome {
            sent,
            chunks: 0,
            counted: 0,
            usage_completion: None,
            usage_prompt: None,
            usage_cached: None,
            drafted: None,
            text: None,
            all_usage: true,
            failure: None,
            retry_after: None,
            message: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_reads_back_from_its_key() {
        let all = [
            Failure::Http(503),
            Failure::Refused,
            Failure::Connect,
            Failure::Disconnect,
            Failure::Sse,
            Failure::Json,
            Failure::StreamError,
            Failure::Stall,
            Failure::Short,
            Failure::RateLimited,
        ];
        for f in all {
            assert_eq!(Failure::try_from(f.kind()), Ok(f));
        }
        assert!(Failure::try_from("http_x".to_string()).is_err());
        assert!(Failure::try_from("nothing".to_string()).is_err());
    }
}
