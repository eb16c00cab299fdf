use super::*;
use crate::results::Record;

fn line(cell: &str, repeat: Option<u32>, superseded: bool) -> RepeatLine {
    let json = serde_json::json!({
        "schema": "benchspec.result.v1", "cell": cell, "phase": "decode", "context": 256,
        "concurrency": 1, "status": "valid", "reasons": [], "started_at": "2026-12-04T00:00:00Z",
        "measured_s": 1.0, "prompt_tokens": 256, "output_tokens": 10, "token_source": "usage",
        "total_tok_s": 10.0, "per_request_tok_s": 10.0, "avg_active": 1.0,
        "requests_started": 1, "completed": 1, "errors": 0, "error_kinds": {},
        "ttft_ms": null, "tbt_ms": null, "prefill_tok_s": null, "labels": {}
    });
    let record: Record = serde_json::from_value(json).unwrap();
    RepeatLine {
        repeat,
        attempt: Some(1),
        superseded,
        record,
    }
}

#[test]
fn only_lines_that_will_count_stay_unsuperseded() {
    use ResumeRepeats::{Fresh, Keep};
    let todo: HashMap<String, u32> = [("a".to_string(), 3)].into();
    // (lines, mode, which stay unsuperseded, kept, newly superseded)
    type Case = (Vec<RepeatLine>, ResumeRepeats, Vec<bool>, usize, usize);
    let cases: Vec<Case> = vec![
        (
            vec![line("a", Some(1), false), line("a", Some(2), false)],
            Keep,
            vec![true, true],
            2,
            0,
        ),
        (
            vec![line("a", Some(1), false), line("a", Some(2), false)],
            Fresh,
            vec![false, false],
            0,
            2,
        ),
        // A repeat written twice (two kills): the later line counts.
        (
            vec![line("a", Some(1), false), line("a", Some(1), false)],
            Keep,
            vec![false, true],
            1,
            1,
        ),
        // An older run's unnumbered line, and an index beyond N.
        (
            vec![line("a", None, false), line("a", Some(4), false)],
            Keep,
            vec![false, false],
            0,
            2,
        ),
        // A cell not run now (another shard, `--only`) is left as it is, and a line
        // superseded before stays so without being counted again.
        (
            vec![line("b", None, false), line("a", Some(2), true)],
            Keep,
            vec![true, false],
            0,
            0,
        ),
    ];
    for (i, (mut lines, mode, want, kept, superseded)) in cases.into_iter().enumerate() {
        let got = sort_out(&mut lines, &todo, mode);
        let live: Vec<bool> = lines.iter().map(|l| !l.superseded).collect();
        assert_eq!((live, got), (want, (kept, superseded)), "case {i}");
    }
}

#[test]
fn a_line_reads_back_as_written() {
    let l = line("decode/256/c1", Some(2), false);
    let text = serde_json::to_string(&l).unwrap();
    assert!(
        text.starts_with(r#"{"repeat":2,"attempt":1,"schema""#),
        "{text}"
    );
    assert!(!text.contains("superseded"), "{text}");
    let back: RepeatLine = serde_json::from_str(&text).unwrap();
    assert_eq!(back, l);
    // An older run's line: a bare record.
    let bare = serde_json::to_string(&l.record).unwrap();
    let old: RepeatLine = serde_json::from_str(&bare).unwrap();
    assert_eq!(
        (old.repeat, old.attempt, old.superseded),
        (None, None, false)
    );
}
