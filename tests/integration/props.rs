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
        let p = plan::expand(&loaded.spec, &Rates::default());
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
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

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
