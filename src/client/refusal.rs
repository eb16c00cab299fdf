//! A request the server refused: its status is the failure, and its body's own words (vLLM's
//! `{"error":{"message":…}}`, a plain `{"message":…}` or `{"detail":…}`, or the body's text)
//! are kept verbatim in the outcome, so a cell failed by them says why in the engine's words.
//! The body is read up to a cap, within the stall timeout; a body read whole leaves the
//! connection for the next request.

use super::outcome::{Failure, Outcome};
use super::wire::Wire;
use serde_json::Value;
use std::time::Duration;

/// The most of an error body read: far above any engine's message.
const MAX_BODY: usize = 16 * 1024;

/// The most of a message kept, in bytes (cut at a character boundary).
const MAX_MESSAGE: usize = 2048;

/// The outcome of a response that is not 2xx: its status is the failure, its body's message
/// kept. A rate limit (429) is counted, never retried inside the measurement; its
/// `retry-after` is kept for the sender to wait out.
pub(super) async fn refused(mut out: Outcome, mut w: Wire<'_>, stall: Duration) -> Outcome {
    let status = w.status();
    out.failure = Some(if status == 429 {
        out.retry_after = w.retry_after();
        Failure::RateLimited
    } else {
        Failure::Http(status)
    });
    let mut body = Vec::new();
    let whole = tokio::time::timeout(stall, read_body(&mut w, &mut body))
        .await
        .unwrap_or(false);
    if whole {
        w.finish();
    }
    out.message = message_of(&body);
    out
}

/// Read `w`'s body into `body`, up to [`MAX_BODY`]; whether it was read to its end.
async fn read_body(w: &mut Wire<'_>, body: &mut Vec<u8>) -> bool {
    loop {
        let drained = w.drain(&mut |b: &[u8]| {
            let room = MAX_BODY.saturating_sub(body.len());
            body.extend_from_slice(&b[..b.len().min(room)]);
        });
        if drained.is_err() || body.len() >= MAX_BODY {
            return false;
        }
        match w.read().await {
            Ok(true) => {}
            Ok(false) => return true,
            Err(_) => return false,
        }
    }
}

/// The server's words in an error body or a stream's error event: `error.message`, a string
/// `error`, `message` or `detail`, else the body's text; `None` when there are none.
pub(super) fn message_of(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let said = match serde_json::from_str::<Value>(text) {
        Ok(v) => [
            v.pointer("/error/message"),
            v.get("error"),
            v.get("message"),
            v.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str)
        .map(str::to_string),
        Err(_) => Some(text.to_string()),
    };
    let mut said = said.filter(|m| !m.trim().is_empty())?;
    if said.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !said.is_char_boundary(cut) {
            cut -= 1;
        }
        said.truncate(cut);
        said.push('…');
    }
    Some(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_table() {
        let long = "x".repeat(MAX_MESSAGE + 10);
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"error":{"message":"too long","code":400}}"#,
                Some("too long"),
            ),
            (r#"{"error":"plain words"}"#, Some("plain words")),
            (r#"{"message":"at the top","code":3}"#, Some("at the top")),
            (r#"{"detail":"Not Found"}"#, Some("Not Found")),
            ("Internal Server Error\n", Some("Internal Server Error")),
            (r#"{"error":{"code":500}}"#, None),
            ("", None),
            ("  \n", None),
        ];
        for (body, want) in cases {
            assert_eq!(message_of(body.as_bytes()).as_deref(), *want, "{body}");
        }
        let cut = message_of(long.as_bytes()).unwrap_or_default();
        assert_eq!(cut.len(), MAX_MESSAGE + '…'.len_utf8());
    }
}
