//! The HTTP/1.1 client against a real socket: a listener on 127.0.0.1 writes exact bytes,
//! and the tests check what the client makes of them — keep-alive reuse and the retry of a
//! stale pooled connection (through [`Client`]), the size limits, each way a body is
//! delimited, and the statuses that never have a body.

use super::*;
use crate::client::{Api, Client, ClientDialect, Failure, Outcome, SEND_TRIES, Settings};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpListener;

/// No test here waits for anything longer than this: a hang is a failure, not a stuck run.
const LIMIT: Duration = Duration::from_secs(5);

/// A listener on a free port of 127.0.0.1 and its `http://` base URL.
async fn listen() -> (TcpListener, String) {
    let Ok(l) = TcpListener::bind("127.0.0.1:0").await else {
        panic!("bind 127.0.0.1:0")
    };
    let Ok(addr) = l.local_addr() else {
        panic!("local address")
    };
    (l, format!("http://{addr}"))
}

/// Read one request, its head and its `Content-Length` body; `None` once the peer closed.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return Some(buf.drain(..end + 4 + len).collect());
            }
        }
        let mut tmp = [0u8; 4096];
        match s.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// A complete streamed completion of two tokens, chunked.
fn sse_response() -> Vec<u8> {
    let events = [
        "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    ];
    let mut out =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for e in events {
        out.extend_from_slice(format!("{:x}\r\n{e}\r\n", e.len()).as_bytes());
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn client(base: &str) -> Client {
    let settings = Settings {
        base: base.into(),
        others: Vec::new(),
        balance: Default::default(),
        model: "m".into(),
        api: Api::Completions,
        dialect: ClientDialect::Serving,
        key: None,
        stall: LIMIT,
        ignore_eos: false,
        pool: 4,
        adapters: Vec::new(),
        adapter_seed: 0,
        temperature: 0.0,
    };
    match Client::new(settings) {
        Ok(c) => c,
        Err(e) => panic!("client: {e}"),
    }
}

async fn generate(c: &Client) -> Outcome {
    let req = c.prepare("hi", 2);
    match tokio::time::timeout(LIMIT, c.generate(&req, |_| {})).await {
        Ok(out) => out,
        Err(_) => panic!("the request did not end"),
    }
}

/// A server that runs `on_conn` for each connection it accepts (the connection's index
/// from 0, in order), counting the accepts.
fn serve<F, Fut>(l: TcpListener, on_conn: F) -> Arc<AtomicUsize>
where
    F: Fn(usize, TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let accepts = Arc::new(AtomicUsize::new(0));
    let counted = accepts.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let i = counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(on_conn(i, s));
        }
    });
    accepts
}

/// Answer every request on the connection with [`sse_response`].
async fn answer_all(mut s: TcpStream) {
    let mut buf = Vec::new();
    while read_request(&mut s, &mut buf).await.is_some() {
        if s.write_all(&sse_response()).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn two_requests_share_one_kept_alive_connection() {
    let (l, base) = listen().await;
    let accepts = serve(l, |_, s| answer_all(s));
    let c = client(&base);
    for _ in 0..2 {
        let out = generate(&c).await;
        assert_eq!((out.failure, out.chunks), (None, 2));
    }
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_pooled_connection_the_server_closed_while_idle_is_not_used() {
    let (l, base) = listen().await;
    // The first connection serves one request and is closed by the server while idle.
    let accepts = serve(l, |i, mut s| async move {
        if i > 0 {
            return answer_all(s).await;
        }
        let mut buf = Vec::new();
        if read_request(&mut s, &mut buf).await.is_some() {
            let _ = s.write_all(&sse_response()).await;
        }
    });
    let c = client(&base);
    assert_eq!(generate(&c).await.failure, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let out = generate(&c).await;
    assert_eq!((out.failure, out.chunks), (None, 2));
    assert_eq!(accepts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_request_on_a_stale_connection_is_sent_again_on_a_new_one() {
    let (l, base) = listen().await;
    // The first connection answers once, then reads the next request and closes without a
    // byte: the close races the request, as a server closing an idle connection does.
    let dropped = Arc::new(AtomicUsize::new(0));
    let seen = dropped.clone();
    let accepts = serve(l, move |i, mut s| {
        let seen = seen.clone();
        async move {
            if i > 0 {
                return answer_all(s).await;
            }
            let mut buf = Vec::new();
            if read_request(&mut s, &mut buf).await.is_some() {
                let _ = s.write_all(&sse_response()).await;
            }
            if read_request(&mut s, &mut buf).await.is_some() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let c = client(&base);
    assert_eq!(generate(&c).await.failure, None);
    let out = generate(&c).await;
    assert_eq!((out.failure, out.chunks), (None, 2));
    // The second request went out on the pooled connection first, then on a new one.
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    assert_eq!(accepts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn new_connections_closed_before_an_answer_fail_after_the_tries() {
    let (l, base) = listen().await;
    let accepts = serve(l, |_, mut s| async move {
        let mut buf = Vec::new();
        let _ = read_request(&mut s, &mut buf).await;
    });
    let out = generate(&client(&base)).await;
    assert_eq!(out.failure, Some(Failure::Connect));
    assert_eq!(accepts.load(Ordering::SeqCst), SEND_TRIES);
}

/// Send one bare request to a server that writes `reply` (then keeps the connection open
/// for a while, or closes it with `close`) and read the response to its end.
async fn exchange_with(reply: Vec<u8>, close: bool) -> (Result<(u16, Vec<u8>), WireError>, usize) {
    let (l, base) = listen().await;
    serve(l, move |_, mut s| {
        let reply = reply.clone();
        async move {
            let mut buf = Vec::new();
            if read_request(&mut s, &mut buf).await.is_some() {
                let _ = s.write_all(&reply).await;
            }
            if !close {
                tokio::time::sleep(LIMIT * 2).await;
            }
        }
    });
    let Some(ep) = Endpoint::parse(&base) else {
        panic!("endpoint of {base}")
    };
    let pool = Pool::new(ep, 4);
    let run = async {
        let conn = pool.take().await?;
        let body = bytes::Bytes::from_static(b"{}");
        let head = pool.post_head("/x", body.len(), None);
        let empty = bytes::Bytes::new();
        let mut r = conn
            .exchange(&head, [&body, &empty, &empty, &empty])
            .await?;
        let mut got = Vec::new();
        loop {
            r.drain(&mut |b| got.extend_from_slice(b))?;
            if r.ended() || !r.read().await? {
                break;
            }
        }
        let status = r.status;
        r.finish(&pool);
        Ok::<_, WireError>((status, got))
    };
    let got = match tokio::time::timeout(LIMIT, run).await {
        Ok(got) => got,
        Err(_) => panic!("the exchange did not end"),
    };
    let idle = pool.idle.lock().map(|v| v.len()).unwrap_or(usize::MAX);
    (got, idle)
}

#[tokio::test]
async fn a_content_length_body_ends_at_its_length_and_keeps_the_connection() {
    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec();
    let (got, idle) = exchange_with(reply, false).await;
    assert_eq!(got, Ok((200, b"hello".to_vec())));
    assert_eq!(idle, 1);
}

#[tokio::test]
async fn a_body_without_length_or_chunking_ends_when_the_server_closes() {
    let reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, world".to_vec();
    let (got, idle) = exchange_with(reply, true).await;
    assert_eq!(got, Ok((200, b"hello, world".to_vec())));
    assert_eq!(idle, 0, "a close-delimited connection is not kept");
}

#[tokio::test]
async fn no_body_follows_204_or_304_whatever_the_framing_headers_say() {
    for status in ["204 No Content", "304 Not Modified"] {
        for framing in [
            "",
            "Content-Length: 5\r\n",
            "Transfer-Encoding: chunked\r\n",
        ] {
            let reply = format!("HTTP/1.1 {status}\r\n{framing}\r\n").into_bytes();
            let (got, idle) = exchange_with(reply, false).await;
            let code = status[..3].parse().unwrap_or(0);
            assert_eq!(got, Ok((code, Vec::new())), "{status} with {framing:?}");
            assert_eq!(idle, 1, "{status} with {framing:?}: the connection is kept");
        }
    }
}

#[tokio::test]
async fn a_response_head_over_the_limit_is_refused() {
    let big = |n: usize| format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n", "a".repeat(n)).into_bytes();
    // Just under the limit and complete: read.
    let mut fits = big(MAX_HEAD - 100);
    fits.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
    assert_eq!(
        exchange_with(fits, false).await.0,
        Ok((200, b"ok".to_vec()))
    );
    // Over the limit and never ending: refused, not read forever.
    let endless = big(MAX_HEAD + 1024);
    assert_eq!(
        exchange_with(endless, false).await.0,
        Err(WireError::Malformed)
    );
}

#[tokio::test]
async fn a_chunk_size_line_over_the_limit_is_refused() {
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    // A long chunk extension, under the limit: read.
    let mut fits = head.to_vec();
    let ext = "x".repeat(MAX_LINE - 16);
    fits.extend_from_slice(format!("2;{ext}\r\nok\r\n0\r\n\r\n").as_bytes());
    assert_eq!(
        exchange_with(fits, false).await.0,
        Ok((200, b"ok".to_vec()))
    );
    // A size line longer than the limit, its end never sent: refused.
    let mut endless = head.to_vec();
    endless.extend_from_slice(format!("2;{}", "x".repeat(MAX_LINE + 16)).as_bytes());
    assert_eq!(
        exchange_with(endless, false).await.0,
        Err(WireError::Malformed)
    );
}
