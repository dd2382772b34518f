//! The part of a save that needs only the store and the catalog, not the context: write the
//! objects the engine thread captured, check that every object the manifest names is
//! stored, write the manifest (atomically, last) and delete what it no longer names. It
//! runs on the session's [`super::writer::SessionWriter`], after the pages queued before it.
//!
//! An object the check finds missing (its write failed, or a gc that does not honour the
//! writer's lease took it) does not stop the manifest: the token log is the truth and the
//! KV a cache of it, so the log is saved, and the pages are left named. A restore reads
//! them as missing and recomputes from there, as it does for any lost page; the session
//! hears which ones they were, so that its next save (a retry of [`super::LiveSession::save`],
//! the server's repair) captures and writes them again.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use super::early::{EarlyStats, PendingLease};
use super::SaveReport;
use crate::session::catalog::SessionCatalog;
use crate::session::kv_error::{LiveError, LiveResult};
use crate::session::manifest::SessionManifest;
use crate::store::{ObjectId, PutJob};
use crate::tiers::WarmPool;

/// Who asked for a save, so that its outcome reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveOrigin {
    /// The end of a reply. `client_saves`: its client saves again right after with its
    /// transcript (a chat, `run --session`) and hears this save's warnings from that one.
    ReplyEnd { client_saves: bool },
    /// A caller that waits for this save ([`super::LiveSession::save`]) or is told by
    /// [`CommitNotice`].
    Requested,
}

/// Called on the writer thread once a commit landed or failed (a client's reply channel).
pub type CommitNotice = Box<dyn FnOnce(&LiveResult<SaveReport>) + Send>;

/// A save, captured and sliced, waiting for its disk work.
pub(super) struct CommitJob {
    /// Numbers a session's saves (a waiting caller finds its own outcome by it).
    pub(super) number: u64,
    pub(super) origin: SaveOrigin,
    pub(super) objects: Vec<PutJob>,
    pub(super) manifest: SessionManifest,
    /// The manifest the engine thread knew as saved when it planned this one; the writer
    /// uses it only before its own first commit (after that it knows better).
    pub(super) previous: Option<SessionManifest>,
    pub(super) warm: Option<Arc<WarmPool>>,
    /// The engine thread's part: capture and slicing times, warnings.
    pub(super) report: SaveReport,
    /// When the save started (its `save_ms` runs to the manifest's landing).
    pub(super) started: Instant,
    pub(super) notice: Option<CommitNotice>,
}

/// A commit's result, and what the session must learn from it about the store.
pub struct CommitOutcome {
    pub number: u64,
    pub origin: SaveOrigin,
    pub result: LiveResult<SaveReport>,
    /// The manifest now on disk (success only).
    manifest: Option<SessionManifest>,
    /// Success: the objects the manifest names, stored. Failure: the objects this commit
    /// wrote or expected, which the session must no longer count as stored.
    objects: Vec<ObjectId>,
    /// Objects the previous manifest named and this one does not (deleted unless another
    /// session uses them).
    stale: Vec<ObjectId>,
    /// Failure: objects a read had found damaged, to be rewritten by the next save.
    replaced: Vec<ObjectId>,
    /// Success: objects the manifest names that the store lacked (not in `objects`).
    missing: Vec<ObjectId>,
}

impl CommitOutcome {
    /// The manifest this commit made durable, if it did.
    pub(super) fn durable_manifest(&self) -> Option<&SessionManifest> {
        self.manifest.as_ref()
    }

    /// Splits the outcome into what the session's state needs and what its caller hears.
    pub(super) fn into_parts(self) -> (StoreFacts, CommitOutcome) {
        let facts = StoreFacts {
            manifest: self.manifest,
            objects: self.objects,
            stale: self.stale,
            replaced: self.replaced,
            missing: self.missing,
            committed: self.result.is_ok(),
        };
        let heard = CommitOutcome {
            manifest: None,
            objects: Vec::new(),
            stale: Vec::new(),
            replaced: Vec::new(),
            missing: Vec::new(),
            ..self
        };
        (facts, heard)
    }
}

/// What a commit taught about the store (see [`CommitOutcome`]).
pub(super) struct StoreFacts {
    pub(super) committed: bool,
    pub(super) manifest: Option<SessionManifest>,
    pub(super) objects: Vec<ObjectId>,
    pub(super) stale: Vec<ObjectId>,
    pub(super) replaced: Vec<ObjectId>,
    pub(super) missing: Vec<ObjectId>,
}

impl CommitJob {
    /// Writes the objects and the manifest; `previous` is the manifest on disk now, `lease`
    /// the writer's lease on the pages stored before this commit (cleared once the manifest
    /// names them). Returns the outcome after telling the notice.
    pub(super) fn run(
        mut self,
        catalog: &SessionCatalog,
        previous: Option<&SessionManifest>,
        early: EarlyStats,
        lease: Option<&mut PendingLease>,
    ) -> CommitOutcome {
        let queued_ms = self.started.elapsed().as_secs_f64() * 1e3 - self.report.phases.plan_ms;
        self.report.phases.queue_ms = queued_ms.max(0.0);
        if let Some(e) = &early.error {
            tracing::debug!(
                "session '{}': a background page write failed: {e}",
                self.manifest.name
            );
        }
        self.report.early_objects = early.objects;
        self.report.early_bytes = early.bytes;
        self.report.early_ms = early.busy_ms;
        let written: Vec<ObjectId> = self.objects.iter().map(|j| j.id).collect();
        let replaced: Vec<ObjectId> = self
            .objects
            .iter()
            .filter(|j| j.replace)
            .map(|j| j.id)
            .collect();
        let objects = std::mem::take(&mut self.objects);
        let result = self.write(catalog, objects, previous, lease);
        let mut outcome = CommitOutcome {
            number: self.number,
            origin: self.origin,
            result: Err(LiveError::internal("unset")),
            manifest: None,
            objects: Vec::new(),
            stale: Vec::new(),
            replaced: Vec::new(),
            missing: Vec::new(),
        };
        match result {
            Ok((stale, missing)) => {
                outcome.objects = self
                    .manifest
                    .referenced_objects()
                    .filter(|id| !missing.contains(id))
                    .collect();
                outcome.stale = stale;
                outcome.missing = missing;
                self.report.save_ms = self.started.elapsed().as_secs_f64() * 1e3;
                outcome.result = Ok(self.report);
                outcome.manifest = Some(self.manifest);
            }
            Err((e, missing)) => {
                outcome.objects = written.into_iter().chain(missing).collect();
                outcome.replaced = replaced;
                outcome.result = Err(e);
            }
        }
        if let Some(notice) = self.notice.take() {
            notice(&outcome.result);
        }
        outcome
    }

    /// The store's part; returns the stale objects and those found missing (named by the
    /// manifest all the same), or the error and the objects found missing.
    #[allow(clippy::result_large_err, clippy::type_complexity)]
    fn write(
        &mut self,
        catalog: &SessionCatalog,
        objects: Vec<PutJob>,
        previous: Option<&SessionManifest>,
        lease: Option<&mut PendingLease>,
    ) -> Result<(Vec<ObjectId>, Vec<ObjectId>), (LiveError, Vec<ObjectId>)> {
        let plain = |e: LiveError| (e, Vec::new());
        let ms = |at: Instant| at.elapsed().as_secs_f64() * 1e3;
        let store = catalog.store();
        // Held from the first object to the manifest: gc cannot run in between.
        let store_lock = store.lock_shared().map_err(|e| plain(e.into()))?;
        let warm = self.warm.clone();
        let ((), written, batch) = store
            .put_batch(
                |emit| {
                    objects.into_iter().for_each(emit);
                    Ok::<_, LiveError>(())
                },
                |id, rows| {
                    if let Some(warm) = &warm {
                        warm.insert(id, rows);
                    }
                },
            )
            .map_err(plain)?;
        let report = &mut self.report;
        let phases = &mut report.phases;
        phases.queue_wait_ms = batch.queue_wait_ms;
        phases.hash_ms = batch.hash_ms;
        phases.write_ms = batch.write_ms;
        phases.fsync_ms = batch.fsync_ms;
        phases.objects_ms = batch.writers_ms;
        phases.dir_fsync_ms = batch.dir_fsync_ms;
        for (_, put) in &written {
            report.objects_written += usize::from(!put.already_present);
            report.bytes_written += put.written_bytes;
        }
        // Every object the manifest names is stored: those this commit wrote, those the
        // manifest on disk names (gc keeps them), and the rest (pages the writer stored
        // early, objects found at planning, which a gc may have taken since) checked here.
        let known: HashSet<ObjectId> = written
            .iter()
            .map(|(id, _)| *id)
            .chain(previous.into_iter().flat_map(|m| m.referenced_objects()))
            .collect();
        let mut missing = Vec::new();
        for id in self.manifest.referenced_objects() {
            if !known.contains(&id) && !store.contains(&id).map_err(|e| plain(e.into()))? {
                missing.push(id);
            }
        }
        if !missing.is_empty() {
            tracing::debug!(
                "session '{}': {} objects its manifest names are missing; saving its log                  without them",
                self.manifest.name,
                missing.len()
            );
            self.report.missing_objects = missing.len();
            self.report
                .warnings
                .push(missing_warning(&self.manifest.name, missing.len()));
        }
        let manifest_started = Instant::now();
        catalog
            .write_manifest(&self.manifest)
            .map_err(|e| (e.into(), missing.clone()))?;
        self.report.phases.manifest_ms = ms(manifest_started);
        // Named by the manifest now (or, if missing, to be written by the next save, which
        // leases them again); still in the shared lock, so no gc ran between.
        if let Some(lease) = lease {
            lease.clear();
        }
        drop(store_lock);
        let cleanup_started = Instant::now();
        // Objects the previous manifest used and this one does not (the old tail, window
        // rows that slid out) go now, unless another session still uses them.
        let keep: HashSet<ObjectId> = self.manifest.referenced_objects().collect();
        let stale: Vec<ObjectId> = previous
            .into_iter()
            .flat_map(|m| m.referenced_objects())
            .filter(|id| !keep.contains(id))
            .collect();
        if !stale.is_empty() {
            // The save is committed: a failed clean-up must not report it as failed (a
            // retry would add the turn twice). The next gc collects what is left.
            if let Err(e) = catalog.collect_unreferenced(&stale) {
                tracing::warn!(
                    "session '{}' is saved, but deleting its unused pages failed ({e}); \
                     `kvrun gc` retries",
                    self.manifest.name
                );
            }
        }
        self.report.phases.cleanup_ms = ms(cleanup_started);
        Ok((stale, missing))
    }
}

/// What a save whose commit found `count` objects missing tells its client. The exact
/// text: a retry that writes them takes it back out of the report.
pub(super) fn missing_warning(name: &str, count: usize) -> String {
    format!(
        "session '{name}': {count} of the KV pages it names were missing from the store          (removed by a gc, or a failed write); its token log is saved, and a restore          recomputes those pages until a save writes them again"
    )
}
