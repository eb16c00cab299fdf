//! The committed JSON Schema is what the code generates, is itself valid, and agrees with
//! the loader on the shipped specs.

use benchspec::spec::schema::spec_schema_text;

#[test]
fn committed_schema_is_up_to_date() {
    let path = super::repo_path("schemas/benchspec-v1.schema.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == spec_schema_text(),
        "schemas/benchspec-v1.schema.json is stale: run `cargo run -- schema --out schemas/benchspec-v1.schema.json`"
    );
}

#[test]
fn schema_is_draft_2020_12_with_descriptions() {
    let schema: serde_json::Value = serde_json::from_str(&spec_schema_text()).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(jsonschema::meta::is_valid(&schema));
    let engine = &schema["$defs"]["Engine"]["properties"];
    assert!(
        engine["api_key_env"]["description"]
            .as_str()
            .unwrap()
            .contains("NAME")
    );
    assert_eq!(schema["$defs"]["Matrix"]["additionalProperties"], false);
}

#[test]
fn shipped_specs_carry_the_schema_comment() {
    for entry in std::fs::read_dir(super::root().join("specs")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // Data the specs name (a trace), not specs.
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap_or_default();
        let ok = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => {
                first == "# yaml-language-server: $schema=../schemas/benchspec-v1.schema.json"
            }
            Some("toml") => first == "#:schema ../schemas/benchspec-v1.schema.json",
            _ => true,
        };
        assert!(
            ok,
            "{} must start with the schema comment, not `{first}`",
            path.display()
        );
    }
}

#[test]
fn committed_result_schema_is_up_to_date() {
    let committed = std::fs::read_to_string(super::repo_path("schemas/result-v1.schema.json"))
        .unwrap_or_default();
    assert!(
        committed == benchspec::results::record_schema_text(),
        "schemas/result-v1.schema.json is stale: run `cargo run -- schema --result --out schemas/result-v1.schema.json`"
    );
}

#[test]
fn committed_requests_schema_is_up_to_date() {
    let committed = std::fs::read_to_string(super::repo_path("schemas/requests-v1.schema.json"))
        .unwrap_or_default();
    assert!(
        committed == benchspec::rundir::request_line_schema_text(),
        "schemas/requests-v1.schema.json is stale: run `cargo run -- schema --requests --out schemas/requests-v1.schema.json`"
    );
}

#[test]
fn committed_repeat_line_schema_is_up_to_date() {
    let committed = std::fs::read_to_string(super::repo_path("schemas/repeat-line-v1.schema.json"))
        .unwrap_or_default();
    assert!(
        committed == benchspec::rundir::repeat_line_schema_text(),
        "schemas/repeat-line-v1.schema.json is stale: run `cargo run -- schema --repeats --out schemas/repeat-line-v1.schema.json`"
    );
}
