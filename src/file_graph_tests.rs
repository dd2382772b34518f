//! The crate's files as a graph, checked for loops: file A points at file B when A's code
//! names an item that B defines (through `use`, a path, or a child module's name), read
//! through re-exports to the file that defines it. A loop means two files that can only be
//! understood together; the fix is to move the shared piece into a file of its own.
//!
//! Files are parsed with `syn`. Not counted: `mod` declarations and `pub use` re-exports (a
//! module's table of contents, not its code), comments, and tests (`#[cfg(test)]` items and
//! test files).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

/// A module path from the crate root: `["service", "engine", "admit"]`.
type ModPath = Vec<String>;

/// One name a `use` brings in: the path it names, and the name it binds (`None` for a glob).
struct UseItem {
    path: Vec<String>,
    name: Option<String>,
    /// `pub use` (any visibility): a re-export.
    public: bool,
}

/// What one file's code (tests left out) says, as far as the graph goes.
#[derive(Default)]
pub struct FileCode {
    uses: Vec<UseItem>,
    /// Paths of two or more segments written outside `use`, in macro bodies too.
    paths: Vec<Vec<String>>,
    /// The items it defines (types, functions, constants, traits, macros).
    defines: BTreeSet<String>,
    /// Every identifier outside `use`.
    words: BTreeSet<String>,
}

impl FileCode {
    pub fn parse(text: &str) -> Self {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("cannot parse: {e}"));
        let mut code = FileCode::default();
        code.visit_file(&file);
        code
    }

    /// Every path the file names, `use`s included, as written.
    pub fn named_paths(&self) -> impl Iterator<Item = &Vec<String>> {
        self.uses.iter().map(|u| &u.path).chain(&self.paths)
    }

    /// Identifiers joined by `::` in a macro's tokens, which `syn` leaves unparsed.
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let is_colon = |t: Option<&TokenTree>, spacing: Spacing| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == spacing);
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => self.scan(group.stream()),
                TokenTree::Ident(ident) => {
                    let mut path = vec![ident.to_string()];
                    while is_colon(tokens.get(i + 1), Spacing::Joint)
                        && is_colon(tokens.get(i + 2), Spacing::Alone)
                    {
                        let Some(TokenTree::Ident(next)) = tokens.get(i + 3) else {
                            break;
                        };
                        path.push(next.to_string());
                        i += 3;
                    }
                    self.words.extend(path.iter().cloned());
                    if path.len() > 1 {
                        self.paths.push(path);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        matches!(&a.meta, syn::Meta::List(l) if l.path.is_ident("cfg") && l.tokens.to_string() == "test")
    })
}

/// The attributes and, for an item that defines a name, the name.
fn item_parts(item: &syn::Item) -> (&[syn::Attribute], Option<&syn::Ident>) {
    use syn::Item;
    match item {
        Item::Const(i) => (&i.attrs, Some(&i.ident)),
        Item::Enum(i) => (&i.attrs, Some(&i.ident)),
        Item::Fn(i) => (&i.attrs, Some(&i.sig.ident)),
        Item::Macro(i) => (&i.attrs, i.ident.as_ref()),
        Item::Static(i) => (&i.attrs, Some(&i.ident)),
        Item::Struct(i) => (&i.attrs, Some(&i.ident)),
        Item::Trait(i) => (&i.attrs, Some(&i.ident)),
        Item::Type(i) => (&i.attrs, Some(&i.ident)),
        Item::Union(i) => (&i.attrs, Some(&i.ident)),
        Item::Impl(i) => (&i.attrs, None),
        Item::Mod(i) => (&i.attrs, None),
        Item::Use(i) => (&i.attrs, None),
        _ => (&[], None),
    }
}

/// Expands a use tree (`a::{b, c::{self, d as e}, f::*}`) into its paths.
fn flatten(tree: &syn::UseTree, mut path: Vec<String>, public: bool, out: &mut Vec<UseItem>) {
    let mut bind = |path: Vec<String>, name: Option<String>| {
        out.push(UseItem { path, name, public });
    };
    match tree {
        syn::UseTree::Path(p) => {
            path.push(p.ident.to_string());
            flatten(&p.tree, path, public, out);
        }
        syn::UseTree::Name(n) => {
            if n.ident != "self" || path.is_empty() {
                path.push(n.ident.to_string());
            }
            let name = path.last().cloned();
            bind(path, name);
        }
        syn::UseTree::Rename(r) => {
            if r.ident != "self" || path.is_empty() {
                path.push(r.ident.to_string());
            }
            bind(path, Some(r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => bind(path, None),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, path.clone(), public, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for FileCode {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let (attrs, name) = item_parts(item);
        if is_cfg_test(attrs) {
            return;
        }
        self.defines.extend(name.map(ToString::to_string));
        if let syn::Item::Use(u) = item {
            let public = !matches!(u.vis, syn::Visibility::Inherited);
            flatten(&u.tree, Vec::new(), public, &mut self.uses);
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 && path.leading_colon.is_none() {
            let segments = path.segments.iter().map(|s| s.ident.to_string());
            self.paths.push(segments.collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_ident(&mut self, ident: &'ast syn::Ident) {
        self.words.insert(ident.to_string());
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan(mac.tokens.clone());
    }
}

/// The module path of a file under `src/` (`lib.rs` is the root; `main.rs` is not in it).
fn module_path(rel: &str) -> Option<ModPath> {
    let rel = rel.strip_suffix(".rs")?;
    match rel {
        "main" => None,
        "lib" => Some(Vec::new()),
        _ => {
            let mut parts: ModPath = rel.split('/').map(str::to_string).collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            Some(parts)
        }
    }
}

pub struct FileGraph {
    /// Module path → (its file under `src/`, its code).
    modules: BTreeMap<ModPath, (String, FileCode)>,
}

impl FileGraph {
    /// `files`: (path under `src/`, text) of every non-test file.
    pub fn new(files: &[(String, String)]) -> Self {
        let modules = files
            .iter()
            .filter_map(|(rel, text)| {
                Some((
                    module_path(rel)?,
                    (format!("src/{rel}"), FileCode::parse(text)),
                ))
            })
            .collect();
        Self { modules }
    }

    fn children(&self, parent: &ModPath) -> BTreeSet<&str> {
        self.modules
            .keys()
            .filter(|p| p.len() == parent.len() + 1 && p.starts_with(parent))
            .map(|p| p.last().unwrap().as_str())
            .collect()
    }

    /// A path as written in module `here`, made absolute; `None` for another crate's.
    pub fn absolute(&self, here: &ModPath, path: &[String]) -> Option<ModPath> {
        let mut base = here.clone();
        let rest = match path.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                &path[1..]
            }
            Some("self") => &path[1..],
            Some("super") => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                base.truncate(base.len().saturating_sub(ups));
                &path[ups..]
            }
            Some(first) if self.children(here).contains(first) => path,
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// What module `module` re-exports as `name`, as an absolute path: by name, or from a
    /// module it re-exports whole (`pub use x::*`) that defines it.
    fn reexport(&self, module: &ModPath, name: &str) -> Option<ModPath> {
        let code = &self.modules.get(module)?.1;
        let public = code.uses.iter().filter(|u| u.public);
        let named = public
            .clone()
            .find(|u| u.name.as_deref() == Some(name))
            .and_then(|u| self.absolute(module, &u.path));
        named.or_else(|| {
            if code.defines.contains(name) {
                return None;
            }
            public
                .filter(|u| u.name.is_none())
                .filter_map(|u| self.absolute(module, &u.path))
                .find(|from| {
                    self.modules
                        .get(from)
                        .is_some_and(|m| m.1.defines.contains(name))
                })
                .map(|from| [from.as_slice(), &[name.to_string()]].concat())
        })
    }

    /// The file that defines what an absolute path names, through re-exports.
    fn defining_file(&self, path: &[String], depth: usize) -> Option<&str> {
        let mut module: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let next = [module.as_slice(), std::slice::from_ref(seg)].concat();
            if self.modules.contains_key(&next) {
                module = next;
                continue;
            }
            if let Some(mut target) = self.reexport(&module, seg).filter(|_| depth < 16) {
                target.extend(path[i + 1..].iter().cloned());
                return self.defining_file(&target, depth + 1);
            }
            break;
        }
        self.modules.get(&module).map(|m| m.0.as_str())
    }

    /// (file, the absolute path) of every path a file's code names within the crate.
    pub fn named(&self) -> Vec<(&str, ModPath)> {
        let mut out = Vec::new();
        for (here, (file, code)) in &self.modules {
            for path in code.named_paths() {
                out.extend(self.absolute(here, path).map(|abs| (file.as_str(), abs)));
            }
        }
        out
    }

    /// (file, the file it names or `None` for a file that names none, the path written).
    pub fn arrows(&self) -> Vec<(&str, Option<&str>, String)> {
        let mut out = Vec::new();
        for (here, (file, code)) in &self.modules {
            out.push((file.as_str(), None, String::new()));
            // A re-export is the module's table of contents; it counts only where the module's
            // own code uses the name too.
            let used = code
                .uses
                .iter()
                .filter(|u| !u.public || u.name.as_ref().is_some_and(|n| code.words.contains(n)));
            for path in used.map(|u| &u.path).chain(&code.paths) {
                let Some(abs) = self.absolute(here, path) else {
                    continue;
                };
                if let Some(to) = self.defining_file(&abs, 0).filter(|to| to != file) {
                    out.push((file.as_str(), Some(to), path.join("::")));
                }
            }
        }
        out
    }

    /// file → the files its code names.
    pub fn edges(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (from, to, _) in self.arrows() {
            edges.entry(from).or_default().extend(to);
        }
        edges
    }

    /// The groups of files that reach each other (strongly connected, two or more files).
    pub fn tangles(&self) -> Vec<Vec<String>> {
        let edges = self.edges();
        let mut out: Vec<Vec<String>> = Vec::new();
        for &file in edges.keys() {
            if out.iter().flatten().any(|f| f == file) {
                continue;
            }
            let group: Vec<String> = edges
                .keys()
                .filter(|&&other| {
                    other == file
                        || shortest_path(&edges, file, other).is_some()
                            && shortest_path(&edges, other, file).is_some()
                })
                .map(|f| f.to_string())
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
        for u in FileCode::parse(text)
            .uses
            .iter()
            .filter(|u| u.name.is_none())
        {
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
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to];
            while *path.last().unwrap() != from {
                path.push(prev[path.last().unwrap()]);
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

/// (path under `src/`, text) of every file the filter keeps.
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
                let rel = path.strip_prefix(&src).unwrap().to_string_lossy();
                files.push((
                    rel.replace('\\', "/"),
                    std::fs::read_to_string(&path).unwrap(),
                ));
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
        // Names `Thing` through a's re-export, inside a macro: the arrow lands on a/inner.rs.
        file(
            "b.rs",
            "pub struct Other;\nfn f() { let _ = vec![crate::a::Thing]; }\n",
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
