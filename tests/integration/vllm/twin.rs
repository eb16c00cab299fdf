//! The twin on the real engine: fitted on half the cells of one run against vLLM, its 90%
//! intervals earned by leaving fitted cells out, and their coverage of the other half printed.

use super::super::cli::Bench;
use super::Env;
use super::server::{Vllm, attached};

/// A 4 × 4 matrix measured once; `fit --holdout 0.5` fits every other cell and predicts the
/// rest, and the file says how many of those fall inside their interval.
pub(super) fn held_out_cells(vllm: &Vllm, _: &Env) {
    let text = attached(
        "",
        "{contexts: [256, 512, 1K, 2K], concurrency: [1, 2, 4, 8]}",
        "  prefill: {mode: standalone, repeats: 3}\n  decode: {duration: 2s}",
    );
    let ran = vllm.run(&text, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let dir = super::super::cli::tempdir::Dir::new();
    let twin = dir.path().join("twin.toml");
    let fit = Bench::new(&["fit", "--holdout", "0.5", "--out"])
        .arg(&twin)
        .arg(ran.dir())
        .run();
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    eprintln!("vLLM twin: {}{}", fit.stderr, fit.stdout);
    let t: toml::Value = toml::from_str(&std::fs::read_to_string(&twin).unwrap()).unwrap();
    let h = &t["holdout"];
    let cells = |metric: &str| {
        h["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["metric"].as_str() == Some(metric))
            .count()
    };
    // Half of 20 cells held out: 8 decode cells' tok/s, and TTFTs where the fitted cells
    // identify them.
    assert!(cells("per_request_tok_s") >= 6, "{h:#?}");
    assert!(cells("ttft_ms_p50") >= 4, "{h:#?}");
    // Both intervals were earned (on left-out cells), and the coverage is printed, not held:
    // 8 left-out cells earn an 89% interval, which leaves 6 or fewer of 8 inside one run in
    // five; measured with compilers sharing the CPU, tok/s 4, 8 and 8 of 8 over three runs,
    // TTFT 8 of 8, 6 of 7, 7 of 8.
    let iv = &t["intervals"];
    for key in ["tok_s", "ttft"] {
        assert!(
            iv[key]["pct"].as_float().is_some_and(|p| p > 0.0),
            "{key}: {iv:#?}"
        );
    }
    eprintln!(
        "vLLM twin: held-out tok/s inside {:?} of {}, TTFT {:?} of {}",
        h.get("covered").and_then(toml::Value::as_float),
        cells("per_request_tok_s"),
        h.get("ttft_covered").and_then(toml::Value::as_float),
        cells("ttft_ms_p50")
    );
}
