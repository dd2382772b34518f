//! The floors of the crate, checked in the source: a module names only modules on the floors
//! below its own (every path its files write, `use`s included, tests excluded), so data flows
//! one way and a newcomer can trust the map in the README. A new arrow that runs back up or
//! across a floor fails here, and so does a new top-level module that is on no floor.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::file_graph_tests::{crate_files, crate_globs, FileGraph};

/// Every top-level module under `src/`, from the front ends down: a module may name only
/// modules on the floors below its own.
const FLOORS: &[&[&str]] = &[
    // The commands dispatch to everything, the benchmarks among them.
    &["commands"],
    &["bench"],
    // What every command and benchmark may need: folders, config, the model load.
    &["env"],
    // Front ends and their pieces: no one of them names another.
    &["tui", "server", "exit", "ui", "logging", "resolve"],
    // The chat front ends' client of the engine.
    &["chat"],
    // The engine thread and its handle; dialogues as messages; the CLI's argument types.
    &["service", "dialogue", "cli"],
    // Sessions (below the engine thread), and which model.
    &["session", "models"],
    // The token log and decode schedule, RAM and disk budgets, downloads.
    &["sequence", "tiers", "pull"],
    // The llama.cpp adapter, the config file.
    &["llama", "config"],
    // Below llama.cpp: templates, tool calls, pages and blobs, settings, test models.
    &["template", "tools", "kv", "settings", "synth"],
    // Leaves.
    &[
        "gguf",
        "store",
        "token",
        "clock",
        "format",
        "interrupt",
        "paths",
    ],
];

/// Lower modules a module must not name although they sit below it.
const ALSO_APART: &[(&str, &[&str])] = &[
    // The llama.cpp adapter holds no pages on disk and no test models.
    ("llama", &["store", "synth"]),
    // Synthetic models are GGUF files only, nothing that runs or stores them.
    ("synth", &["kv", "store"]),
    // The TUI draws what the chat client says: it starts nothing.
    ("tui", &["service", "session", "store", "llama", "server"]),
];

/// A module's unit tests (its child `tests`, inline or in `tests.rs` or under `tests/`), a
/// crate-wide check (`*_tests.rs`), or what tests share.
fn is_test_file(path: &Path) -> bool {
    let stem = path.file_stem().unwrap().to_string_lossy();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let in_tests = path
        .strip_prefix(&src)
        .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == "tests"));
    in_tests || stem == "tests" || stem.ends_with("_tests") || stem == "test_support"
}

/// The top-level module a file under `src/` belongs to (`lib.rs` none).
fn top_module(file: &str) -> Option<&str> {
    let rel = file.strip_prefix("src/")?;
    let top = rel.split('/').next()?.trim_end_matches(".rs");
    (top != "lib" && top != "main").then_some(top)
}

/// Top-level module → the other top-level modules its files name.
fn module_arrows(graph: &FileGraph) -> BTreeMap<String, BTreeSet<String>> {
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, path) in graph.named() {
        let (Some(from), Some(to)) = (top_module(file), path.first()) else {
            continue;
        };
        if from != to {
            arrows
                .entry(from.to_string())
                .or_default()
                .insert(to.clone());
        }
    }
    arrows
}

#[test]
fn every_module_names_only_floors_below_it() {
    let files = crate_files(is_test_file);
    let graph = FileGraph::new(&files);
    let floor_of = |module: &str| FLOORS.iter().position(|f| f.contains(&module));
    let modules: BTreeSet<&str> = files
        .iter()
        .filter_map(|(rel, _)| {
            let top = rel.split('/').next()?.trim_end_matches(".rs");
            (top != "lib" && top != "main").then_some(top)
        })
        .collect();
    let unplaced: Vec<&&str> = modules.iter().filter(|m| floor_of(m).is_none()).collect();
    let arrows = module_arrows(&graph);
    let mut wrong = Vec::new();
    for (from, tos) in &arrows {
        for to in tos {
            let (Some(a), Some(b)) = (floor_of(from), floor_of(to)) else {
                continue;
            };
            let apart = ALSO_APART
                .iter()
                .any(|(m, banned)| m == from && banned.contains(&to.as_str()));
            if b <= a || apart {
                let why: BTreeSet<String> = graph
                    .named()
                    .into_iter()
                    .filter(|(file, path)| {
                        top_module(file) == Some(from.as_str()) && path[0] == *to
                    })
                    .map(|(file, path)| format!("{file}: crate::{}", path.join("::")))
                    .collect();
                wrong.push(format!(
                    "{from} names {to}: {}",
                    why.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(
        unplaced.is_empty() && wrong.is_empty(),
        "modules on no floor (add each to FLOORS): {unplaced:?}\narrows that run back up or across a floor:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_files_need_each_other() {
    let graph = FileGraph::new(&crate_files(is_test_file));
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
    let globs = crate_globs(&crate_files(is_test_file));
    assert!(
        globs.is_empty(),
        "name what you import:\n{}",
        globs.join("\n")
    );
}
