//! The floors of the crate, checked in the source: a lower module never names a higher one
//! (`crate::…` paths in its files, tests excluded), so data flows one way and a newcomer
//! can trust the map in the README. A new arrow that runs back up fails here.

use std::path::Path;

/// (folder under `src/`, modules its files must not name).
const RULES: &[(&str, &[&str])] = &[
    // The engine thread and the handle every front end uses: no front end.
    (
        "service",
        &["server", "commands", "tui", "chat", "cli", "exit"],
    ),
    // Sessions: their data and their live state, below the engine thread.
    (
        "session",
        &[
            "service", "server", "commands", "tui", "chat", "cli", "exit", "dialogue",
        ],
    ),
    // The llama.cpp adapter: no session, store or tier, and no test models.
    (
        "llama",
        &[
            "session", "store", "tiers", "service", "server", "commands", "synth",
        ],
    ),
    // Blobs, pages and objects: no model, no session.
    (
        "kv",
        &["llama", "session", "service", "server", "tiers", "dialogue"],
    ),
    // The product's GGUF reader and checks: the writers for test models live in `synth`.
    (
        "gguf",
        &["synth", "llama", "session", "service", "server", "commands"],
    ),
    // Synthetic models: GGUF files only, nothing that runs them.
    (
        "synth",
        &[
            "llama", "session", "service", "server", "commands", "kv", "store",
        ],
    ),
    (
        "store",
        &["kv", "llama", "session", "service", "server", "tiers"],
    ),
    // RAM and disk budgets (the GPU's memory is asked of `llama`).
    ("tiers", &["session", "service", "server", "commands"]),
    // The chat front ends' client: no server, no command.
    ("chat", &["server", "commands", "tui", "cli", "exit"]),
    // The TUI draws what the chat client says: it starts nothing.
    (
        "tui",
        &["server", "commands", "service", "session", "store", "llama"],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let stem = path.file_stem().unwrap().to_string_lossy();
    stem == "tests" || stem.ends_with("_tests") || stem == "test_support"
}

#[test]
fn no_module_names_a_floor_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut arrows = Vec::new();
    for (folder, forbidden) in RULES {
        let mut files = Vec::new();
        assert!(
            src.join(folder).is_dir(),
            "src/{folder} is gone: update RULES"
        );
        rust_files(&src.join(folder), &mut files);
        let top = src.join(format!("{folder}.rs"));
        if top.exists() {
            files.push(top);
        }
        for file in files.iter().filter(|f| !is_test_file(f)) {
            // Code only: a doc link is not an arrow.
            let text = crate::file_graph_tests::code_of(&std::fs::read_to_string(file).unwrap());
            for upper in *forbidden {
                let path = format!("crate::{upper}");
                let named = text.match_indices(&path).any(|(at, _)| {
                    // `crate::session` must not match `crate::sessions_…`.
                    let next = text[at + path.len()..].chars().next();
                    !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if named {
                    let shown = file.strip_prefix(&src).unwrap().display().to_string();
                    arrows.push(format!("src/{shown} names {path}"));
                }
            }
        }
    }
    assert!(
        arrows.is_empty(),
        "arrows that run back up:\n{}",
        arrows.join("\n")
    );
}

#[test]
fn no_two_files_need_each_other() {
    let graph = crate::file_graph_tests::FileGraph::new(&crate::file_graph_tests::crate_files(
        is_test_file,
    ));
    let tangles = graph.tangles();
    let loops = graph.loops();
    let shown: Vec<String> = tangles.iter().map(|group| group.join(" ")).collect();
    let arrows = graph.arrows();
    // Each step of a loop with the paths that make it.
    let why = |from: &str, to: &str| -> String {
        let mut paths: Vec<&str> = arrows
            .iter()
            .filter(|(f, t, _)| *f == from && *t == Some(to))
            .map(|(_, _, p)| p.as_str())
            .collect();
        paths.sort();
        paths.dedup();
        paths.join(", ")
    };
    let rings: Vec<String> = loops
        .iter()
        .map(|ring| {
            let steps: Vec<String> = ring
                .windows(2)
                .map(|w| format!("  {} -> {} ({})", w[0], w[1], why(&w[0], &w[1])))
                .collect();
            steps.join("\n")
        })
        .collect();
    assert!(
        tangles.is_empty(),
        "{} groups of files need each other (move the piece both need into a file of its \
         own):\n{}\nthe loops:\n{}",
        tangles.len(),
        shown.join("\n"),
        rings.join("\n")
    );
}

#[test]
fn no_glob_imports_of_the_crates_own_modules() {
    let globs =
        crate::file_graph_tests::crate_globs(&crate::file_graph_tests::crate_files(is_test_file));
    assert!(
        globs.is_empty(),
        "name what you import:\n{}",
        globs.join("\n")
    );
}
