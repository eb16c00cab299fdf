//! The launch command's parsing, quoting, expansion and flags, table by table.

use super::*;

fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|w| w.to_string()).collect()
}

#[test]
fn launch_args_are_the_commands_words_or_none() {
    // (engine yaml, words)
    let cases: [(&str, &[&str]); 3] = [
        (
            "kind: vllm\n  launch: {command: \"vllm serve 'm x' --max-num-seqs 8\"}",
            &["vllm", "serve", "m x", "--max-num-seqs", "8"],
        ),
        (
            "kind: vllm\n  launch: {command: [llama-server, -np, '2']}",
            &["llama-server", "-np", "2"],
        ),
        ("kind: sim", &[]),
    ];
    for (engine, want) in cases {
        let text = format!(
            "version: 1\nname: t\nengine:\n  {engine}\n  base_url: http://127.0.0.1:8000\nmodel: {{served_name: m}}\nmatrix: {{contexts: [1K], concurrency: [1]}}\n"
        );
        let mut spec = crate::spec::parse("s.yaml", &text, crate::spec::Stage::Validate, &|_| None)
            .unwrap_or_else(|e| panic!("{:?}", e.diagnostics()))
            .spec;
        assert_eq!(spec.launch_args(), words(want), "{engine}");
        // A command that cannot be split has no words.
        if let Some(l) = spec.engine.launch.as_mut() {
            l.command = LaunchCommand::Line("vllm serve 'm".into());
            assert_eq!(spec.launch_args(), words(&[]), "{engine}");
        }
    }
}

#[test]
fn quoting_reads_back() {
    let cases = [
        ("serve", "serve"),
        ("$HOME/env/bin/vllm", "\"$HOME/env/bin/vllm\""),
        ("{\"image\":4,\"audio\":1}", "'{\"image\":4,\"audio\":1}'"),
        ("it's", "'it'\\''s'"),
        ("", "''"),
        ("<redacted>", "<redacted>"),
        ("--api-key=<redacted>", "--api-key=<redacted>"),
    ];
    for (arg, want) in cases {
        assert_eq!(quote(arg), want);
        if !arg.contains("<redacted>") {
            assert_eq!(split(&quote(arg)), Ok(vec![arg.to_string()]), "{arg}");
        }
    }
}

#[test]
fn splitting_table() {
    let cases: &[(&str, Result<Vec<String>, ()>)] = &[
        (
            "vllm serve m --port 8000",
            Ok(words(&["vllm", "serve", "m", "--port", "8000"])),
        ),
        ("a  'b c'  \"d \\\" e\"", Ok(words(&["a", "b c", "d \" e"]))),
        (
            r#"x --limit '{"image":4}'"#,
            Ok(words(&["x", "--limit", r#"{"image":4}"#])),
        ),
        (r"a\ b", Ok(words(&["a b"]))),
        (
            "\"$HOME/bin/vllm\" serve",
            Ok(words(&["$HOME/bin/vllm", "serve"])),
        ),
        ("''", Ok(words(&[""]))),
        ("a 'b", Err(())),
        ("a \"b", Err(())),
        ("a \\", Err(())),
        ("   ", Err(())),
    ];
    for (line, want) in cases {
        assert_eq!(split(line).map_err(|_| ()), *want, "{line}");
    }
}

#[test]
fn env_references() {
    assert_eq!(
        env_refs("--api-key ${VLLM_API_KEY} ${X}y $HOME/bin $_a1.x"),
        vec!["VLLM_API_KEY", "X", "HOME", "_a1"]
    );
    assert!(env_refs("${unterminated $1 $ x $$HOME ${X:-y} ${1} a$").is_empty());
}

#[test]
fn expansion_as_a_shell_reads_names() {
    let env = |n: &str| match n {
        "KEY" => Some("s3cret".to_string()),
        "HOME" => Some("/home/u".to_string()),
        _ => None,
    };
    let cases = [
        ("--api-key ${KEY}", "--api-key s3cret"),
        ("$HOME/${KEY}x", "/home/u/s3cretx"),
        ("$HOME", "/home/u"),
        ("\"$HOME/bin\"", "\"/home/u/bin\""),
        ("${KEY", "${KEY"),
        ("$$HOME costs $$5", "$HOME costs $5"),
        ("a $ b $1 ${X:-y} end$", "a $ b $1 ${X:-y} end$"),
        ("$KEY.$KEY-$KEY/", "s3cret.s3cret-s3cret/"),
    ];
    for (text, want) in cases {
        assert_eq!(expand(text, &env).as_deref(), Ok(want), "{text}");
    }
    assert_eq!(
        expand("${NOPE}", &env),
        Err(CommandError::Unset("NOPE".into()))
    );
    assert_eq!(
        expand("$NOPE/x", &env),
        Err(CommandError::Unset("NOPE".into()))
    );
}

#[test]
fn ports() {
    assert_eq!(port_arg(&words(&["--port", "8000"])), Some("8000"));
    assert_eq!(port_arg(&words(&["--port=9"])), Some("9"));
    assert_eq!(port_arg(&words(&["--portx", "1"])), None);
    assert_eq!(flag_value(&words(&["--api-key=k"]), "--api-key"), Some("k"));
}

#[test]
fn urls() {
    let u = parse_url("http://127.0.0.1:8000").map(|u| u.port);
    assert_eq!(u, Ok(8000));
    assert_eq!(parse_url("https://h/v1").map(|u| u.port), Ok(443));
    assert_eq!(
        parse_url("http://[::1]:30000/x").map(|u| (u.host, u.port)),
        Ok(("[::1]".into(), 30000))
    );
    assert!(parse_url("ftp://h").is_err());
    assert!(parse_url("http://:80").is_err());
    assert!(parse_url("http://h:99999").is_err());
    assert_eq!(base_url_arg("http://h:1").as_deref(), Ok("http://h:1"));
    let e = base_url_arg("localhost:8000").unwrap_err();
    assert!(e.ends_with("did you mean `http://localhost:8000`?"), "{e}");
}
