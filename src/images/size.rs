//! An image's width and height from its header, as a server reads them before it decodes
//! the pixels: PNG's `IHDR`, JPEG's start-of-frame marker; and the bytes of a base64
//! `data:` URL.

use base64::Engine as _;

/// The bytes of a `data:<mime>;base64,<data>` URL; `None` for another URL or bad base64.
pub fn data_url(url: &str) -> Option<Vec<u8>> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    if !head.ends_with(";base64") {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// `(width, height)` of a PNG or JPEG; `None` for anything else.
pub fn size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        let be = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        return Some((be(16)?, be(20)?));
    }
    if bytes.starts_with(&[0xff, 0xd8]) {
        return jpeg(bytes);
    }
    None
}

/// A JPEG's size from its first start-of-frame marker (SOF0–SOF15 but DHT, JPG and DAC).
fn jpeg(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        let (&ff, &marker) = (bytes.get(at)?, bytes.get(at + 1)?);
        if ff != 0xff {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([
            *bytes.get(at + 2)?,
            *bytes.get(at + 3)?,
        ]));
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            let h = u16::from_be_bytes([*bytes.get(at + 5)?, *bytes.get(at + 6)?]);
            let w = u16::from_be_bytes([*bytes.get(at + 7)?, *bytes.get(at + 8)?]);
            return Some((u32::from(w), u32::from(h)));
        }
        at += 2 + len;
    }
}
