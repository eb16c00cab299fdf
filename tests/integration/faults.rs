//! Every way a request can fail is named: a hand-made server on 127.0.0.1 answers each
//! request with one scripted misbehaviour, and the client reports the kind counted in
//! `error_kinds`.

use benchspec::client::{Client, Failure};
use benchspec::spec::{self, Stage};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// Serve `body` (raw bytes after the request is read) to every connection, then close it.
fn scripted(response: Vec<u8>, hold: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 65536];
            let mut got = Vec::new();
            // The request: headers, then the JSON body (its Content-Length).
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let _ = s.write_all(&response);
            let _ = s.flush();
            std::thread::sleep(hold);
        }
    });
    url
}

const SSE: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn client(url: &str, ignore_eos: bool) -> Client {
    let yaml = format!(
        "version: 1\nname: f\nengine: {{kind: vllm}}\nmodel: {{served_name: m}}\nworkload: {{stall_timeout: 1s, ignore_eos: {ignore_eos}}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
    );
    let loaded = spec::parse("f.yaml", &yaml, Stage::Validate, &|_| None).unwrap();
    Client::new(
        benchspec::plan::RunConfig::new(&loaded)
            .engine()
            .client_settings(url.to_string(), None, 1),
    )
    .unwrap()
}

fn failure_of(response: Vec<u8>, hold: Duration, ignore_eos: bool) -> Option<Failure> {
    let url = scripted(response, hold);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client(&url, ignore_eos);
    rt.block_on(client.generate(&client.prepare("a b c", 4), |_| {}))
        .failure
}

fn sse(body: &str) -> Vec<u8> {
    format!("{SSE}{body}").into_bytes()
}

/// A token chunk of a completion's stream.
const CHUNK: &str = r#"data: {"choices":[{"index":0,"text":"a","finish_reason":null}]}"#;

/// How long a quick fake server holds its connection after answering.
const QUICK: Duration = Duration::from_millis(10);

#[test]
fn each_failure_has_its_kind() {
    let chunk = CHUNK;
    let quick = QUICK;
    for (what, response, hold, ignore_eos, kind) in failure_cases() {
        let f = failure_of(response, hold, ignore_eos);
        assert_eq!(f.map(|f| f.kind()).as_deref(), Some(kind), "{what}");
    }
    // Without ignore_eos a short answer is a normal end.
    let f = failure_of(sse(&format!("{chunk}\n\ndata: [DONE]\n\n")), quick, false);
    assert_eq!(f, None);
    // Nothing listens.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client(&format!("http://127.0.0.1:{port}"), true);
    let out = rt.block_on(client.generate(&client.prepare("a", 4), |_| {}));
    assert_eq!(
        out.failure.map(|f| f.kind()).as_deref(),
        Some("connection_refused")
    );
}

/// The failures of [`each_failure_has_its_kind`]: what, the server's response, how long it
/// holds the connection, `ignore_eos`, and the kind expected.
fn failure_cases() -> Vec<(&'static str, Vec<u8>, Duration, bool, &'static str)> {
    let chunk = CHUNK;
    let quick = QUICK;
    vec![
        (
            "an HTTP error",
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
                .to_vec(),
            quick,
            true,
            "http_503",
        ),
        (
            "JSON that is not",
            sse("data: {oops\n\n"),
            quick,
            true,
            "malformed_json",
        ),
        (
            "an error event",
            sse("data: {\"error\": {\"message\": \"boom\"}}\n\n"),
            quick,
            true,
            "stream_error",
        ),
        (
            "a line without end",
            {
                let mut v = sse("data: ");
                v.extend(std::iter::repeat_n(b'x', 2 << 20));
                v
            },
            quick,
            true,
            "malformed_sse",
        ),
        (
            "a stream cut short",
            sse(&format!("{chunk}\n\n")),
            quick,
            true,
            "disconnect",
        ),
        (
            "a silent stream",
            sse(&format!("{chunk}\n\n")),
            Duration::from_secs(3),
            true,
            "stall_timeout",
        ),
        (
            "fewer tokens than asked",
            sse(&format!("{chunk}\n\ndata: [DONE]\n\n")),
            quick,
            true,
            "short_output",
        ),
    ]
}
