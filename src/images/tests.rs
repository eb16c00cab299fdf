use super::*;
use crate::spec::{Distribution, Images};

fn images(count: Amount, side: Amount, format: ImageFormat) -> Images {
    Images {
        count,
        width: side,
        height: side,
        format,
        seed: 7,
    }
}

#[test]
fn crc_and_adler_match_their_published_check_values() {
    // The CRC of an IEND chunk is in every PNG: AE 42 60 82; Adler-32 of "Wikipedia" is
    // RFC 1950's worked example on Wikipedia, 0x11E60398; CRC-32 of "123456789" is the
    // catalogued check value 0xCBF43926.
    assert_eq!(png::crc32(b"IEND"), 0xae42_6082);
    assert_eq!(png::crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(png::adler32(b"Wikipedia"), 0x11e6_0398);
}

#[test]
fn each_image_reads_back_at_the_size_it_was_made() {
    for format in [ImageFormat::Png, ImageFormat::Jpeg] {
        for (w, h) in [(1, 1), (3, 2), (300, 17), (64, 400)] {
            let mut rng = Rng::new(1);
            let px = paint(w, h, &mut rng);
            let bytes = match format {
                ImageFormat::Png => png::encode(w, h, &px),
                ImageFormat::Jpeg => jpeg(w, h, &px),
            };
            assert_eq!(size::size(&bytes), Some((w, h)), "{format:?} {w}x{h}");
        }
    }
    // A stored PNG holds every pixel: 300 × 17 × 3 bytes and a filter byte per row.
    let px = paint(300, 17, &mut Rng::new(1));
    assert!(png::encode(300, 17, &px).len() > 300 * 17 * 3 + 17);
}

#[test]
fn the_parts_are_data_urls_the_reader_takes_back() {
    let m = Maker::new(
        images(Amount::Fixed(2), Amount::Fixed(20), ImageFormat::Png),
        None,
    );
    let (n, parts) = m.attach("hello");
    assert_eq!(n, 2);
    let json: serde_json::Value =
        serde_json::from_slice(&[b"[0", &parts[..], b"]"].concat()).unwrap_or_default();
    let urls: Vec<_> = json
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.pointer("/image_url/url").and_then(|u| u.as_str()))
        .collect();
    assert_eq!(urls.len(), 2);
    for u in urls {
        assert!(u.starts_with("data:image/png;base64,"));
        let bytes = size::data_url(u).unwrap_or_default();
        assert_eq!(size::size(&bytes), Some((20, 20)));
    }
    // The same prompt gets the same images; another prompt others.
    assert_eq!(m.attach("hello").1, parts);
    assert_ne!(m.attach("hello!").1, parts);
}

#[test]
fn drawn_counts_and_sizes_keep_to_their_range_and_mean() {
    let uniform = |mean, spread| {
        Amount::Drawn(crate::spec::images::Drawn {
            mean,
            distribution: Distribution::Uniform,
            spread,
        })
    };
    let m = Maker::new(
        images(uniform(2, 1.0), uniform(100, 0.5), ImageFormat::Png),
        Some(ImageLimit {
            per_prompt: None,
            width: Some(120),
            height: None,
        }),
    );
    let (mut n, mut images) = (0, 0);
    for i in 0..2000 {
        let s = m.shapes(&format!("p{i}"));
        assert!(s.len() <= 4, "uniform 2 ± 2 draws at most 4");
        for (w, h) in &s {
            assert!(
                (50..=120).contains(w),
                "width {w} within 100 ± 50 and the limit 120"
            );
            assert!((50..=150).contains(h), "height {h} within 100 ± 50");
        }
        n += s.len();
        images += 1;
    }
    let mean = n as f64 / f64::from(images);
    assert!(
        (mean - 2.0).abs() < 0.1,
        "mean count {mean}, drawn around 2"
    );
}
