//! The sessions folder: named manifests over the shared object store.
//!
//! # Layout
//!
//! ```text
//! <data>/sessions/<name>/session.kvrun   the manifest file (0600, folder 0700)
//! <data>/sessions/.locks/<name>.lock     the session lock (0600), never deleted
//! <data>/kv/objects/…                    KV pages and tails (see crate::store)
//! ```
//!
//! Lock files live outside the session folder so that `remove` can hold the lock while it
//! deletes the folder, and they are never deleted: unlinking a lock file that another
//! process has open splits the lock in two (see `store::lock`).
//!
//! # Manifest file
//!
//! A checksummed header line, then JSON; see `session::manifest_file`. Everything is checked
//! before the manifest is used: a bit flip, a truncated write from another tool, or a file
//! from a newer kvrun never reaches the code that restores KV pages.
//!
//! # Garbage collection protocol
//!
//! The store keeps no reference counts; the manifests are the only record of which objects
//! are live (see `crate::store`, "derived, not persisted"). That is safe because:
//!
//! - A **saver** holds its session's [`SessionLock`] for as long as it drives the session,
//!   and for each save takes the store lock *shared* ([`ObjectStore::lock_shared`]), puts
//!   every new object, writes the manifest that names them ([`SessionCatalog::write_manifest`]),
//!   and only then drops the shared lock. Old objects the new manifest no longer names can
//!   then go through [`SessionCatalog::collect_unreferenced`].
//! - **gc** ([`SessionCatalog::gc`], [`SessionCatalog::collect_unreferenced`]) takes the
//!   store lock *exclusive* before reading the manifests and keeps it until the last delete.
//!   It therefore never runs between a saver's first object and its manifest, and a manifest
//!   it has read cannot gain references before it finishes.
//! - Pages a session's background writer stores during the prefill, long before the save
//!   whose manifest names them, are listed first in that writer's lease
//!   ([`crate::store::lease`]), under the shared lock. gc keeps every object a live
//!   process's lease lists; a dead process's lease is deleted, so it pins nothing.
//! - A commit that still finds an object its manifest names missing (a gc of an older
//!   kvrun, a hand-deleted file) writes the manifest all the same: the token log is the
//!   truth and must not be lost; a restore recomputes the missing pages, and the session's
//!   next save (a retry right away, a repair at the server's shutdown) writes them again.
//! - A manifest that cannot be read is skipped with a warning naming its session: one
//!   damaged session must not stop gc, listings or reference counts for all the others.
//!   Its pages may then be collected. That costs at most a recompute, never the truth: the
//!   KV is a cache of a token log, and that session's log is unreadable already.
//! - `fork` and `import` publish new references under the shared lock like a save; `export`
//!   reads under it, so the objects it copies cannot vanish midway.
//!
//! The store lock is per open file description: a process holding it shared that asks for
//! it exclusive waits for itself. So gc, `collect_unreferenced` and `remove` must not be
//! called while the caller holds the shared lock.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::SessionError;
use super::manifest::{SessionManifest, MANIFEST_FORMAT};
use super::manifest_file::{decode_manifest, encode_manifest, MAX_MANIFEST_BYTES};
use super::name::validate_name;
use crate::paths::Paths;
use crate::store::fsutil::read_bounded;
use crate::store::lock::{LockHolder, HOLDER_MAX_BYTES};
use crate::store::{
    create_private_dir_all, fsync_dir, write_atomic, GcReport, ObjectId, ObjectStore, SessionLock,
    StoreError,
};

/// Name of the manifest file inside a session folder.
pub const MANIFEST_FILE: &str = "session.kvrun";
/// Folder of lock files inside the sessions folder (its leading dot keeps it out of listings).
const LOCK_DIR: &str = ".locks";

type Result<T, E = SessionError> = std::result::Result<T, E>;

/// Creates the lock folder under `sessions` if it is missing. Lock files are written to, so
/// a symbolic link in its place (which would put them wherever it points) is refused.
fn open_lock_dir(sessions: &Path) -> Result<()> {
    let dir = sessions.join(LOCK_DIR);
    create_private_dir_all(&dir)?;
    let is_link = fs::symlink_metadata(&dir)
        .map_err(|e| StoreError::Io {
            path: dir.clone(),
            source: e,
        })?
        .file_type()
        .is_symlink();
    if is_link {
        return Err(StoreError::Io {
            path: dir,
            source: std::io::Error::other(
                "it is a symbolic link, and kvrun writes its session locks there; replace it \
                 with a folder",
            ),
        }
        .into());
    }
    Ok(())
}

/// One row of `kvrun session ls`.
// Deserialize: `kvrun sessions --remote` reads it back from a server's list (tolerantly).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SessionSummary {
    pub name: String,
    /// Length of the token log.
    pub tokens: usize,
    /// Tokens covered by the KV snapshot (0 without one).
    pub kv_tokens: usize,
    /// Display name of the model.
    pub model: String,
    pub updated_unix: u64,
    /// Full KV pages in the snapshot.
    pub pages: usize,
    /// Distinct objects referenced (pages, sliding-window pages, tail).
    pub objects: usize,
    /// Bytes on disk of those objects.
    pub bytes: u64,
    /// The part of `bytes` also referenced by another session (removing this one keeps it).
    pub shared_bytes: u64,
    /// Referenced objects that are not in the store (the session restores by prefill).
    pub missing_objects: usize,
    /// Set when the manifest cannot be read; the other fields are then empty.
    pub error: Option<String>,
}

/// What `remove` did after deleting the session.
#[derive(Debug)]
pub struct RemoveReport {
    /// The garbage collection that followed, or why it failed. The session is gone either
    /// way; its unshared pages are collected by the next successful gc.
    pub gc: Result<GcReport>,
}

/// The sessions folder and the object store its manifests point into.
#[derive(Debug, Clone)]
pub struct SessionCatalog {
    dir: PathBuf,
    store: ObjectStore,
}

impl SessionCatalog {
    /// Opens the catalog, creating `sessions/` (0700) and the object store if needed.
    pub fn open(paths: &Paths) -> Result<Self> {
        let dir = paths.sessions();
        open_lock_dir(&dir)?;
        let store = ObjectStore::open(paths.objects())?;
        Ok(Self { dir, store })
    }

    pub fn store(&self) -> &ObjectStore {
        &self.store
    }

    /// The sessions folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Folder of session `name` (the name is not validated here).
    pub fn session_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn manifest_path(&self, name: &str) -> PathBuf {
        self.session_dir(name).join(MANIFEST_FILE)
    }

    fn lock_path(&self, name: &str) -> PathBuf {
        self.dir.join(LOCK_DIR).join(format!("{name}.lock"))
    }

    /// Whether session `name` has a manifest (readable or not).
    pub fn exists(&self, name: &str) -> Result<bool> {
        validate_name(name)?;
        let path = self.manifest_path(name);
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(SessionError::io(&path, e)),
        }
    }

    /// Reads and verifies the manifest of `name`.
    pub fn read_manifest(&self, name: &str) -> Result<SessionManifest> {
        self.read_manifest_raw(name).map(|(manifest, _)| manifest)
    }

    /// The verified manifest and the file's bytes exactly as stored (for export).
    pub(crate) fn read_manifest_raw(&self, name: &str) -> Result<(SessionManifest, Vec<u8>)> {
        validate_name(name)?;
        let path = self.manifest_path(name);
        // Not following links, no FIFOs or devices, and bounded: a manifest is a file kvrun
        // did not just write, so it is checked before a byte of it is trusted.
        let bytes = match read_bounded(&path, MAX_MANIFEST_BYTES) {
            Ok(b) => b,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Err(SessionError::NotFound { name: name.into() })
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
                ) =>
            {
                return Err(SessionError::Corrupt {
                    name: name.into(),
                    detail: format!("its manifest file {e}"),
                })
            }
            Err(e) => return Err(SessionError::io(&path, e)),
        };
        let manifest = decode_manifest(&bytes).map_err(|e| e.for_session(name))?;
        if manifest.name != name {
            return Err(SessionError::Corrupt {
                name: name.into(),
                detail: format!(
                    "the manifest names session {:?}, not the folder's name",
                    manifest.name
                ),
            });
        }
        Ok((manifest, bytes))
    }

    /// Writes `manifest` under its own name, atomically (temp file, fsync, rename, fsync the
    /// folder), creating the session folder if needed. The caller holds the session lock, and
    /// the store lock shared if the manifest names objects it has just put (module docs).
    pub fn write_manifest(&self, manifest: &SessionManifest) -> Result<()> {
        validate_name(&manifest.name)?;
        if manifest.format != MANIFEST_FORMAT {
            // Would be unreadable (or "too new") on the next read: refuse to write it.
            return Err(SessionError::Corrupt {
                name: manifest.name.clone(),
                detail: format!(
                    "refusing to write manifest format {}; this kvrun writes format \
                     {MANIFEST_FORMAT}",
                    manifest.format
                ),
            });
        }
        let bytes = encode_manifest(manifest)?;
        let dir = self.session_dir(&manifest.name);
        create_private_dir_all(&dir)?;
        write_atomic(&dir.join(MANIFEST_FILE), &bytes)?;
        Ok(())
    }

    /// Pins or unpins a session on disk that no process holds open (a held one is pinned
    /// by its holder: [`SessionError::InUse`] here).
    pub fn set_pinned(&self, name: &str, pinned: bool) -> Result<()> {
        let _lock = self.lock(name)?;
        let mut manifest = self.read_manifest(name)?;
        manifest.pinned = pinned;
        let _store = self.store.lock_shared()?;
        self.write_manifest(&manifest)
    }

    /// Takes the session's lock without waiting; a second holder, in this process or
    /// another, gets [`SessionError::InUse`].
    pub fn lock(&self, name: &str) -> Result<SessionLock> {
        validate_name(name)?;
        open_lock_dir(&self.dir)?;
        let path = self.lock_path(name);
        SessionLock::try_acquire(&path).map_err(|e| match e {
            StoreError::InUse { .. } => {
                let holder = lock_holder(&path);
                SessionError::InUse {
                    name: name.into(),
                    pid: holder.as_ref().map(|h| h.pid),
                    command: holder.and_then(|h| h.command),
                }
            }
            other => other.into(),
        })
    }

    /// The first step of every session's life: its lock, then its manifest (None for a new
    /// session). Locking first means a session in use elsewhere, or unreadable, is refused
    /// before the caller changes anything.
    pub fn lock_and_read(&self, name: &str) -> Result<(SessionLock, Option<SessionManifest>)> {
        let lock = self.lock(name)?;
        match self.read_manifest(name) {
            Ok(m) => Ok((lock, Some(m))),
            Err(SessionError::NotFound { .. }) => Ok((lock, None)),
            Err(e) => Err(e),
        }
    }

    /// Every session, sorted by name. An unreadable manifest shows up as a row with `error`
    /// set rather than failing the listing.
    pub fn list(&self) -> Result<Vec<SessionSummary>> {
        let all = self.load_all()?;
        let refs = count_refs(all.iter().filter_map(|(_, m)| m.as_ref().ok()));
        // Objects shared between sessions are looked up once.
        let mut sizes: HashMap<ObjectId, Option<u64>> = HashMap::new();
        let mut rows = Vec::with_capacity(all.len());
        for (name, manifest) in all {
            let manifest = match manifest {
                Ok(m) => m,
                Err(e) => {
                    rows.push(SessionSummary {
                        name,
                        error: Some(e.to_string()),
                        ..SessionSummary::default()
                    });
                    continue;
                }
            };
            let mut row = SessionSummary {
                name,
                tokens: manifest.tokens.len(),
                kv_tokens: manifest
                    .snapshot
                    .as_ref()
                    .map(|s| s.kv_len)
                    .or(manifest.state.as_ref().map(|s| s.kv_len))
                    .unwrap_or(0),
                model: manifest.model.name.clone(),
                updated_unix: manifest.updated_unix,
                pages: manifest.snapshot.as_ref().map_or(0, |s| s.pages.len()),
                ..SessionSummary::default()
            };
            for id in distinct_objects(&manifest) {
                row.objects += 1;
                let size = match sizes.entry(id) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => *e.insert(match self.store.size_on_disk(&id) {
                        Ok(n) => Some(n),
                        Err(StoreError::Missing { .. }) => None,
                        Err(e) => return Err(e.into()),
                    }),
                };
                match size {
                    Some(n) => {
                        row.bytes += n;
                        if refs.get(&id).copied().unwrap_or(0) > 1 {
                            row.shared_bytes += n;
                        }
                    }
                    None => row.missing_objects += 1,
                }
            }
            rows.push(row);
        }
        Ok(rows)
    }

    /// How many sessions reference each object (a session naming an object twice counts
    /// once). An unreadable manifest is skipped with a warning.
    pub fn refcounts(&self) -> Result<HashMap<ObjectId, usize>> {
        Ok(count_refs(self.readable_manifests()?.iter()))
    }

    /// Every object some readable session references (an unreadable manifest is skipped
    /// with a warning). For gc the caller must hold the store lock exclusive ([`Self::gc`]
    /// does).
    pub fn live_set(&self) -> Result<HashSet<ObjectId>> {
        Ok(self
            .readable_manifests()?
            .iter()
            .flat_map(|m| m.referenced_objects())
            .collect())
    }

    /// Deletes every object no manifest references (and stray temp files), under the
    /// store's exclusive lock. Waits for savers in progress to finish.
    pub fn gc(&self) -> Result<GcReport> {
        let _exclusive = self.store.lock_exclusive()?;
        let live = self.live_set()?;
        Ok(self.store.gc(&live)?)
    }

    /// The cheap collection after a save: deletes those of `candidates` (typically the
    /// objects the previous manifest named) that no manifest references now. Same lock as
    /// [`Self::gc`]; the caller must not hold the shared lock.
    pub fn collect_unreferenced(&self, candidates: &[ObjectId]) -> Result<GcReport> {
        let mut report = GcReport::default();
        if candidates.is_empty() {
            return Ok(report);
        }
        let _exclusive = self.store.lock_exclusive()?;
        let mut live = self.live_set()?;
        // A stale object of one session can be a page another live session has just
        // written again and not named yet (same content, same id).
        live.extend(self.store.leased_objects()?);
        let unique: HashSet<ObjectId> = candidates.iter().copied().collect();
        for id in unique {
            if live.contains(&id) {
                report.kept += 1;
                continue;
            }
            let size = match self.store.size_on_disk(&id) {
                Ok(n) => n,
                Err(StoreError::Missing { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            if self.store.remove(&id)? {
                report.removed += 1;
                report.bytes_freed += size;
            }
        }
        Ok(report)
    }

    /// Deletes session `name` (corrupt or not) under its lock, then collects garbage: its
    /// pages that no other session references go, shared ones stay.
    pub fn remove(&self, name: &str) -> Result<RemoveReport> {
        validate_name(name)?;
        let dir = self.session_dir(name);
        // Checked before locking too, so a typo does not leave a lock file behind.
        if !dir.is_dir() {
            return Err(SessionError::NotFound { name: name.into() });
        }
        let lock = self.lock(name)?;
        if !dir.is_dir() {
            return Err(SessionError::NotFound { name: name.into() });
        }
        // The manifest's unlink is the commit point: once it is durable the session is gone
        // even if a crash leaves the folder (or a stray temp file in it) behind.
        let manifest = dir.join(MANIFEST_FILE);
        match fs::remove_file(&manifest) {
            Ok(()) => fsync_dir(&dir)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SessionError::io(&manifest, e)),
        }
        fs::remove_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        fsync_dir(&self.dir)?;
        drop(lock);
        Ok(RemoveReport { gc: self.gc() })
    }

    /// Creates session `dst` as a copy of `src`'s manifest: the two share every page (no
    /// object is copied) and diverge from here. Holds both session locks. Returns the new
    /// manifest.
    pub fn fork(&self, src: &str, dst: &str) -> Result<SessionManifest> {
        validate_name(src)?;
        validate_name(dst)?;
        if src == dst || self.exists(dst)? {
            return Err(SessionError::Exists { name: dst.into() });
        }
        if !self.exists(src)? {
            return Err(SessionError::NotFound { name: src.into() });
        }
        let _src_lock = self.lock(src)?;
        let _dst_lock = self.lock(dst)?;
        if self.exists(dst)? {
            return Err(SessionError::Exists { name: dst.into() });
        }
        let mut manifest = self.read_manifest(src)?;
        let now = crate::clock::unix_now();
        manifest.name = dst.into();
        manifest.created_unix = now;
        manifest.updated_unix = now;
        // `src` keeps the pages alive already (its lock stops it changing); the shared lock
        // keeps this a save like any other under the protocol.
        let _shared = self.store.lock_shared()?;
        self.write_manifest(&manifest)?;
        Ok(manifest)
    }

    /// The sessions of `family` (see [`super::family`]) with their member numbers, in
    /// member order; from folder names alone, no manifest read.
    pub fn family_members(&self, family: &str) -> Result<Vec<(usize, String)>> {
        let mut members: Vec<(usize, String)> = self
            .folder_names()?
            .into_iter()
            .filter_map(|name| Some((super::family::member_index(&name, family)?, name)))
            .filter(|(_, name)| self.manifest_path(name).exists())
            .collect();
        members.sort();
        Ok(members)
    }

    /// Folder names that could be sessions, sorted.
    pub(super) fn folder_names(&self) -> Result<Vec<String>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionError::io(&self.dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| SessionError::io(&self.dir, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if validate_name(&name).is_ok() && entry.path().is_dir() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Every session folder with its manifest or the reason it cannot be read. A folder
    /// without a manifest (a crashed create, a removal in progress) is no session.
    fn load_all(&self) -> Result<Vec<(String, Result<SessionManifest>)>> {
        Ok(self
            .folder_names()?
            .into_iter()
            .filter_map(|name| match self.read_manifest(&name) {
                Err(SessionError::NotFound { .. }) => None,
                read => Some((name, read)),
            })
            .collect())
    }

    fn readable_manifests(&self) -> Result<Vec<SessionManifest>> {
        Ok(self
            .load_all()?
            .into_iter()
            .filter_map(|(name, read)| match read {
                Ok(manifest) => Some(manifest),
                Err(e) => {
                    tracing::warn!(
                        "{}",
                        SessionError::Unreadable {
                            detail: e.reason(),
                            name,
                        }
                    );
                    None
                }
            })
            .collect())
    }
}

/// The objects `manifest` references, each once, in order of first reference.
pub(crate) fn distinct_objects(manifest: &SessionManifest) -> Vec<ObjectId> {
    let mut seen = HashSet::new();
    manifest
        .referenced_objects()
        .filter(|id| seen.insert(*id))
        .collect()
}

fn count_refs<'a>(
    manifests: impl Iterator<Item = &'a SessionManifest>,
) -> HashMap<ObjectId, usize> {
    let mut refs = HashMap::new();
    for manifest in manifests {
        for id in distinct_objects(manifest) {
            *refs.entry(id).or_insert(0) += 1;
        }
    }
    refs
}

/// Who the lock holder says it is in the lock file; best effort, for the message only.
fn lock_holder(lock_path: &Path) -> Option<LockHolder> {
    let bytes = read_bounded(lock_path, HOLDER_MAX_BYTES).ok()?;
    LockHolder::parse(std::str::from_utf8(&bytes).ok()?)
}

#[cfg(test)]
mod tests;
