//! The models a server can serve, and which one a request's `model` names.
//!
//! A model's id is its file's stem (`gemma-3-270m-q4_k_m`), what `/v1/models` lists and a
//! client types. Aliases come from the config file and `--model-alias`; an alias with a `*`
//! is a pattern (`claude-haiku-*`), so that agents that send their own model names reach a
//! local one unchanged. A name resolves to: an id (or the file's name), an exact alias, the
//! most specific matching pattern (the one with the most literal characters), then the
//! default model, if there is one.

use std::path::{Path, PathBuf};

/// One model file the server may load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEntry {
    /// The file's stem, or `--alias` when a single model is served.
    pub id: String,
    /// Further ids `/v1/models` lists for it: exact aliases (and the stem beside
    /// `--alias`).
    pub also: Vec<String>,
    pub path: PathBuf,
}

/// An alias: a name or a `*` pattern, and the entry it names.
#[derive(Debug, Clone)]
struct Alias {
    pattern: glob::Pattern,
    text: String,
    entry: usize,
}

/// Every model a server serves and the names that reach them.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    entries: Vec<ModelEntry>,
    /// Most specific first.
    patterns: Vec<Alias>,
    /// The entry a name nothing else matches goes to.
    default: Option<usize>,
    /// One model answers every name (`kvrun serve MODEL`).
    single: bool,
}

/// A name no model, alias or default answers.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no model '{name}' here; this server's models are: {known}")]
pub struct UnknownModel {
    pub name: String,
    pub known: String,
}

/// An alias the roster cannot take.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AliasError {
    #[error("model alias '{alias}': {detail}")]
    Pattern { alias: String, detail: String },
    #[error("model alias '{alias}' names '{target}', which is not a model here ({known})")]
    Target {
        alias: String,
        target: String,
        known: String,
    },
}

impl Roster {
    /// `kvrun serve MODEL`: that model answers every name; its ids are `alias` (if any)
    /// and its stem.
    pub fn single(path: &Path, alias: Option<&str>) -> Self {
        let stem = stem(path);
        let (id, also) = match alias {
            Some(a) if a != stem => (a.to_string(), vec![stem]),
            _ => (stem, Vec::new()),
        };
        Self {
            entries: vec![ModelEntry {
                id,
                also,
                path: path.to_path_buf(),
            }],
            patterns: Vec::new(),
            default: Some(0),
            single: true,
        }
    }

    /// Every `.gguf` file in `dir` (sorted by id), plus `extra` files outside it.
    pub fn folder(dir: &Path, extra: &[PathBuf]) -> Self {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "gguf"))
                    .collect()
            })
            .unwrap_or_default();
        for path in extra {
            if !paths.iter().any(|p| same_file(p, path)) {
                paths.push(path.clone());
            }
        }
        let mut entries: Vec<ModelEntry> = paths
            .into_iter()
            .map(|path| ModelEntry {
                id: stem(&path),
                also: Vec::new(),
                path,
            })
            .collect();
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        entries.dedup_by(|a, b| a.id == b.id);
        Self {
            entries,
            ..Self::default()
        }
    }

    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    pub fn is_single(&self) -> bool {
        self.single
    }

    pub fn default_entry(&self) -> Option<usize> {
        self.default
    }

    /// The entry of the model file at `path`, or of the id or file name `name`.
    pub fn find(&self, name_or_path: &str) -> Option<usize> {
        let as_path = Path::new(name_or_path);
        self.entries.iter().position(|e| {
            e.id == name_or_path
                || e.also.iter().any(|a| a == name_or_path)
                || e.path.file_name().is_some_and(|f| f == name_or_path)
                || same_file(&e.path, as_path)
        })
    }

    /// Makes `entry` answer names nothing else matches.
    pub fn set_default(&mut self, entry: usize) {
        self.default = Some(entry);
    }

    /// Adds alias `alias` (a name, or a pattern with `*`, `?` or `[...]`) for the model
    /// `target` (an id, a file name or a path of an entry).
    pub fn add_alias(&mut self, alias: &str, target: &str) -> Result<(), AliasError> {
        let entry = self.find(target).ok_or_else(|| AliasError::Target {
            alias: alias.into(),
            target: target.into(),
            known: self.ids().join(", "),
        })?;
        if !is_pattern(alias) {
            if !self.entries[entry].also.iter().any(|a| a == alias)
                && self.entries[entry].id != alias
            {
                self.entries[entry].also.push(alias.to_string());
            }
            return Ok(());
        }
        let pattern = glob::Pattern::new(alias).map_err(|e| AliasError::Pattern {
            alias: alias.into(),
            detail: e.to_string(),
        })?;
        self.patterns.push(Alias {
            pattern,
            text: alias.to_string(),
            entry,
        });
        // Most literal characters first: `claude-haiku-*` before `claude-*`.
        self.patterns
            .sort_by_key(|a| std::cmp::Reverse(literal_chars(&a.text)));
        Ok(())
    }

    /// The entry a request's `model` names (`None`: the request named none).
    pub fn resolve(&self, name: Option<&str>) -> Result<usize, UnknownModel> {
        let unknown = |name: &str| UnknownModel {
            name: name.to_string(),
            known: self.ids().join(", "),
        };
        let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
            return self.default.ok_or_else(|| unknown(""));
        };
        if self.single {
            return Ok(0);
        }
        if let Some(i) = self.entries.iter().position(|e| {
            e.id == name
                || e.also.iter().any(|a| a == name)
                || e.path.file_name().is_some_and(|f| f == name)
        }) {
            return Ok(i);
        }
        if let Some(alias) = self.patterns.iter().find(|a| a.pattern.matches(name)) {
            return Ok(alias.entry);
        }
        self.default.ok_or_else(|| unknown(name))
    }

    /// Every id a client may send, in listing order: each model's id, then its aliases.
    pub fn ids(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| std::iter::once(e.id.clone()).chain(e.also.iter().cloned()))
            .collect()
    }

    /// The patterns and the ids they reach, for `/v1/kvrun/stats`.
    pub fn patterns(&self) -> Vec<(String, String)> {
        self.patterns
            .iter()
            .map(|a| (a.text.clone(), self.entries[a.entry].id.clone()))
            .collect()
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned())
}

fn literal_chars(pattern: &str) -> usize {
    pattern.chars().filter(|c| !"*?[]".contains(*c)).count()
}

fn is_pattern(alias: &str) -> bool {
    alias.contains(['*', '?', '['])
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roster() -> (tempfile::TempDir, Roster) {
        let dir = tempfile::tempdir().unwrap();
        for name in ["big.gguf", "small.gguf", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let roster = Roster::folder(dir.path(), &[]);
        (dir, roster)
    }

    #[test]
    fn the_folder_lists_its_gguf_files_by_stem() {
        let (_dir, roster) = roster();
        assert_eq!(roster.ids(), vec!["big", "small"]);
        assert_eq!(roster.resolve(Some("small")).ok(), Some(1));
        assert_eq!(roster.resolve(Some("big.gguf")).ok(), Some(0));
        let unknown = roster.resolve(Some("gpt-4")).unwrap_err();
        assert!(unknown.to_string().contains("big, small"), "{unknown}");
        assert!(roster.resolve(None).is_err());
    }

    #[test]
    fn the_most_specific_pattern_wins_then_the_default() {
        let (_dir, mut roster) = roster();
        roster.add_alias("claude-*", "big").unwrap();
        roster.add_alias("claude-haiku-*", "small").unwrap();
        roster.add_alias("local", "small.gguf").unwrap();
        assert_eq!(
            roster.resolve(Some("claude-haiku-4-5-20251001")).ok(),
            Some(1)
        );
        assert_eq!(roster.resolve(Some("claude-sonnet-4-5")).ok(), Some(0));
        assert_eq!(roster.resolve(Some("local")).ok(), Some(1));
        assert_eq!(roster.ids(), vec!["big", "small", "local"]);
        assert!(roster.resolve(Some("gpt-4")).is_err());
        roster.set_default(1);
        assert_eq!(roster.resolve(Some("gpt-4")).ok(), Some(1));
        assert_eq!(roster.resolve(None).ok(), Some(1));
        let bad = roster.add_alias("x-*", "nothing").unwrap_err();
        assert!(bad.to_string().contains("not a model here"), "{bad}");
        assert!(roster.add_alias("[", "big").is_err());
    }

    #[test]
    fn one_model_answers_every_name() {
        let roster = Roster::single(Path::new("/m/tiny.gguf"), Some("local"));
        assert_eq!(roster.ids(), vec!["local", "tiny"]);
        assert_eq!(roster.resolve(Some("claude-opus")).ok(), Some(0));
        assert_eq!(roster.resolve(None).ok(), Some(0));
    }
}
