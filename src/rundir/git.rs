//! The git commit a spec file was checked out at, read from the repository's files (no `git`
//! process): the manifest records it so that a history can say which revision of a spec ran.

use std::path::Path;

/// The commit `HEAD` names in the repository holding `file`, if it lives in one.
pub fn commit_of(file: &Path) -> Option<String> {
    let start = std::fs::canonicalize(file).ok()?;
    let git = start
        .ancestors()
        .skip(1)
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let git = if git.is_file() {
        // A worktree or submodule: `.git` is a file saying `gitdir: PATH`.
        let text = std::fs::read_to_string(&git).ok()?;
        let dir = text.trim().strip_prefix("gitdir:")?.trim();
        git.parent()?.join(dir)
    } else {
        git
    };
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return hex(head);
    };
    // A worktree's refs live in the common directory.
    let common = std::fs::read_to_string(git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|_| git.clone());
    for dir in [&git, &common] {
        if let Ok(id) = std::fs::read_to_string(dir.join(reference)) {
            return hex(id.trim());
        }
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, name)| *name == reference)
        .and_then(|(id, _)| hex(id))
}

fn hex(id: &str) -> Option<String> {
    (id.len() >= 40 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_head_through_a_ref_and_packed_refs() {
        let dir = std::env::temp_dir().join(format!("bs-git-{}", std::process::id()));
        let git = dir.join(".git");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(git.join("refs/heads")).ok();
        std::fs::create_dir_all(dir.join("specs")).ok();
        std::fs::write(dir.join("specs/a.yaml"), "x").ok();
        let id = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").ok();
        std::fs::write(git.join("refs/heads/main"), format!("{id}\n")).ok();
        assert_eq!(commit_of(&dir.join("specs/a.yaml")).as_deref(), Some(id));
        std::fs::remove_file(git.join("refs/heads/main")).ok();
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack\n{id} refs/heads/main\n"),
        )
        .ok();
        assert_eq!(commit_of(&dir.join("specs/a.yaml")).as_deref(), Some(id));
        std::fs::write(git.join("HEAD"), "nonsense").ok();
        assert_eq!(commit_of(&dir.join("specs/a.yaml")), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
