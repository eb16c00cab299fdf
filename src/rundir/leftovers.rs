//! What a run that measured nothing leaves behind — a launch that failed, an engine that
//! never became ready, a run stopped before its first cell ended: an engine log, perhaps the
//! spec copy, plan, manifest, kept input files and reports of nothing. Such a folder is not
//! in the way of the same command line run again (with or without `--resume`): it holds no
//! measurement, so a new run clears it and starts there.

use std::path::Path;

/// Files a run writes whether or not it measured anything.
const NAMES: [&str; 13] = [
    super::ENGINE_LOG,
    super::MANIFEST,
    super::PLAN,
    "spec.yaml",
    "spec.yml",
    "spec.toml",
    "spec.json",
    super::DATASET,
    "report.md",
    "report.html",
    "results.csv",
    "results.json",
    crate::spec::files::KEPT_TOKENIZER,
];

/// Files that hold measurements when they hold anything.
const MEASURED: [&str; 3] = [super::RESULTS, super::REPEATS, super::REQUESTS];

/// Whether the folder `path` holds only what a run that measured nothing leaves.
pub(super) fn measured_nothing(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    entries.into_iter().all(|e| {
        let Ok(e) = e else { return false };
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            return false;
        };
        let empty = e.metadata().is_ok_and(|m| m.is_file() && m.len() == 0);
        NAMES.contains(&name)
            || super::is_engine_log(name)
            || name == crate::spec::files::KEPT_TEMPLATES
            || (MEASURED.contains(&name) && empty)
    })
}

/// Remove what a run that measured nothing left, but for the engine's log.
pub(super) fn clear(path: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(path)? {
        let e = e?;
        if e.file_name().to_str().is_some_and(super::is_engine_log) {
            continue;
        }
        if e.file_type()?.is_dir() {
            std::fs::remove_dir_all(e.path())?;
        } else {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_folder_without_measurements_is_a_leftover() {
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[("engine.log", "bind failed")], true),
            (&[("engine-1.log", "bind failed")], true),
            (&[("engine-x.log", "mine")], false),
            (
                &[
                    ("engine.log", "x"),
                    ("manifest.json", "{}"),
                    ("results.jsonl", ""),
                ],
                true,
            ),
            (&[("results.jsonl", "{\"cell\":\"a\"}\n")], false),
            (&[("repeats.jsonl", "{}\n")], false),
            (&[("notes.txt", "mine")], false),
        ];
        for (i, (files, want)) in cases.iter().enumerate() {
            let dir =
                std::env::temp_dir().join(format!("benchspec-leftover-{}-{i}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in *files {
                std::fs::write(dir.join(name), text).unwrap();
            }
            assert_eq!(measured_nothing(&dir), *want, "{files:?}");
            if *want {
                clear(&dir).unwrap();
                let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
                assert!(left.iter().all(|e| e.file_name() != "manifest.json"));
                assert_eq!(left.len(), 1, "the engine's log is kept: {files:?}");
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
