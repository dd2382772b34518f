//! Saving a session incrementally: only the pages the store lacks, the tail record and the
//! sliding-window rows captured since the last save, then the manifest, atomically, last.

use std::collections::HashSet;
use std::time::Instant;

use super::{ConversationState, LiveSession, SaveReport};
use crate::engine::Context;
use crate::kv::{KvLayout, PageKey, TailRecord};
use crate::sequence::Sequence;
use crate::session::capture;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::{KvSnapshot, SessionManifest, MANIFEST_FORMAT};
use crate::store::{ObjectId, ObjectKind, PutJob};

/// The stages of a save, in milliseconds. Objects are hashed, written and fsynced on a few
/// writer threads while the next ones are sliced, so `hash_ms`, `write_ms` and `fsync_ms`
/// are summed over those threads; `objects_ms` is their wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SavePhases {
    /// Waiting for the background writer to store the pages queued during the prefill.
    pub early_wait_ms: f64,
    /// llama.cpp's `state_seq_get_data` of the positions to store.
    pub capture_ms: f64,
    /// Parsing that state and copying its rows into position order.
    pub parse_ms: f64,
    /// Slicing page payloads out of the capture (the producer, without its queue waits).
    pub slice_ms: f64,
    /// The producer waiting for a writer (the writers were the bottleneck).
    pub queue_wait_ms: f64,
    pub hash_ms: f64,
    /// Creating, writing and renaming the objects' files.
    pub write_ms: f64,
    /// The objects' own fsyncs.
    pub fsync_ms: f64,
    /// Wall time of the objects' stage: slicing, hashing, writing and fsyncs together.
    pub objects_ms: f64,
    /// The fan-out directories' fsyncs after the renames.
    pub dir_fsync_ms: f64,
    /// Writing the manifest (atomically, with its fsyncs).
    pub manifest_ms: f64,
    /// Deleting objects the new manifest no longer names.
    pub cleanup_ms: f64,
}

impl LiveSession<'_> {
    /// Writes what the store lacks (new pages, the tail), then the manifest. O(new tokens).
    pub fn save(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
    ) -> Result<SaveReport> {
        let started = Instant::now();
        let ms = |at: Instant| at.elapsed().as_secs_f64() * 1e3;
        let mut report = SaveReport::default();
        // Pages stored while the prefill ran must be durable before the checks below count
        // them as present.
        if let Some(early) = &self.early {
            let stats = early.drain();
            if let Some(e) = &stats.error {
                tracing::debug!(
                    "session '{}': a background page write failed: {e}",
                    self.name
                );
            }
            report.early_objects = stats.objects;
            report.early_bytes = stats.bytes;
            report.early_ms = stats.busy_ms;
        }
        report.phases.early_wait_ms = ms(started);
        let p = self.page_tokens;
        let kv_len = seq.kv_len();
        let tokens = seq.tokens();
        let full = kv_len / p;
        let boundary = full * p;
        let mut ids = Vec::new();
        self.key.extend_ids(&tokens[..kv_len], p, &mut ids);
        let store = self.catalog.store();
        let _store_lock = store.lock_shared()?;

        let mut first_missing = full;
        for (i, id) in ids.iter().enumerate() {
            if self.damaged.contains(id) {
                first_missing = i;
                break;
            }
            if self.present.contains(id) {
                continue;
            }
            if store.contains(id)? {
                self.present.insert(*id);
                continue;
            }
            first_missing = i;
            break;
        }
        let capture_from = (first_missing * p).min(boundary);
        let mut captured = None;
        if kv_len > capture_from {
            let rows = capture::capture(ctx, self.slot, self.n_swa, capture_from..kv_len, false)?;
            report.phases.capture_ms = rows.state_get_ms;
            report.phases.parse_ms = rows.parse_ms;
            captured = Some(rows);
        }
        let mut layout = self.layout.clone();
        if let Some(c) = &captured {
            let mut sections = Vec::new();
            if let Some(b) = &c.base {
                sections.push(b.layout.clone());
            }
            if let Some(s) = &c.swa {
                sections.push(s.layout.clone());
            }
            let seen = KvLayout {
                sections,
                n_swa: self.n_swa,
            };
            if let Some(known) = &layout {
                if let Some(diff) = known.describe_difference(&seen) {
                    return Err(LiveError::internal(format!(
                        "the context's KV layout changed mid-session: {diff}"
                    )));
                }
            }
            layout = Some(seen);
        }
        self.layout = layout.clone();

        // The objects go to a few writer threads while the next ones are sliced out of
        // the capture; all of them are durable before the manifest below names them.
        let warm = self.warm.clone();
        let ((swa_pages, prefix_swa_pages, mut swa_complete, tail), written, batch) = store
            .put_batch(
                |emit| {
                    self.emit_objects(
                        &mut *emit,
                        &ids,
                        first_missing,
                        captured.as_ref(),
                        kv_len,
                        tokens,
                    )
                },
                |id, rows| {
                    if let Some(warm) = &warm {
                        warm.insert(id, rows);
                    }
                },
            )?;
        let phases = &mut report.phases;
        phases.slice_ms = batch.produce_ms;
        phases.queue_wait_ms = batch.queue_wait_ms;
        phases.hash_ms = batch.hash_ms;
        phases.write_ms = batch.write_ms;
        phases.fsync_ms = batch.fsync_ms;
        phases.objects_ms = batch.writers_ms;
        phases.dir_fsync_ms = batch.dir_fsync_ms;
        for (id, put) in &written {
            report.objects_written += usize::from(!put.already_present);
            report.bytes_written += put.written_bytes;
            self.present.insert(*id);
        }
        if let Some(e) = self.capture_error.take() {
            tracing::warn!("session '{}': {e}", self.name);
            swa_complete = false;
        }
        if !swa_complete {
            tracing::warn!(
                "session '{}': some sliding-window rows could not be kept; a restore will \
                 recompute part of the session",
                self.name
            );
        }

        let now = crate::clock::unix_now();
        let mut kv = self.kv.clone();
        kv.layout = layout.as_ref().map(KvLayout::encode);
        let manifest = SessionManifest {
            format: MANIFEST_FORMAT,
            name: self.name.clone(),
            created_unix: self.saved.as_ref().map_or(now, |m| m.created_unix),
            updated_unix: now,
            model: self.model.clone(),
            kv,
            llama_build: crate::engine::llama_build_info(),
            engine: self.engine.clone(),
            sampling: self.sampling.clone(),
            tokens: tokens.to_vec(),
            messages: conversation.messages.to_vec(),
            rendered_len: conversation.rendered_len,
            raw: conversation.raw,
            chat_template: conversation.template,
            // The last miss stays until another replaces it, as long as the log reaches it.
            cache_miss: conversation
                .cache_miss
                .or(self.saved.as_ref().and_then(|m| m.cache_miss.as_ref()))
                .filter(|miss| miss.position <= tokens.len())
                .cloned(),
            interrupted: self.interrupted,
            unnamed: self.saved.as_ref().map_or(self.unnamed, |m| m.unnamed),
            prompt_tokens: self.prompt_tokens,
            pinned: self.saved.as_ref().is_some_and(|m| m.pinned),
            snapshot: (kv_len > 0).then(|| KvSnapshot {
                kv_len,
                pages: ids.clone(),
                swa_pages,
                prefix_swa_pages,
                tail,
                batch_starts: seq.batch_starts().for_replay(kv_len),
            }),
        };
        let manifest_started = Instant::now();
        self.catalog.write_manifest(&manifest)?;
        report.phases.manifest_ms = ms(manifest_started);
        drop(_store_lock);
        let cleanup_started = Instant::now();
        // Objects the previous manifest used and this one does not (the old tail, window
        // rows that slid out) go now, unless another session still uses them.
        if let Some(old) = &self.saved {
            let keep: HashSet<ObjectId> = manifest.referenced_objects().collect();
            let stale: Vec<ObjectId> = old
                .referenced_objects()
                .filter(|id| !keep.contains(id))
                .collect();
            if !stale.is_empty() {
                // The save is committed: a failed clean-up must not report it as failed
                // (a retry would add the turn twice). The next gc collects what is left.
                if let Err(e) = self.catalog.collect_unreferenced(&stale) {
                    tracing::warn!(
                        "session '{}' is saved, but deleting its unused pages failed ({e}); \
                         `kvrun gc` retries",
                        self.name
                    );
                }
                for id in &stale {
                    self.present.remove(id);
                }
            }
        }
        report.phases.cleanup_ms = ms(cleanup_started);
        self.saved = Some(manifest);
        report.save_ms = ms(started);
        report
            .warnings
            .extend(self.take_precision_warning(tokens.len()));
        Ok(report)
    }

    /// Emits the objects a save writes: new full-attention pages, the sliding-window rows
    /// of every stored page the ring or the capture still holds, and the tail record.
    /// Returns the snapshot's window pages, its earlier pages' window rows, whether the
    /// window is complete, and the tail's id.
    #[allow(clippy::type_complexity)]
    fn emit_objects(
        &mut self,
        emit: &mut dyn FnMut(PutJob),
        ids: &[ObjectId],
        first_missing: usize,
        captured: Option<&capture::CapturedRows>,
        kv_len: usize,
        tokens: &[crate::engine::TokenId],
    ) -> Result<(
        Vec<(usize, ObjectId)>,
        Vec<(usize, ObjectId)>,
        bool,
        Option<ObjectId>,
    )> {
        let store = self.catalog.store();
        let p = self.page_tokens;
        let full = kv_len / p;
        let boundary = full * p;
        let mut job = |this: &mut Self, id: ObjectId, kind, payload, keep| {
            emit(PutJob {
                id,
                kind,
                payload,
                // A payload flip leaves a valid-looking header that `put` would keep.
                replace: this.damaged.remove(&id),
                keep,
            })
        };
        // New full-attention pages.
        let base_rows = captured.and_then(|c| c.base.as_ref());
        for (k, id) in ids.iter().enumerate().skip(first_missing) {
            if !self.damaged.contains(id) && (self.present.contains(id) || store.contains(id)?) {
                self.present.insert(*id);
                continue;
            }
            let rows = base_rows
                .and_then(|b| b.slice(k * p..(k + 1) * p))
                .ok_or_else(|| LiveError::internal("page rows missing from the capture"))?;
            job(self, *id, ObjectKind::Page, rows, self.warm.is_some());
        }
        // Sliding-window rows: of the pages a restore point needs (the window before the
        // last page boundary), and of the earlier pages, for another conversation that
        // shares a prefix of this log. Written while the ring (or the capture) has them,
        // kept once stored; only a gap in the window makes the snapshot incomplete.
        let swa_first = if self.n_swa > 0 {
            boundary.saturating_sub(self.n_swa as usize) / p
        } else {
            full
        };
        let swa_capture = captured.and_then(|c| c.swa.as_ref());
        let mut swa_pages = Vec::new();
        let mut prefix_swa_pages = Vec::new();
        let mut swa_complete = true;
        let swa_start = if self.n_swa > 0 { 0 } else { full };
        for (k, page_id) in ids.iter().enumerate().take(full).skip(swa_start) {
            let id = PageKey::swa_id(page_id);
            let stored = if !self.damaged.contains(&id)
                && (self.present.contains(&id) || store.contains(&id)?)
            {
                self.present.insert(id);
                true
            } else if let Some(rows) = self
                .swa_ring
                .remove(&k)
                .or_else(|| swa_capture.and_then(|s| s.slice(k * p..(k + 1) * p)))
            {
                job(self, id, ObjectKind::Page, rows, false);
                true
            } else {
                false
            };
            let in_window = k >= swa_first;
            match (stored, in_window) {
                (true, true) => swa_pages.push((k, id)),
                (true, false) => prefix_swa_pages.push((k, id)),
                (false, true) => swa_complete = false,
                (false, false) => {}
            }
        }
        let keep = self.swa_window_pages();
        while self.swa_ring.len() > keep {
            self.swa_ring.pop_first();
        }
        // The tail: rows after the last full page.
        let mut tail = None;
        if kv_len > boundary {
            let c = captured.ok_or_else(|| LiveError::internal("no capture for the tail"))?;
            let base = c
                .base
                .as_ref()
                .and_then(|b| b.slice(boundary..kv_len))
                .ok_or_else(|| LiveError::internal("tail rows missing"))?;
            let swa = match &c.swa {
                Some(s) => s
                    .slice(boundary..kv_len)
                    .ok_or_else(|| LiveError::internal("tail window rows missing"))?,
                None => Vec::new(),
            };
            let record = TailRecord {
                n_cells: (kv_len - boundary) as u32,
                base,
                swa,
            }
            .encode();
            let id = self.key.tail_id(ids, &tokens[boundary..kv_len]);
            job(self, id, ObjectKind::Tail, record, false);
            tail = Some(id);
        }
        Ok((swa_pages, prefix_swa_pages, swa_complete, tail))
    }
}
