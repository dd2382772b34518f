//! Every saved session's log and snapshot, by content: where a new prompt parts from a log
//! inside one of its pages, that page (or tail) is the only object that holds the cells
//! before the parting point, and no page id can name it (ids chain over whole pages). The
//! manifests are that index. They are read once and then again only when their file
//! changes, so a lookup per request costs a folder listing and a stat per session. Logs of a
//! memory kvrun does not page are indexed the same way, with their whole state and
//! checkpoints (`live/checkpoints.rs`).

use std::collections::HashMap;
use std::fs;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::catalog::SessionCatalog;
use super::error::SessionError;
use super::manifest::{KvSnapshot, StateCheckpoint};
use crate::token::TokenId;

/// A saved session's log, as far as its snapshot (paged memory) or its whole state (a
/// memory kvrun does not page) covers it.
#[derive(Debug)]
pub struct SavedLog {
    pub name: String,
    /// The first `snapshot.kv_len` (or `state.kv_len`) tokens of the log.
    pub tokens: Vec<TokenId>,
    pub snapshot: Option<KvSnapshot>,
    /// The whole state at the log's end, and the checkpoints before it.
    pub state: Option<StateCheckpoint>,
    pub checkpoints: Vec<StateCheckpoint>,
}

/// A manifest file as last read: the file's modification time and length say whether it
/// changed since.
type Stamp = (SystemTime, u64);

/// A session's manifest as last read: `None` when it has no usable snapshot of this model.
type Entry = (Stamp, Option<Arc<SavedLog>>);

/// The saved logs of one model, shared by a process's sessions of it
/// ([`super::SessionBinding`]).
#[derive(Debug)]
pub struct SavedLogs {
    model_fingerprint: String,
    logs: Mutex<HashMap<String, Entry>>,
}

impl SavedLogs {
    pub fn new(model_fingerprint: &str) -> Self {
        Self {
            model_fingerprint: model_fingerprint.to_string(),
            logs: Mutex::default(),
        }
    }

    /// Every session of this model in `catalog` with a KV snapshot, read from its manifest
    /// (verified as any read is). An unreadable manifest is left out: its pages are only
    /// ever an optimization here.
    pub fn read(&self, catalog: &SessionCatalog) -> Result<Vec<Arc<SavedLog>>, SessionError> {
        let names = catalog.folder_names()?;
        let mut cache = self
            .logs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.retain(|name, _| names.binary_search(name).is_ok());
        let mut logs = Vec::new();
        for name in names {
            let Ok(meta) = fs::symlink_metadata(catalog.manifest_path(&name)) else {
                cache.remove(&name);
                continue;
            };
            let stamp = (
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                meta.len(),
            );
            let fresh = cache.get(&name).is_some_and(|(s, _)| *s == stamp);
            if !fresh {
                let log = catalog.read_manifest(&name).ok().and_then(|m| {
                    if m.model.fingerprint != self.model_fingerprint {
                        return None;
                    }
                    let kv_len = match (&m.snapshot, &m.state) {
                        (Some(s), _) => s.kv_len,
                        (None, Some(s)) => s.kv_len,
                        (None, None) => return None,
                    };
                    let mut tokens = m.tokens;
                    tokens.truncate(kv_len);
                    (tokens.len() == kv_len).then(|| {
                        Arc::new(SavedLog {
                            name: m.name,
                            tokens,
                            snapshot: m.snapshot,
                            state: m.state,
                            checkpoints: m.checkpoints,
                        })
                    })
                });
                cache.insert(name.clone(), (stamp, log));
            }
            if let Some((_, Some(log))) = cache.get(&name) {
                logs.push(Arc::clone(log));
            }
        }
        Ok(logs)
    }
}
