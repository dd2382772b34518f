//! Limits that keep the house livable, checked rather than hoped for: no source file longer
//! than a reader can hold in mind, and a README that stays a user's document.

use std::path::{Path, PathBuf};

/// The longest a source file in `src/` or `tests/` may be: a longer file is two concerns.
const MAX_LINES: usize = 600;

/// Files still over the limit while their split lands elsewhere. Issue 49: houseB splits
/// `session/live/restore.rs` with restore's own type; remove it here once that lands.
const PENDING_SPLITS: &[&str] = &["src/session/live/restore.rs"];

/// Source written here (not the recorded fixtures, templates and snapshots beside it).
fn is_source(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| ["rs", "py", "js", "sh"].contains(&&*e.to_string_lossy()))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // Installed packages (the agents' npm clients) are not ours.
            if path.file_name().is_some_and(|n| n != "node_modules") {
                files_under(&path, out);
            }
        } else if is_source(&path) {
            out.push(path);
        }
    }
}

#[test]
fn no_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests"] {
        files_under(&root.join(dir), &mut files);
    }
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let shown = file.strip_prefix(root).unwrap().display().to_string();
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > MAX_LINES && !PENDING_SPLITS.contains(&shown.as_str()))
                .then(|| format!("{shown}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split each by concern):\n{}",
        long.join("\n")
    );
}

/// The README is a user's document: what kvrun is, how to use it, one current table per
/// benchmark. History belongs in the commit log.
const MAX_README_BYTES: u64 = 40 * 1024;

#[test]
fn the_readme_is_at_most_40_kib() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let bytes = std::fs::metadata(&readme).unwrap().len();
    assert!(
        bytes <= MAX_README_BYTES,
        "README.md is {bytes} bytes, over {MAX_README_BYTES}: keep it short and current"
    );
}
