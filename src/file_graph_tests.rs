//! The crate's files as a graph, checked for loops: file A points at file B when A's code
//! names an item that B defines (through `use`, a path, or a child module's name), read
//! through re-exports to the file that defines it. A loop means two files that can only be
//! understood together; the fix is to move the shared piece into a file of its own.
//!
//! Not counted: `mod` declarations and `pub use` re-exports (a module's table of contents,
//! not its code), comments, and tests (`#[cfg(test)] mod … { }` blocks and test files).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A module path from the crate root: `["service", "engine", "admit"]`.
type ModPath = Vec<String>;

struct Module {
    file: String,
    /// Code only: comments and inline test modules removed.
    code: String,
}

/// One name a `use` brings in: the path it names, and the name it binds (`None` for a glob).
struct UseItem {
    path: Vec<String>,
    /// The name it binds here (the last segment, or the `as` alias).
    name: Option<String>,
    glob: bool,
    /// `pub use` (any visibility): a re-export.
    public: bool,
}

pub struct FileGraph {
    modules: BTreeMap<ModPath, Module>,
    /// Per module: name → absolute path it re-exports.
    reexports: HashMap<ModPath, Vec<(String, ModPath)>>,
    /// Per module: the modules it re-exports whole (`pub use x::*`).
    glob_reexports: HashMap<ModPath, Vec<ModPath>>,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The module path of a file under `src/` (`lib.rs` is the root; `main.rs` is not in it).
fn module_path(rel: &str) -> Option<ModPath> {
    let rel = rel.strip_suffix(".rs")?;
    if rel == "main" {
        return None;
    }
    if rel == "lib" {
        return Some(Vec::new());
    }
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Some(parts)
}

/// Removes comments and `#[cfg(test)]` items with a body (test modules and test helpers).
pub fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let code = match line.find(" // ") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    let mut text = out;
    while let Some(at) = text.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let end_of_item = text[after..].find([';', '{']).map(|i| after + i);
        let end = match end_of_item {
            Some(i) if text.as_bytes()[i] == b'{' => matching_brace(&text, i),
            Some(i) => i + 1,
            None => text.len(),
        };
        text.replace_range(at..end, "");
    }
    text
}

/// The index just past the `}` that closes the `{` at `open`.
fn matching_brace(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Whether the code defines an item called `name` (a type, function, constant or macro).
fn defines(code: &str, name: &str) -> bool {
    let toks = tokens(code);
    toks.windows(2).any(|w| {
        w[1] == name
            && matches!(
                w[0].as_str(),
                "struct"
                    | "enum"
                    | "fn"
                    | "const"
                    | "static"
                    | "type"
                    | "trait"
                    | "union"
                    | "macro_rules"
            )
    })
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_ident_char(c) {
            let mut word = c.to_string();
            while let Some(&n) = chars.peek().filter(|n| is_ident_char(**n)) {
                word.push(n);
                chars.next();
            }
            out.push(word);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            out.push("::".into());
        } else if "{},*".contains(c) {
            out.push(c.to_string());
        }
    }
    out
}

/// Expands a use tree (`a::{b, c::{self, d as e}, f::*}`) into its paths.
fn parse_tree(
    toks: &[String],
    i: &mut usize,
    prefix: Vec<String>,
    public: bool,
    out: &mut Vec<UseItem>,
) {
    let mut path = prefix;
    while *i < toks.len() {
        let tok = toks[*i].as_str();
        *i += 1;
        match tok {
            "{" => {
                while *i < toks.len() && toks[*i] != "}" {
                    parse_tree(toks, i, path.clone(), public, out);
                    if toks.get(*i).is_some_and(|t| t == ",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                out.push(UseItem {
                    path,
                    name: None,
                    glob: true,
                    public,
                });
                return;
            }
            "::" => {}
            word => {
                if word != "self" || path.is_empty() {
                    path.push(word.to_string());
                }
                if toks.get(*i).is_some_and(|t| t == "::") {
                    continue;
                }
                // `as alias` binds another name to the same item.
                let mut name = path.last().cloned();
                if toks.get(*i).is_some_and(|t| t == "as") {
                    name = toks.get(*i + 1).cloned();
                    *i += 2;
                }
                out.push(UseItem {
                    path,
                    name,
                    glob: false,
                    public,
                });
                return;
            }
        }
    }
}

/// Every `use` statement of a file's code, expanded.
fn uses(code: &str) -> Vec<UseItem> {
    let mut out = Vec::new();
    for (at, end) in use_statements(code) {
        let public = code[..at]
            .trim_end_matches([' ', '\t'])
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .trim()
            .starts_with("pub");
        let toks = tokens(&code[at + 4..end]);
        let mut i = 0;
        parse_tree(&toks, &mut i, Vec::new(), public, &mut out);
    }
    out
}

/// The code with its `use` statements blanked out (they are read by [`uses`]).
fn without_uses(code: &str) -> String {
    let mut out = code.to_string();
    for (at, end) in use_statements(code) {
        out.replace_range(at..end, &" ".repeat(end - at));
    }
    out
}

/// (start, end) of each `use` statement: `use` at the start of a line or after `pub…`, up
/// to its `;`.
fn use_statements(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end_matches([' ', '\t']);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let lead = before[line_start..].trim();
        let public = lead.starts_with("pub");
        if !(lead.is_empty() || public)
            || at > 0 && is_ident_char(code[..at].chars().last().unwrap())
        {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            out.push((at, at + end));
        }
    }
    out
}

/// Paths written in the code: `crate::…`, `super::…`, `self::…` and `child::…`.
fn inline_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let toks = tokens(code);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let head = toks[i].as_str();
        let starts = matches!(head, "crate" | "super" | "self") || children.contains(head);
        let after_path = i > 0 && toks[i - 1] == "::";
        if !starts || after_path || toks.get(i + 1).is_none_or(|t| t != "::") {
            continue;
        }
        let mut path = vec![head.to_string()];
        let mut j = i + 1;
        while toks.get(j).is_some_and(|t| t == "::")
            && toks
                .get(j + 1)
                .is_some_and(|t| t.chars().all(is_ident_char))
        {
            path.push(toks[j + 1].clone());
            j += 2;
        }
        out.push(path);
    }
    out
}

impl FileGraph {
    /// `files`: (path under `src/`, text) of every non-test file.
    pub fn new(files: &[(String, String)]) -> Self {
        let mut modules = BTreeMap::new();
        for (rel, text) in files {
            if let Some(path) = module_path(rel) {
                modules.insert(
                    path,
                    Module {
                        file: format!("src/{rel}"),
                        code: code_of(text),
                    },
                );
            }
        }
        let mut graph = Self {
            modules,
            reexports: HashMap::new(),
            glob_reexports: HashMap::new(),
        };
        let mut reexports = HashMap::new();
        let mut globs = HashMap::new();
        for (path, module) in &graph.modules {
            let list: Vec<ModPath> = uses(&module.code)
                .into_iter()
                .filter(|u| u.public && u.glob)
                .filter_map(|u| graph.absolute(path, &u.path))
                .collect();
            globs.insert(path.clone(), list);
            let list: Vec<(String, ModPath)> = uses(&module.code)
                .into_iter()
                .filter(|u| u.public && !u.glob)
                .filter_map(|u| Some((u.name.clone()?, graph.absolute(path, &u.path)?)))
                .collect();
            reexports.insert(path.clone(), list);
        }
        graph.reexports = reexports;
        graph.glob_reexports = globs;
        graph
    }

    fn children(&self, parent: &ModPath) -> BTreeSet<String> {
        self.modules
            .keys()
            .filter(|p| p.len() == parent.len() + 1 && p.starts_with(parent))
            .map(|p| p.last().unwrap().clone())
            .collect()
    }

    /// A path as written in module `here`, made absolute; `None` for another crate's.
    fn absolute(&self, here: &ModPath, path: &[String]) -> Option<ModPath> {
        let mut base = here.clone();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) if self.children(here).contains(first) => {}
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what an absolute path names, through re-exports.
    fn defining_file(&self, path: &[String], depth: usize) -> Option<&str> {
        let mut module: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut next = module.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                module = next;
                continue;
            }
            let target = self.reexports.get(&module).and_then(|list| {
                list.iter()
                    .find(|(name, _)| name == seg)
                    .map(|(_, target)| target)
            });
            // Not named: defined here, or in a module this one re-exports whole.
            let glob = || {
                let defined_here = self
                    .modules
                    .get(&module)
                    .is_some_and(|m| defines(&m.code, seg));
                let sources = self.glob_reexports.get(&module).into_iter().flatten();
                sources
                    .clone()
                    .find(|src| {
                        !defined_here
                            && self
                                .modules
                                .get(*src)
                                .is_some_and(|m| defines(&m.code, seg))
                    })
                    .map(|src| [src.as_slice(), std::slice::from_ref(seg)].concat())
            };
            if let Some(target) = target.cloned().or_else(glob).filter(|_| depth < 16) {
                let mut full = target;
                full.extend(path[i + 1..].iter().cloned());
                return self.defining_file(&full, depth + 1);
            }
            break;
        }
        self.modules.get(&module).map(|m| m.file.as_str())
    }

    /// file → the files its code names.
    pub fn edges(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (from, to, _) in self.arrows() {
            edges.entry(from).or_default().extend(to);
        }
        edges
    }

    /// (file, the file it names or `None` for a file that names none, the path written).
    pub fn arrows(&self) -> Vec<(&str, Option<&str>, String)> {
        let mut out = Vec::new();
        for (here, module) in &self.modules {
            out.push((module.file.as_str(), None, String::new()));
            let children = self.children(here);
            let code = without_uses(&module.code);
            // A re-export is the module's table of contents; it counts only where the module's
            // own code uses the name too.
            let words: BTreeSet<String> = tokens(&code).into_iter().collect();
            let used = uses(&module.code)
                .into_iter()
                .filter(|u| !u.public || u.name.as_ref().is_some_and(|n| words.contains(n)))
                .map(|u| u.path);
            let written = inline_paths(&code, &children);
            for path in used.chain(written) {
                let Some(abs) = self.absolute(here, &path) else {
                    continue;
                };
                if let Some(to) = self.defining_file(&abs, 0).filter(|to| *to != module.file) {
                    out.push((module.file.as_str(), Some(to), path.join("::")));
                }
            }
        }
        out
    }

    /// The groups of files that reach each other (strongly connected, two or more files).
    pub fn tangles(&self) -> Vec<Vec<String>> {
        let edges = self.edges();
        let reach = |from: &str| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from.to_string()];
            while let Some(at) = stack.pop() {
                for &next in edges.get(at.as_str()).into_iter().flatten() {
                    if seen.insert(next.to_string()) {
                        stack.push(next.to_string());
                    }
                }
            }
            seen
        };
        let reach: BTreeMap<&str, BTreeSet<String>> =
            edges.keys().map(|&f| (f, reach(f))).collect();
        let mut out: Vec<Vec<String>> = Vec::new();
        for (&file, reached) in &reach {
            if out.iter().any(|group| group.iter().any(|f| f == file)) {
                continue;
            }
            let group: Vec<String> = reached
                .iter()
                .filter(|other| reach.get(other.as_str()).is_some_and(|r| r.contains(file)))
                .cloned()
                .collect();
            if group.len() > 1 {
                out.push(group);
            }
        }
        out
    }

    /// Each loop once, as the files on it, shortest first.
    pub fn loops(&self) -> Vec<Vec<String>> {
        let edges = self.edges();
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (&from, tos) in &edges {
            for &to in tos {
                if let Some(back) = shortest_path(&edges, to, from) {
                    let mut ring: Vec<String> = back.iter().map(|s| s.to_string()).collect();
                    let mut key = ring.clone();
                    key.sort();
                    if seen.insert(key) {
                        ring.push(to.to_string());
                        out.push(ring);
                    }
                }
            }
        }
        out.sort_by_key(Vec::len);
        out
    }
}

/// `use …::*` of this crate's modules (enum variants aside): the names a glob brings in are
/// invisible to this check, so the crate's code names what it imports.
pub fn crate_globs(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in files {
        for u in uses(&code_of(text)).into_iter().filter(|u| u.glob) {
            let head = u.path.first().map(String::as_str);
            if matches!(head, Some("crate" | "super" | "self"))
                || u.path.len() == 1 && !u.path[0].starts_with(char::is_uppercase)
            {
                out.push(format!("src/{rel}: use {}::*", u.path.join("::")));
            }
        }
    }
    out
}

/// Breadth-first: the files from `from` to `to`, both included.
fn shortest_path<'a>(
    edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    from: &'a str,
    to: &'a str,
) -> Option<Vec<&'a str>> {
    let mut prev: HashMap<&str, &str> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to];
            let mut cur = to;
            while cur != from {
                cur = prev[cur];
                path.push(cur);
            }
            path.reverse();
            return Some(path);
        }
        for &next in edges.get(at).into_iter().flatten() {
            if next != from && !prev.contains_key(next) {
                prev.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

pub fn crate_files(is_test_file: impl Fn(&Path) -> bool) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !is_test_file(&path) {
                let rel = path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_checker_finds_a_loop_through_a_reexport_and_not_a_tree() {
    let file = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let looped = FileGraph::new(&[
        file("lib.rs", "pub mod a;\npub mod b;\n"),
        file("a/mod.rs", "mod inner;\npub use inner::Thing;\n"),
        file("a/inner.rs", "use crate::b::Other;\npub struct Thing;\n"),
        // Names `Thing` through a's re-export: the arrow lands on a/inner.rs.
        file(
            "b.rs",
            "pub struct Other;\nfn f() -> crate::a::Thing { todo!() }\n",
        ),
    ]);
    assert_eq!(
        looped.loops(),
        [vec!["src/b.rs", "src/a/inner.rs", "src/b.rs"]]
    );

    let tree = FileGraph::new(&[
        file("lib.rs", "pub mod a;\npub mod b;\n"),
        file("a/mod.rs", "mod inner;\npub use inner::Thing;\n"),
        // Comments and tests do not count.
        file("a/inner.rs", "// crate::b::Other\npub struct Thing;\n#[cfg(test)]\nmod tests {\n    use crate::b::Other;\n}\n"),
        file("b.rs", "use super::a::{self, Thing};\npub struct Other;\n"),
    ]);
    assert!(tree.loops().is_empty(), "{:?}", tree.loops());
    assert!(tree.tangles().is_empty());
    assert!(tree.edges()["src/b.rs"].contains("src/a/inner.rs"));
}
