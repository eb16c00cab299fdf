//! A streaming server-sent-events parser: bytes in, `data` payloads out, one line buffered at a
//! time and never more than a cap, so a gigabyte-long line or an endless stream without
//! newlines costs bounded memory and ends in an error rather than an allocation failure.
//!
//! One rule for the cap, whatever way the network cuts the bytes: a line's length is every
//! byte before its `\n` (field name and a trailing `\r` included), and a line longer than the
//! cap is refused. The fast path for a whole event in one read measures the same length, so a
//! stream is refused or accepted alike whether a line arrives in one read or in many.

/// Why a stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line longer than the cap.
    #[error("an SSE line is longer than {0} bytes")]
    LineTooLong(usize),
    /// A line that is not UTF-8.
    #[error("an SSE line is not UTF-8")]
    NotUtf8,
}

/// The default cap of one line: far above any real chunk.
pub const MAX_LINE: usize = 1 << 20;

/// The parser's state between chunks of bytes.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    max_line: usize,
    failed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(MAX_LINE)
    }
}

impl SseParser {
    /// A parser refusing lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            max_line,
            failed: false,
        }
    }

    /// Feed bytes; every complete event's data is passed to `on_event`. After an error the
    /// parser stays failed and ignores further input.
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(&str)) -> Result<(), SseError> {
        if self.failed {
            return Ok(());
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.line.is_empty()
                && !self.has_data
                && let Some((data, used)) = whole_event(rest, self.max_line)
            {
                on_event(data);
                rest = &rest[used..];
                continue;
            }
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    if self.line.len() + i > self.max_line {
                        return self.fail(SseError::LineTooLong(self.max_line));
                    }
                    self.line.extend_from_slice(&rest[..i]);
                    rest = &rest[i + 1..];
                    self.end_line(&mut on_event)?;
                }
                None => {
                    if self.line.len() + rest.len() > self.max_line {
                        return self.fail(SseError::LineTooLong(self.max_line));
                    }
                    self.line.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    /// The stream ended: an event still being built is dispatched (some servers omit the
    /// final blank line).
    pub fn finish(&mut self, mut on_event: impl FnMut(&str)) -> Result<(), SseError> {
        if self.failed {
            return Ok(());
        }
        if !self.line.is_empty() {
            self.end_line(&mut on_event)?;
        }
        if self.has_data {
            on_event(&self.data);
            self.data.clear();
            self.has_data = false;
        }
        Ok(())
    }

    fn fail(&mut self, e: SseError) -> Result<(), SseError> {
        self.failed = true;
        self.line = Vec::new();
        self.data = String::new();
        Err(e)
    }

    fn end_line(&mut self, on_event: &mut impl FnMut(&str)) -> Result<(), SseError> {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.is_empty() {
            if self.has_data {
                on_event(&self.data);
                self.data.clear();
                self.has_data = false;
            }
            return Ok(());
        }
        let Ok(line) = std::str::from_utf8(&self.line) else {
            return self.fail(SseError::NotUtf8);
        };
        if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            if self.has_data {
                self.data.push('\n');
            }
            if self.data.len() + value.len() > self.max_line {
                return self.fail(SseError::LineTooLong(self.max_line));
            }
            self.data.push_str(value);
            self.has_data = true;
        }
        // Comments (`:`), `event:`, `id:` and `retry:` carry nothing we measure.
        self.line.clear();
        Ok(())
    }
}

/// The fast path: `bytes` starts with one whole single-line event (`data: …` and a blank
/// line, `\n` or `\r\n` endings), returned as a slice with the bytes it used. Anything else —
/// a partial event, several `data` lines, other fields, comments — goes the buffered way.
fn whole_event(bytes: &[u8], max_line: usize) -> Option<(&str, usize)> {
    let body = bytes.strip_prefix(b"data:")?;
    let nl = body.iter().position(|&b| b == b'\n')?;
    if 5 + nl > max_line {
        // Over the cap as the buffered way counts it (all bytes before `\n`): that way refuses it.
        return None;
    }
    let mut line = &body[..nl];
    let mut used = 5 + nl + 1;
    if let Some(l) = line.strip_suffix(b"\r") {
        line = l;
    }
    let after = &bytes[used..];
    used += if after.starts_with(b"\n") {
        1
    } else if after.starts_with(b"\r\n") {
        2
    } else {
        return None;
    };
    let line = line.strip_prefix(b" ").unwrap_or(line);
    std::str::from_utf8(line).ok().map(|s| (s, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> (Vec<String>, Result<(), SseError>) {
        let mut p = SseParser::new(64);
        let mut out = Vec::new();
        for c in chunks {
            if let Err(e) = p.feed(c, |d| out.push(d.to_string())) {
                return (out, Err(e));
            }
        }
        let r = p.finish(|d| out.push(d.to_string()));
        (out, r)
    }

    #[test]
    fn events_table() {
        let cases: &[(&[&[u8]], &[&str])] = &[
            (&[b"data: a\n\ndata: b\n\n"], &["a", "b"]),
            (&[b"data: a", b"bc\n", b"\n"], &["abc"]),
            (&[b"data: a\r\n\r\n"], &["a"]),
            (&[b": ping\n\ndata:x\n\n"], &["x"]),
            (&[b"data: 1\ndata: 2\n\n"], &["1\n2"]),
            (&[b"event: e\nid: 3\ndata: [DONE]\n\n"], &["[DONE]"]),
            (
                &[b"data: tail-without-blank-line"],
                &["tail-without-blank-line"],
            ),
            (&[b"\n\n\n"], &[]),
            (&[b"data: a\n\ndata: b\n", b"\n"], &["a", "b"]),
            (&[b"data: a\n\n: c\ndata: b\n\n"], &["a", "b"]),
            (&[b"data: a\n\ndata: 1\ndata: 2\n\n"], &["a", "1\n2"]),
            (&[b"data:\n\n"], &[""]),
        ];
        for (chunks, want) in cases {
            let (got, r) = parse(chunks);
            assert_eq!(r, Ok(()));
            assert_eq!(got, *want, "{chunks:?}");
        }
    }

    /// The minimal case a property run found: a line of cap + 6 bytes (`data:`, 161 bytes,
    /// `\r`) was accepted whole and refused when cut in two.
    #[test]
    fn a_line_over_the_cap_is_refused_however_it_is_cut() {
        let mut bytes = b"data:".to_vec();
        bytes.extend(std::iter::repeat_n(b'a', 161));
        bytes.extend_from_slice(b"\r\n\n");
        for cut in [None, Some(2), Some(100), Some(166), Some(167)] {
            let mut p = SseParser::new(161);
            let mut events = 0;
            let r = match cut {
                None => p.feed(&bytes, |_| events += 1),
                Some(c) => p
                    .feed(&bytes[..c], |_| events += 1)
                    .and_then(|()| p.feed(&bytes[c..], |_| events += 1)),
            };
            assert_eq!(r, Err(SseError::LineTooLong(161)), "cut {cut:?}");
            assert_eq!(events, 0, "cut {cut:?}");
        }
        // At the cap exactly (`data:` + 155 bytes + `\r` = 161), one event either way.
        let mut ok = b"data:".to_vec();
        ok.extend(std::iter::repeat_n(b'a', 155));
        ok.extend_from_slice(b"\r\n\n");
        for cut in [None, Some(3), Some(161)] {
            let mut p = SseParser::new(161);
            let mut got = Vec::new();
            let r = match cut {
                None => p.feed(&ok, |d| got.push(d.len())),
                Some(c) => p
                    .feed(&ok[..c], |d| got.push(d.len()))
                    .and_then(|()| p.feed(&ok[c..], |d| got.push(d.len()))),
            };
            assert_eq!((r, got), (Ok(()), vec![155]), "cut {cut:?}");
        }
    }

    #[test]
    fn long_lines_are_refused_without_buffering_them() {
        let mut p = SseParser::new(64);
        let big = vec![b'x'; 40];
        assert!(p.feed(b"data: ", |_| {}).is_ok());
        assert!(p.feed(&big, |_| {}).is_ok());
        assert_eq!(p.feed(&big, |_| {}), Err(SseError::LineTooLong(64)));
        assert!(p.line.capacity() <= 128);
        assert_eq!(p.feed(b"\n\ndata: later\n\n", |_| unreachable!()), Ok(()));
    }
}
