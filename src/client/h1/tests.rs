//! The response head and chunked-body framing, cut anywhere.

use super::head::Head;
use super::*;

fn dechunk_all(parts: &[&[u8]]) -> (Vec<u8>, Chunked) {
    let (mut buf, mut state, mut out) = (BytesMut::new(), Chunked::Size, Vec::new());
    for p in parts {
        buf.extend_from_slice(p);
        state = dechunk(&mut buf, state, &mut |b| out.extend_from_slice(b)).unwrap();
    }
    (out, state)
}

#[test]
fn chunked_bodies_cut_anywhere_read_the_same() {
    let wire: &[u8] = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-T: 1\r\n\r\n";
    let (whole, state) = dechunk_all(&[wire]);
    assert_eq!(whole, b"hello, world");
    assert_eq!(state, Chunked::Done);
    for cut in 1..wire.len() {
        let (a, b) = wire.split_at(cut);
        assert_eq!(
            dechunk_all(&[a, b]),
            (whole.clone(), Chunked::Done),
            "cut at {cut}"
        );
    }
    for bad in [&b"zz\r\n"[..], b"3\r\nabcXY"] {
        let mut buf = BytesMut::from(bad);
        assert!(dechunk(&mut buf, Chunked::Size, &mut |_| {}).is_err());
    }
}

#[test]
fn a_429_says_how_long_to_wait() {
    use std::time::Duration;
    let mut buf = BytesMut::from(
        &b"HTTP/1.1 429 Too Many\r\nretry-after: 2\r\nretry-after-ms: 1500\r\ncontent-length: 0\r\n\r\n"[..],
    );
    let h = parse_head(&mut buf)
        .ok()
        .flatten()
        .map(|h| (h.status, h.retry_after));
    assert_eq!(h, Some((429, Some(Duration::from_millis(1500)))));
    let cases = [
        ("retry-after", "3", Some(Duration::from_secs(3))),
        ("Retry-After", "0.25", Some(Duration::from_millis(250))),
        ("retry-after-ms", "20", Some(Duration::from_millis(20))),
        ("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT", None),
        ("retry-after", "-1", None),
        ("x-other", "3", None),
    ];
    for (name, value, want) in cases {
        assert_eq!(retry_after_of(name, value), want, "{name}: {value}");
    }
}

#[test]
fn heads_tell_framing_and_keep_alive() {
    let head = |status, framing, keep_alive| {
        Some(Head {
            status,
            retry_after: None,
            framing,
            keep_alive,
        })
    };
    let cases: [(&[u8], Option<Head>); 5] = [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nrest",
            head(200, Framing::Chunked(Chunked::Size), true),
        ),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 E\r\ncontent-length: 3\r\nConnection: close\r\n\r\n",
            head(500, Framing::Length(3), false),
        ),
        (b"HTTP/1.0 200 OK\r\n\r\n", head(200, Framing::Close, false)),
        (b"HTTP/1.1 200 OK\r\nContent-Le", None),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
            head(200, Framing::Length(2), true),
        ),
    ];
    for (wire, want) in cases {
        let mut buf = BytesMut::from(wire);
        assert_eq!(
            parse_head(&mut buf).unwrap(),
            want,
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
    let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nrest"[..]);
    let _ = parse_head(&mut buf);
    assert_eq!(&buf[..], b"rest");
}
