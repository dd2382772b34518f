//! Errors from the session catalog and from export files. Every message is one line and
//! names the session (or the file) involved, and says what to do where there is something
//! to do.

use std::io;
use std::path::{Path, PathBuf};

use super::manifest::MANIFEST_FORMAT;
use crate::store::fsutil::is_disk_full;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session named '{name}'; `kvrun session ls` lists them")]
    NotFound { name: String },

    /// The manifest file exists but fails a check (header line, checksum, JSON, name).
    #[error("session '{name}' is corrupt: {detail}")]
    Corrupt { name: String, detail: String },

    #[error(
        "session '{name}' was saved by a newer kvrun (manifest format {format}, this one \
         reads format {MANIFEST_FORMAT}); upgrade kvrun to use it"
    )]
    TooNew { name: String, format: u32 },

    /// A usage error (see [`SessionError::is_usage`]). `name` is shown escaped, since it
    /// may hold anything the user typed.
    #[error(
        "invalid session name {name:?}: {reason}; use 1 to 64 letters, digits, '.', '_' or \
         '-', not starting with '.' or '-'"
    )]
    InvalidName { name: String, reason: String },

    #[error("session '{name}' is in use by another kvrun process{}", holder_note(.pid, .command))]
    InUse {
        name: String,
        pid: Option<u32>,
        /// What the holder called itself (`kvrun serve`); older kvruns wrote only the pid.
        command: Option<String>,
    },

    #[error(
        "a session named '{name}' already exists; choose another name or remove it first \
         (`kvrun session rm {name}`)"
    )]
    Exists { name: String },

    /// A manifest that cannot be read; gc, listings and reference counts skip it with this
    /// warning.
    #[error(
        "session '{name}' is unreadable and was skipped ({detail}); its KV pages are no \
         longer kept for it: remove it (`kvrun session rm {name}`) or restore a backup"
    )]
    Unreadable { name: String, detail: String },

    /// An object the session references is missing or damaged. Not a `#[source]`: the
    /// message already carries the store's text, and `{:#}` would print it twice.
    #[error("session '{name}': {error}")]
    Object { name: String, error: StoreError },

    #[error(transparent)]
    Store(StoreError),

    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// An export file failed validation on import; nothing was written.
    #[error("cannot import {}: {detail} (nothing was imported)", file.display())]
    Export { file: PathBuf, detail: String },

    /// An export's manifest records a setting outside its range; nothing was imported.
    #[error("cannot import {}: {error} (nothing was imported)", file.display())]
    BadSetting {
        file: PathBuf,
        #[source]
        error: crate::settings::SettingError,
    },

    #[error(
        "disk full while writing {}; free some space (`kvrun gc` deletes unused KV pages) \
         and retry",
        path.display()
    )]
    DiskFull { path: PathBuf },

    /// A saved session that cannot load into this model or context (a usage error: the
    /// fix is another flag or model).
    #[error("session '{name}' {why}")]
    Incompatible { name: String, why: Incompatibility },
}

/// Where a missing model was: its recorded path, or none (an import found no model of its
/// fingerprint in the models folder).
fn missing_place(path: &str) -> String {
    if path.is_empty() {
        ", which is not in the models folder".into()
    } else {
        format!(" at {}, which is not there any more", path.escape_debug())
    }
}

/// Which setting keeps a saved session from loading, with both values and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incompatibility {
    #[error(
        "was saved with model {saved} ({saved_path}); you gave {given} ({given_path}): pass \
         that model, or fork the session's log into a new one"
    )]
    Model {
        saved: String,
        saved_path: String,
        given: String,
        given_path: String,
    },
    /// The model the session names is not at its path any more (and no MODEL was given).
    /// An imported session whose model was not found records no path.
    #[error(
        "was saved with model '{}'{}; pass that model's path (or its name in the models \
         folder) as MODEL",
        .name.escape_debug(),
        missing_place(.path)
    )]
    ModelMissing { name: String, path: String },
    #[error("stores its KV as {saved}; this context uses {now} (pass --kv-type {saved})")]
    KvType {
        saved: &'static str,
        now: &'static str,
    },
    #[error(
        "was saved with --flash-attn {saved}; this context uses {now} (pass --flash-attn \
         {saved})"
    )]
    FlashAttn {
        saved: &'static str,
        now: &'static str,
    },
    #[error("uses {saved}-token pages; this context uses {now}")]
    PageTokens { saved: u32, now: u32 },
    #[error(
        "holds {tokens} tokens but the context has room for {n_ctx}; pass --ctx-size \
         {needed} or more"
    )]
    ContextTooSmall {
        tokens: usize,
        n_ctx: u32,
        needed: usize,
    },
}

fn holder_note(pid: &Option<u32>, command: &Option<String>) -> String {
    match (pid, command) {
        (Some(p), Some(c)) => format!(": held by {c} (pid {p})"),
        (Some(p), None) => format!(" (pid {p})"),
        _ => String::new(),
    }
}

impl SessionError {
    /// True for errors in how kvrun was invoked (exit code 2), not failures of the work.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::InvalidName { .. } | Self::BadSetting { .. } | Self::Incompatible { .. }
        )
    }

    /// Attaches `path` to an I/O error; a full disk becomes [`SessionError::DiskFull`].
    pub(crate) fn io(path: &Path, err: io::Error) -> Self {
        if is_disk_full(&err) {
            Self::DiskFull {
                path: path.to_path_buf(),
            }
        } else {
            Self::Io {
                path: path.to_path_buf(),
                source: err,
            }
        }
    }

    /// What is wrong, without the session name (for messages that name it already).
    pub(crate) fn reason(&self) -> String {
        match self {
            Self::Corrupt { detail, .. } => detail.clone(),
            Self::TooNew { format, .. } => {
                format!("saved by a newer kvrun, manifest format {format}")
            }
            other => other.to_string(),
        }
    }
}

impl From<StoreError> for SessionError {
    fn from(err: StoreError) -> Self {
        match err {
            // Lifted out so callers (and the CLI's hint) need not look inside `Store`.
            StoreError::DiskFull { path } => Self::DiskFull { path },
            other => Self::Store(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Incompatibility;

    #[test]
    fn a_missing_model_says_where_it_was_or_that_it_was_never_found() {
        let moved = Incompatibility::ModelMissing {
            name: "m".into(),
            path: "/models/m.gguf".into(),
        };
        assert!(
            moved
                .to_string()
                .contains("at /models/m.gguf, which is not there any more"),
            "{moved}"
        );
        let imported = Incompatibility::ModelMissing {
            name: "m".into(),
            path: String::new(),
        };
        let text = imported.to_string();
        assert!(
            text.contains("'m', which is not in the models folder"),
            "{text}"
        );
        assert!(!text.contains(" at ,"), "{text}");
    }
}
