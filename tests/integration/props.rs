//! Property tests: arbitrary text and arbitrary valid-shaped documents never make the loader,
//! the validator or the planner panic, every problem is located inside the file, and each
//! input is handled in bounded time.

use benchspec::plan::{self, Rates, Shard};
use benchspec::spec::{self, Stage};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

/// Far above what a 64 KiB input needs; a hang or a blow-up fails it.
const BOUND: Duration = Duration::from_secs(5);

fn check_text(name: &str, text: &str) {
    let start = Instant::now();
    let result = spec::parse(name, text, Stage::Validate, &|_| None);
    assert!(start.elapsed() < BOUND, "{name} took {:?}", start.elapsed());
    let lines = text.lines().count().max(1) + 1;
    let diagnostics = match &result {
        Ok(l) => l.warnings.clone(),
        Err(e) => e.diagnostics().to_vec(),
    };
    for d in diagnostics {
        assert!(
            d.line >= 1 && d.line <= lines,
            "{}: line {} of {lines}",
            d.message,
            d.line
        );
        assert!(d.column >= 1);
        let _ = d.caret_form(false);
    }
    if let Ok(loaded) = result {
        let p = plan::expand(&loaded.spec, &|_| Rates::default());
        let _ = plan::render_table(&p, name);
        let _ = p.shard(Shard { k: 1, n: 3 });
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u64..300_000).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop::sample::select(vec![
            "8K",
            "128K",
            "0K",
            "30s",
            "0ms",
            "141GB",
            "vllm",
            "sim",
            "chat",
            "warm",
            "cold",
            "standalone",
            "request-count",
            "http://127.0.0.1:8000",
            "vllm serve m --port 8000",
            "${X}",
            "'",
            ""
        ])
        .prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(field_name(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn field_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "version",
        "name",
        "engine",
        "kind",
        "model",
        "served_name",
        "max_model_len",
        "matrix",
        "contexts",
        "concurrency",
        "phases",
        "prefill",
        "decode",
        "mode",
        "duration",
        "requests",
        "enabled",
        "launch",
        "command",
        "base_url",
        "api_key_env",
        "sim",
        "profile",
        "workload",
        "max_output_tokens",
        "concurency",
    ])
    .prop_map(str::to_string)
}

/// A spec that is valid in shape, with some of its parts replaced by arbitrary values.
fn spec_shaped() -> impl Strategy<Value = Value> {
    let contexts = prop::collection::vec(
        prop::sample::select(vec![
            json!("8K"),
            json!("16K"),
            json!(1000),
            json!("128K"),
            json!(0),
        ]),
        0..5,
    );
    let conc = prop::collection::vec(0u32..200, 0..6);
    (
        contexts,
        conc,
        prop::option::of(value()),
        prop::option::of(field_name()),
        prop::option::of(value()),
        1u64..200_000,
    )
        .prop_map(|(ctx, conc, noise, at, phases, max_len)| {
            let mut doc = json!({
                "version": 1, "name": "p",
                "engine": {"kind": "vllm", "launch": {"command": "vllm serve m --port 8000"}},
                "model": {"served_name": "m", "max_model_len": max_len},
                "matrix": {"contexts": ctx, "concurrency": conc},
            });
            if let (Some(noise), Some(at), Value::Object(map)) = (noise, at, &mut doc) {
                map.insert(at, noise);
            }
            if let (Some(p), Value::Object(map)) = (phases, &mut doc) {
                map.insert("phases".into(), p);
            }
            doc
        })
}

fn to_toml(v: &Value) -> Option<String> {
    fn strip(v: &Value) -> Option<Value> {
        match v {
            Value::Null => None,
            Value::Array(a) => Some(Value::Array(a.iter().filter_map(strip).collect())),
            Value::Object(m) => Some(Value::Object(
                m.iter()
                    .filter_map(|(k, v)| strip(v).map(|v| (k.clone(), v)))
                    .collect::<Map<_, _>>(),
            )),
            other => Some(other.clone()),
        }
    }
    toml::to_string(&strip(v)?).ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        check_text("p.yaml", &text);
        check_text("p.toml", &text);
    }

    #[test]
    fn yamlish_text_never_panics(text in "([a-z_]{1,12}: ?(\\[|\\{|8K|-1|'|\"|&a|\\*a|<<|~|\\n  |\\n- )*\\n){0,30}") {
        check_text("p.yaml", &text);
    }

    #[test]
    fn spec_shaped_documents_never_panic(doc in spec_shaped()) {
        let yaml = serde_saphyr::to_string(&doc).unwrap();
        check_text("p.yaml", &yaml);
        if let Some(toml) = to_toml(&doc) {
            check_text("p.toml", &toml);
        }
        let json = serde_json::to_string(&doc).unwrap();
        check_text("p.yaml", &json);
    }
}

#[test]
fn hostile_documents_are_bounded() {
    let deep_yaml = "a: ".to_string() + &"[".repeat(100_000);
    let deep_toml = "a = ".to_string() + &"[".repeat(100_000);
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    let big = "name: ".to_string() + &"x".repeat(2 << 20);
    for (name, text) in [
        ("d.yaml", deep_yaml.as_str()),
        ("d.toml", deep_toml.as_str()),
        ("l.yaml", laughs),
        ("b.yaml", big.as_str()),
    ] {
        check_text(name, text);
        assert!(
            spec::parse(name, text, Stage::Validate, &|_| None).is_err(),
            "{name}"
        );
    }
}

/// Feed `bytes` to a fresh SSE parser in pieces cut at `cuts`; the events and the outcome.
fn sse_events(bytes: &[u8], cuts: &[usize], max_line: usize) -> (Vec<String>, Result<(), String>) {
    use benchspec::client::sse::SseParser;
    let mut p = SseParser::new(max_line);
    let mut events = Vec::new();
    let mut at = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.push(bytes.len());
    let mut outcome = Ok(());
    for end in points {
        if outcome.is_ok() {
            outcome = p
                .feed(&bytes[at..end], |e| events.push(e.to_string()))
                .map_err(|e| e.to_string());
        }
        at = end;
    }
    if outcome.is_ok() {
        outcome = p
            .finish(|e| events.push(e.to_string()))
            .map_err(|e| e.to_string());
    }
    (events, outcome)
}

/// SSE-ish bytes: field lines, blank lines, CR, long runs, invalid UTF-8.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: x\n".to_vec()),
        Just(b": comment\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"{\"choices\":[{\"text\":\"a\"}]}".to_vec()),
        Just(b"[DONE]".to_vec()),
        Just(vec![0xff, 0xfe]),
        proptest::collection::vec(any::<u8>(), 0..40),
        "[a-z ]{0,300}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|v| v.concat())
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    /// No panic, and the same events and outcome however the bytes are cut into chunks
    /// (the network decides the cuts).
    #[test]
    fn sse_parsing_does_not_depend_on_chunking(bytes in sse_bytes(), cuts in proptest::collection::vec(any::<usize>(), 0..12), cap in 16usize..4096) {
        let whole = sse_events(&bytes, &[], cap);
        let split = sse_events(&bytes, &cuts, cap);
        prop_assert_eq!(&whole, &split);
        for e in &whole.0 {
            prop_assert!(e.len() <= bytes.len());
        }
    }
}

#[test]
fn an_endless_line_is_refused_after_the_cap_without_buffering_it() {
    use benchspec::client::sse::{MAX_LINE, SseParser};
    // A gigabyte-long line (or an endless stream without newlines), 64 KiB at a time: the
    // parser refuses it once the line passes the cap, so it never holds more than the cap.
    let chunk = vec![b'a'; 64 << 10];
    let mut p = SseParser::default();
    let mut fed: usize = 0;
    let start = Instant::now();
    let mut refused_at = None;
    while fed < 1 << 30 {
        let r = p.feed(&chunk, |_| panic!("no event"));
        fed += chunk.len();
        if r.is_err() && refused_at.is_none() {
            refused_at = Some(fed);
        }
        if refused_at.is_some() && fed > (refused_at.unwrap_or(0) + (16 << 20)) {
            break; // keeps ignoring: enough to see it stays failed
        }
    }
    let at = refused_at.expect("the line is refused");
    assert!(
        at <= MAX_LINE + chunk.len(),
        "refused only after {at} bytes"
    );
    assert!(
        p.feed(b"\ndata: x\n\n", |_| panic!("a failed parser stays failed"))
            .is_ok()
    );
    assert!(start.elapsed() < BOUND, "{:?}", start.elapsed());
}

#[test]
fn an_endless_spec_is_refused_after_the_cap() {
    // A named pipe fed without end: the loader reads past the 1 MiB cap by one byte and stops
    // (reading to the end would never return).
    let dir = std::env::temp_dir().join(format!("benchspec-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("endless.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .unwrap();
        let chunk = vec![b'a'; 64 << 10];
        let mut written: u64 = 0;
        // Until the reader goes away (a broken pipe), or far past any sane spec.
        while written < 1 << 30 {
            if f.write_all(&chunk).is_err() {
                break;
            }
            written += chunk.len() as u64;
        }
        written
    });
    let start = Instant::now();
    let err = spec::load(fifo.to_str().unwrap(), Stage::Validate).unwrap_err();
    assert!(start.elapsed() < BOUND, "{:?}", start.elapsed());
    assert!(
        err.diagnostics()[0]
            .message
            .contains("larger than 1048576 bytes"),
        "{err}"
    );
    let written = writer.join().unwrap();
    assert!(
        written < 64 << 20,
        "the loader stopped reading: {written} bytes written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
