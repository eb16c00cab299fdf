//! Every meaning check of docs/spec.md, each with a broken spec: the problem is found, located
//! at the right line and column, and says what to do.

use benchspec::spec::Severity::{Error as E, Warning as W};
use benchspec::spec::{self, Severity, Stage};

/// A valid spec with `{engine}`, `{model}`, `{matrix}` and `{phases}` to fill in.
fn spec_with(engine: &str, model: &str, matrix: &str, rest: &str) -> String {
    format!("version: 1\nname: t\nengine:\n{engine}\nmodel:\n{model}\nmatrix:\n{matrix}\n{rest}")
}

const ENGINE: &str = "  kind: vllm";
const MODEL: &str = "  served_name: m\n  max_model_len: 32K";
const MATRIX: &str = "  contexts: [8K, 16K]\n  concurrency: [1, 2]";

struct Case {
    name: &'static str,
    text: String,
    /// (severity, pointer, line, column, words the message must contain)
    want: Vec<(Severity, &'static str, usize, usize, &'static str)>,
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// Every case: a broken (or valid) spec and the diagnostics it must give.
fn cases() -> Vec<Case> {
    [
        context_cases(),
        axis_cases(),
        load_and_slo_cases(),
        phase_and_port_cases(),
        launch_cases(),
        env_and_sim_cases(),
        workload_cases(),
        prefix_and_length_cases(),
        report_and_replica_cases(),
        endpoint_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Contexts against `max_model_len` and the matrix.
fn context_cases() -> Vec<Case> {
    vec![
        Case {
            name: "decode context too long for max_model_len",
            text: spec_with(
                ENGINE,
                MODEL,
                "  contexts: [8K, 32K]\n  concurrency: [1]",
                "phases:\n  decode:\n    contexts: [8K, 32K]\n",
            ),
            want: vec![(
                E,
                "/phases/decode/contexts/1",
                13,
                20,
                "32768 + 4096 output tokens > max_model_len 32768",
            )],
        },
        Case {
            name: "matrix-only context too long is not an error (the plan skips it)",
            text: spec_with(
                ENGINE,
                MODEL,
                "  contexts: [8K, 32K]\n  concurrency: [1]",
                "",
            ),
            want: vec![],
        },
        Case {
            name: "phase context not in the matrix",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  prefill:\n    contexts: [8K, 12K]\n",
            ),
            want: vec![(
                E,
                "/phases/prefill/contexts/1",
                13,
                20,
                "12K is not in `matrix.contexts`",
            )],
        },
    ]
}

/// The matrix's and the phases' axes: in the matrix, listed once, sorted, not empty.
fn axis_cases() -> Vec<Case> {
    vec![
        Case {
            name: "phase concurrency not in the matrix",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  decode:\n    concurrency: [3]\n",
            ),
            want: vec![(
                E,
                "/phases/decode/concurrency/0",
                13,
                19,
                "3 is not in `matrix.concurrency`",
            )],
        },
        Case {
            name: "duplicate context",
            text: spec_with(
                ENGINE,
                MODEL,
                "  contexts: [8K, 8K]\n  concurrency: [1]",
                "",
            ),
            want: vec![(E, "/matrix/contexts/1", 9, 18, "8K is listed twice")],
        },
        Case {
            name: "unsorted concurrency",
            text: spec_with(ENGINE, MODEL, "  contexts: [8K]\n  concurrency: [4, 2]", ""),
            want: vec![(E, "/matrix/concurrency/1", 10, 20, "2 comes after 4")],
        },
        Case {
            name: "empty matrix axis",
            text: spec_with(ENGINE, MODEL, "  contexts: []\n  concurrency: [1]", ""),
            want: vec![(E, "/matrix/contexts", 9, 13, "must not be empty")],
        },
        Case {
            name: "empty phase axis",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  decode:\n    contexts: []\n",
            ),
            want: vec![(
                E,
                "/phases/decode/contexts",
                13,
                15,
                "an empty list measures nothing",
            )],
        },
    ]
}

/// Load rates and arrivals, and SLO terms.
fn load_and_slo_cases() -> Vec<Case> {
    vec![
        Case {
            name: "a rate of 0 and inf without a request count",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  load:\n    rates: [0, inf]\n",
            ),
            want: vec![
                (E, "/phases/load/rates/0", 13, 13, "expected a rate above 0"),
                (
                    E,
                    "/phases/load/rates/1",
                    13,
                    16,
                    "set `phases.load.requests`",
                ),
            ],
        },
        Case {
            name: "burstiness 0, duration and requests both",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  load: {rates: [1], arrivals: gamma, burstiness: 0, duration: 10s, requests: 5}\n",
            ),
            want: vec![
                (E, "/phases/load/burstiness", 12, 51, "not a gamma shape"),
                (E, "/phases/load/requests", 12, 79, "not both"),
            ],
        },
        Case {
            name: "an SLO on an unknown metric and percentile, and a zero objective",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "slo:\n  latency: {p90: 1s}\n  ttft: {p80: 1s}\n  tpot: {p90: 0ms}\n",
            ),
            want: vec![
                (E, "/slo/latency", 12, 3, "unknown field `latency`"),
                (E, "/slo/ttft/p80", 13, 10, "unknown field `p80`"),
                (E, "/slo/tpot/p90", 14, 15, "can never be met"),
            ],
        },
    ]
}

/// Capacity bounds, zero concurrency, every phase disabled, a launch port.
fn phase_and_port_cases() -> Vec<Case> {
    vec![
        Case {
            name: "capacity bounds the wrong way round, and no SLO",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  capacity: {min: 64, max: 8}\n",
            ),
            want: vec![
                (E, "/phases/capacity", 12, 13, "add `slo:`"),
                (E, "/phases/capacity/max", 12, 28, "the wrong way round"),
            ],
        },
        Case {
            name: "zero concurrency",
            text: spec_with(ENGINE, MODEL, "  contexts: [8K]\n  concurrency: [0, 1]", ""),
            want: vec![(E, "/matrix/concurrency/0", 10, 17, "")],
        },
        Case {
            name: "both phases disabled",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  prefill: {enabled: false}\n  decode: {enabled: false}\n",
            ),
            want: vec![(E, "/phases", 12, 3, "every phase is disabled")],
        },
        Case {
            name: "launch port disagrees with base_url",
            text: spec_with(
                "  kind: vllm\n  base_url: http://127.0.0.1:8000\n  launch:\n    command: vllm serve m --port 9000",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(
                E,
                "/engine/launch/command",
                7,
                14,
                "listens on port 9000 but `base_url` http://127.0.0.1:8000 uses port 8000",
            )],
        },
    ]
}

/// A launch command's default port, quotes and API key; an unset `api_key_env`.
fn launch_cases() -> Vec<Case> {
    vec![
        Case {
            name: "launch default port disagrees with base_url",
            text: spec_with(
                "  kind: sglang\n  launch:\n    command: [python, -m, sglang.launch_server]",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(
                E,
                "/engine/launch/command",
                6,
                14,
                "listens by default on port 30000",
            )],
        },
        Case {
            name: "launch command with an unterminated quote",
            text: spec_with(
                "  kind: vllm\n  launch:\n    command: vllm serve 'm",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(E, "/engine/launch/command", 6, 14, "unterminated `'` quote")],
        },
        Case {
            name: "literal API key in the command",
            text: spec_with(
                "  kind: vllm\n  launch:\n    command: vllm serve m --api-key sk-1",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(E, "/engine/launch/command", 6, 14, "literal API key")],
        },
        Case {
            name: "api_key_env not set is a warning at validate",
            text: spec_with(
                "  kind: vllm\n  api_key_env: NOT_SET_ANYWHERE",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(
                W,
                "/engine/api_key_env",
                5,
                16,
                "`NOT_SET_ANYWHERE` is not set",
            )],
        },
    ]
}

/// An unset `${VAR}`, and the simulator's settings.
fn env_and_sim_cases() -> Vec<Case> {
    vec![
        Case {
            name: "unset ${VAR} in the launch command",
            text: spec_with(
                "  kind: vllm\n  launch:\n    command: vllm serve ${MODEL_DIR}",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(
                W,
                "/engine/launch/command",
                6,
                14,
                "`$MODEL_DIR` names an environment variable that is not set",
            )],
        },
        Case {
            name: "sim settings on another engine",
            text: spec_with("  kind: vllm\n  sim: {profile: tiny}", MODEL, MATRIX, ""),
            want: vec![(E, "/engine/sim", 5, 8, "applies to `kind: sim` only")],
        },
        Case {
            name: "launch on the sim engine",
            text: spec_with("  kind: sim\n  launch: {command: x}", MODEL, MATRIX, ""),
            want: vec![(E, "/engine/launch", 5, 11, "remove `launch`")],
        },
        Case {
            name: "unknown sim profile",
            text: spec_with("  kind: sim\n  sim: {profile: tiyn}", MODEL, MATRIX, ""),
            want: vec![(
                E,
                "/engine/sim/profile",
                5,
                18,
                "unknown simulator profile `tiyn`; did you mean `tiny`?",
            )],
        },
        Case {
            name: "max_model_len beyond the sim profile",
            text: spec_with("  kind: sim\n  sim: {profile: tiny}", MODEL, MATRIX, ""),
            want: vec![(
                E,
                "/model/max_model_len",
                8,
                18,
                "the `tiny` profile serves at most 8192 tokens",
            )],
        },
    ]
}

/// A missing tokenizer, request-count without requests, a zero window.
fn workload_cases() -> Vec<Case> {
    vec![
        Case {
            name: "a local tokenizer that is not there",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "workload:\n  tokenizer: ./tokenizer.json\n",
            ),
            want: vec![(
                E,
                "/workload/tokenizer",
                12,
                14,
                "`./tokenizer.json` does not exist",
            )],
        },
        Case {
            name: "request-count without requests",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  decode:\n    mode: request-count\n",
            ),
            want: vec![(
                E,
                "/phases/decode/requests",
                13,
                5,
                "needs `requests` of at least 1",
            )],
        },
        Case {
            name: "zero window",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  decode:\n    duration: 0s\n",
            ),
            want: vec![(E, "/phases/decode/duration", 13, 15, "longer than 0s")],
        },
    ]
}

/// Shared prefixes against the contexts, and max output against `max_model_len`.
fn prefix_and_length_cases() -> Vec<Case> {
    vec![
        Case {
            name: "a shared prefix as long as the shortest context",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "workload:\n  prefix:\n    groups: 2\n    tokens: 8K\n",
            ),
            want: vec![(
                E,
                "/workload/prefix/tokens",
                14,
                13,
                "a prefix of 8K leaves no room for a unique rest in the 8K context",
            )],
        },
        Case {
            name: "a shared prefix that fits",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "workload:\n  prefix: {groups: 4, tokens: 8176}\n",
            ),
            want: vec![],
        },
        Case {
            name: "max output leaves no room",
            text: spec_with(
                ENGINE,
                "  served_name: m\n  max_model_len: 4096",
                MATRIX,
                "",
            ),
            want: vec![(
                E,
                "/model/max_model_len",
                7,
                18,
                "4096 output tokens leave no room for a prompt",
            )],
        },
    ]
}

/// Prefill repeats, report templates, `base_url` and replicas.
fn report_and_replica_cases() -> Vec<Case> {
    vec![
        Case {
            name: "repeats without standalone",
            text: spec_with(
                ENGINE,
                MODEL,
                MATRIX,
                "phases:\n  prefill:\n    repeats: 3\n",
            ),
            want: vec![(
                W,
                "/phases/prefill/repeats",
                13,
                14,
                "applies to `standalone` prefill only",
            )],
        },
        Case {
            name: "report template that is not .j2",
            text: spec_with(ENGINE, MODEL, MATRIX, "report:\n  templates: [mine.html]\n"),
            want: vec![(E, "/report/templates/0", 12, 15, "templates end in `.j2`")],
        },
        Case {
            name: "bad base_url",
            text: spec_with(
                "  kind: vllm\n  base_url: localhost:8000",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(E, "/engine/base_url", 5, 13, "not an http(s) URL")],
        },
        Case {
            name: "replicas without a launch",
            text: spec_with("  kind: vllm\n  replicas: 2", MODEL, MATRIX, ""),
            want: vec![(E, "/engine/replicas", 5, 13, "started from `engine.launch`")],
        },
        Case {
            name: "replicas on one port",
            text: spec_with(
                "  kind: vllm\n  replicas: 2\n  launch:\n    command: vllm serve m",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(E, "/engine/launch/command", 7, 14, "`--port ${PORT}`")],
        },
    ]
}

/// `endpoints` beside `base_url` or a launch.
fn endpoint_cases() -> Vec<Case> {
    vec![
        Case {
            name: "endpoints beside base_url, one not a URL",
            text: spec_with(
                "  kind: vllm\n  base_url: http://127.0.0.1:8000\n  endpoints: [http://127.0.0.1:8001, 'x:1']",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![
                (E, "/engine/base_url", 5, 13, "remove `base_url`"),
                (E, "/engine/endpoints/1", 6, 38, "not an http(s) URL"),
            ],
        },
        Case {
            name: "endpoints with a launch",
            text: spec_with(
                "  kind: vllm\n  endpoints: [http://127.0.0.1:8001]\n  launch:\n    command: vllm serve m",
                MODEL,
                MATRIX,
                "",
            ),
            want: vec![(E, "/engine/endpoints", 5, 14, "servers already running")],
        },
    ]
}

#[test]
fn every_meaning_check_fires_where_it_should() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = match spec::parse("t.yaml", &case.text, Stage::Validate, &no_env) {
            Ok(loaded) => loaded.warnings,
            Err(e) => e.diagnostics().to_vec(),
        };
        let got: Vec<_> = got
            .iter()
            .map(|d| (d.severity, d.pointer.as_str(), d.line, d.column))
            .collect();
        let want: Vec<_> = case
            .want
            .iter()
            .map(|(s, p, l, c, _)| (*s, *p, *l, *c))
            .collect();
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for case in cases() {
        let got = match spec::parse("t.yaml", &case.text, Stage::Validate, &no_env) {
            Ok(loaded) => loaded.warnings,
            Err(e) => e.diagnostics().to_vec(),
        };
        assert_eq!(
            got.len(),
            case.want.len(),
            "{}: {got:#?}\n{}",
            case.name,
            case.text
        );
        for (d, (sev, ptr, line, col, words)) in got.iter().zip(&case.want) {
            assert_eq!(
                (d.severity, d.pointer.as_str()),
                (*sev, *ptr),
                "{}",
                case.name
            );
            assert_eq!(
                (d.line, d.column),
                (*line, *col),
                "{}: {}",
                case.name,
                d.line_form(false)
            );
            assert!(d.message.contains(words), "{}: {}", case.name, d.message);
        }
    }
}

#[test]
fn unset_variables_are_errors_at_run() {
    let text = spec_with(
        "  kind: vllm\n  api_key_env: NOT_SET_ANYWHERE",
        MODEL,
        MATRIX,
        "",
    );
    let err = spec::parse("t.yaml", &text, Stage::Run, &no_env)
        .err()
        .map(|e| e.diagnostics().to_vec())
        .unwrap_or_default();
    assert_eq!(err.len(), 1);
    assert_eq!(err[0].severity, Severity::Error);
    let set = |_: &str| Some("x".to_string());
    assert!(spec::parse("t.yaml", &text, Stage::Run, &set).is_ok());
}

#[test]
fn a_key_with_a_line_break_is_refused_at_validate_without_showing_it() {
    let text = spec_with("  kind: vllm\n  api_key_env: KEY", MODEL, MATRIX, "");
    let broken = |_: &str| Some("sk-secret\r\nX-Injected: 1".to_string());
    let err = spec::parse("t.yaml", &text, Stage::Validate, &broken)
        .err()
        .map(|e| e.diagnostics().to_vec())
        .unwrap_or_default();
    assert_eq!(err.len(), 1, "{err:?}");
    assert_eq!(err[0].severity, Severity::Error);
    let shown = format!("{err:?}");
    assert!(
        shown.contains("`KEY`") && shown.contains("byte 9"),
        "{shown}"
    );
    assert!(!shown.contains("sk-secret"), "{shown}");
    let fine = |_: &str| Some("sk-secret".to_string());
    assert!(spec::parse("t.yaml", &text, Stage::Validate, &fine).is_ok());
}

#[test]
fn schema_and_meaning_problems_are_reported_together() {
    let text = spec_with(
        "  kind: vlm",
        MODEL,
        "  contexts: [16K, 8K]\n  concurrency: [1]",
        "",
    );
    let err = spec::parse("t.yaml", &text, Stage::Validate, &no_env)
        .err()
        .map(|e| e.diagnostics().to_vec())
        .unwrap_or_default();
    let messages: Vec<_> = err.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("did you mean `vllm`?"));
    assert!(messages[1].contains("8K comes after 16K"));
}

#[test]
fn schema_problems_say_what_to_write() {
    let cases = [
        (
            "  contexts: [8X]\n  concurrency: [1]",
            "/matrix/contexts/0",
            "`8X` is not a token count; write e.g. `8192` or `8K`",
        ),
        (
            "  contexts: [8.5]\n  concurrency: [1]",
            "/matrix/contexts/0",
            "expected a positive token count",
        ),
        (
            "  contexts: [8K]\n  concurrency: one",
            "/matrix/concurrency",
            "expected a list, found the string `one`",
        ),
        (
            "  contexts: [8K]\n  concurency: [1]",
            "/matrix/concurency",
            "unknown field `concurency` in `matrix`; did you mean `concurrency`?",
        ),
        (
            "  contexts: [8K]",
            "/matrix",
            "missing required field `concurrency` in `matrix`",
        ),
    ];
    for (matrix, ptr, words) in cases {
        let text = spec_with(ENGINE, MODEL, matrix, "");
        let err = spec::parse("t.yaml", &text, Stage::Validate, &no_env)
            .err()
            .map(|e| e.diagnostics().to_vec())
            .unwrap_or_default();
        assert!(
            err.iter()
                .any(|d| d.pointer == ptr && d.message.contains(words)),
            "{matrix}: {err:#?}"
        );
    }
}

#[test]
fn toml_problems_are_located_too() {
    let text = "version = 1\nname = \"t\"\n[engine]\nkind = \"vllm\"\nbase_url = \"http://127.0.0.1:8000\"\n[engine.launch]\ncommand = \"vllm serve m --port 9\"\n[model]\nserved_name = \"m\"\n[matrix]\ncontexts = [\"8K\", \"8K\"]\nconcurrency = [1]\n";
    let err = spec::parse("t.toml", text, Stage::Validate, &no_env)
        .err()
        .map(|e| e.diagnostics().to_vec())
        .unwrap_or_default();
    let got: Vec<_> = err
        .iter()
        .map(|d| (d.line, d.column, d.pointer.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (7, 11, "/engine/launch/command"),
            (11, 19, "/matrix/contexts/1")
        ]
    );
}
