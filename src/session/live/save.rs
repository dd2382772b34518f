//! Saving a session incrementally: only the pages the store lacks, the tail record and the
//! sliding-window rows captured since the last save, then the manifest, atomically, last.
//!
//! A save has two halves. Planning needs the context and runs on its thread: decide what
//! the store lacks, capture those rows, slice them into objects and build the manifest.
//! The commit ([`super::commit`]) needs only the store: it runs on the session's writer
//! thread, so the engine decodes on while it writes and fsyncs. [`LiveSession::save`]
//! waits for it; [`LiveSession::save_in_background`] does not.

use std::time::Instant;

use super::commit::{
    missing_warning, CommitJob, CommitNotice, CommitOutcome, SaveOrigin, StoreFacts,
};
use super::repair::MAX_REPAIRS;
use super::{ConversationState, LiveSession, SaveReport};
use crate::kv::{KvLayout, PageKey, TailRecord};
use crate::llama::Context;
use crate::sequence::Sequence;
use crate::session::capture;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::{KvSnapshot, SessionManifest, StateCheckpoint, MANIFEST_FORMAT};
use crate::store::{ObjectId, ObjectKind, Payload, PutJob};

/// The KV half of a save's plan.
struct KvPlan {
    /// Tokens the snapshot's pages and tail cover (0: the log alone).
    kv_len: usize,
    ids: Vec<ObjectId>,
    objects: Vec<PutJob>,
    layout: Option<KvLayout>,
    swa_pages: Vec<(usize, ObjectId)>,
    prefix_swa_pages: Vec<(usize, ObjectId)>,
    tail: Option<ObjectId>,
    state: Option<StateCheckpoint>,
    checkpoints: Vec<StateCheckpoint>,
}

impl KvPlan {
    /// A save of the token log alone.
    fn log_only(layout: Option<KvLayout>) -> Self {
        Self {
            kv_len: 0,
            ids: Vec::new(),
            objects: Vec::new(),
            layout,
            swa_pages: Vec::new(),
            prefix_swa_pages: Vec::new(),
            tail: None,
            state: None,
            checkpoints: Vec::new(),
        }
    }
}

impl LiveSession<'_> {
    /// Writes what the store lacks (new pages, the tail), then the manifest, and returns
    /// once it is durable. O(new tokens).
    pub fn save(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
    ) -> Result<SaveReport> {
        let mut report = self.save_and_wait(ctx, seq, conversation.clone())?;
        // Objects counted as stored had gone (a gc that does not honour leases took pages
        // written early, or a write failed): the manifest with the log landed anyway and
        // the commit took them off the books; the context still has their rows, so a
        // save more writes them.
        for _ in 0..MAX_REPAIRS {
            if report.missing_objects == 0 {
                break;
            }
            let first = report;
            report = self.save_and_wait(ctx, seq, conversation.clone())?;
            let gone = missing_warning(&self.name, first.missing_objects);
            let earlier = first.warnings.into_iter().filter(|w| *w != gone);
            report.warnings = earlier.chain(report.warnings).collect();
            report.objects_written += first.objects_written;
            report.bytes_written += first.bytes_written;
            report.early_objects += first.early_objects;
            report.early_bytes += first.early_bytes;
        }
        Ok(report)
    }

    fn save_and_wait(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
    ) -> Result<SaveReport> {
        let job = self.plan_save(ctx, seq, conversation, SaveOrigin::Requested)?;
        let number = job.number;
        self.queue_commit(job);
        self.wait_for_commits();
        let at = self.outcomes.iter().rposition(|o| o.number == number);
        match at.map(|i| self.outcomes.remove(i)) {
            Some(outcome) => outcome.result,
            None => Err(LiveError::internal("the save's outcome never came back")),
        }
    }

    /// Plans the save on this (the context's) thread and queues its commit on the
    /// session's writer; returns as soon as it is queued. Its outcome comes back through
    /// [`Self::take_outcomes`], and to `notice` on the writer thread. Returns the time
    /// this thread spent on it.
    pub fn save_in_background(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
        origin: SaveOrigin,
        notice: Option<CommitNotice>,
    ) -> Result<f64> {
        let mut job = match self.plan_save(ctx, seq, conversation, origin) {
            Ok(job) => job,
            Err(e) => {
                let failed = Err(e);
                if let Some(notice) = notice {
                    notice(&failed);
                }
                return failed.map(|_| 0.0);
            }
        };
        job.notice = notice;
        let plan_ms = job.report.phases.plan_ms;
        self.queue_commit(job);
        Ok(plan_ms)
    }

    /// Saves whose commit is queued and has not come back.
    pub fn commits_in_flight(&self) -> usize {
        self.writer.as_ref().map_or(0, |w| w.commits_in_flight())
    }

    /// Waits for every queued page and commit, then learns their outcomes.
    pub fn wait_for_commits(&mut self) {
        if let Some(writer) = &self.writer {
            writer.wait();
        }
        self.settle();
    }

    /// The outcomes of the commits that came back since the last call, oldest first (the
    /// engine routes each to its client or the log).
    pub fn take_outcomes(&mut self) -> Vec<CommitOutcome> {
        self.settle();
        std::mem::take(&mut self.outcomes)
    }

    /// After a gc: objects queued to the writer and not yet named by a manifest are kept
    /// by the writer's lease, but a lease that could not be written protects nothing, so
    /// the next save checks them again.
    pub fn forget_unnamed_writes(&mut self) {
        self.ledger.queued.clear();
    }

    /// Learns what the writer did: a landed commit's manifest becomes the saved one, and
    /// what failed is no longer counted as stored (the next save writes it).
    pub(super) fn settle(&mut self) {
        let Some(writer) = &self.writer else { return };
        let heard = writer.take_outcomes();
        for id in heard.failed_pages {
            self.ledger.queued.remove(&id);
        }
        for outcome in heard.commits {
            let (facts, outcome) = outcome.into_parts();
            self.learn(facts);
            self.outcomes.push(outcome);
        }
    }

    fn learn(&mut self, facts: StoreFacts) {
        self.ledger.learn(&facts);
        if facts.committed {
            self.saved = facts.manifest;
        }
    }

    /// Hands a commit to the writer (started if need be), or runs it here without one.
    fn queue_commit(&mut self, job: Box<CommitJob>) {
        let job = match self.ensure_writer() {
            Some(writer) => match writer.submit_commit(job) {
                Ok(()) => return,
                Err(job) => job,
            },
            None => job,
        };
        // (Objects and manifest in one hold of the store lock: nothing to lease.)
        let outcome = job.run(self.catalog, self.saved.as_ref(), Default::default(), None);
        let (facts, outcome) = outcome.into_parts();
        self.learn(facts);
        self.outcomes.push(outcome);
    }

    /// The engine thread's half of a save: what the store lacks, captured and sliced, and
    /// the complete manifest.
    fn plan_save(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
        origin: SaveOrigin,
    ) -> Result<Box<CommitJob>> {
        let started = Instant::now();
        let ms = |at: Instant| at.elapsed().as_secs_f64() * 1e3;
        self.settle();
        // This save rewrites what was lost, from cells recomputed whole.
        self.recompute_whole = false;
        let mut report = SaveReport::default();
        let tokens = seq.tokens();
        let plan = match self.plan_kv(ctx, seq, &mut report) {
            Ok(kv) => kv,
            // The token log is the truth and the KV a cache: a log whose rows cannot be
            // read out is saved alone (a restore recomputes it), never left unsaved.
            Err(e) if e.store_error().is_none() => {
                let warning = format!(
                    "session '{}': its KV could not be saved ({e}); its token log was saved \
                     alone, and a restore will recompute it",
                    self.name
                );
                // Its caller shows it, as it does every warning of a save.
                report.warnings.push(warning);
                KvPlan::log_only(self.layout.clone())
            }
            Err(e) => return Err(e),
        };
        let kv_len = plan.kv_len;
        // Rows the snapshot does not hold are recomputed in the batches they first ran in.
        let replay = if self.memory.pages() && kv_len == seq.kv_len() {
            Default::default()
        } else {
            seq.batch_starts().for_replay(seq.kv_len())
        };

        // Carried over from the last manifest planned (its commit may still be queued).
        let last = self.latest.as_ref().or(self.saved.as_ref());
        let now = crate::clock::unix_now();
        let mut kv = self.kv.clone();
        kv.layout = plan.layout.as_ref().map(KvLayout::encode);
        let manifest = SessionManifest {
            format: MANIFEST_FORMAT,
            name: self.name.clone(),
            created_unix: last.map_or(now, |m| m.created_unix),
            updated_unix: now,
            model: self.model.clone(),
            kv,
            llama_build: crate::llama::llama_build_info(),
            llama: self.llama.clone(),
            sampling: self.sampling.clone(),
            tokens: tokens.to_vec(),
            messages: conversation.messages.to_vec(),
            rendered_len: conversation.rendered_len,
            raw: conversation.raw,
            chat_template: conversation.template,
            // The last miss stays until another replaces it, as long as the log reaches it.
            cache_miss: conversation
                .cache_miss
                .or(last.and_then(|m| m.cache_miss.as_ref()))
                .filter(|miss| miss.position <= tokens.len())
                .cloned(),
            interrupted: self.interrupted,
            unnamed: last.map_or(self.unnamed, |m| m.unnamed),
            prompt_tokens: self.prompt_tokens,
            pinned: last.is_some_and(|m| m.pinned),
            snapshot: (kv_len > 0).then(|| KvSnapshot {
                kv_len,
                pages: plan.ids,
                swa_pages: plan.swa_pages,
                prefix_swa_pages: plan.prefix_swa_pages,
                tail: plan.tail,
                batch_starts: seq.batch_starts().for_replay(kv_len),
            }),
            replay,
            state: plan.state,
            checkpoints: plan.checkpoints,
        };
        report
            .warnings
            .extend(self.take_precision_warning(tokens.len()));
        self.latest = Some(manifest.clone());
        self.commits_planned += 1;
        report.phases.plan_ms = ms(started);
        Ok(Box::new(CommitJob {
            number: self.commits_planned,
            origin,
            objects: plan.objects,
            manifest,
            previous: self.saved.clone(),
            warm: self.warm.clone(),
            report,
            started,
            notice: None,
        }))
    }

    /// What a save writes of the context's KV: the pages the store lacks, window rows, the
    /// tail, a recurrent state and its checkpoints, captured and sliced on this thread.
    fn plan_kv(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        report: &mut SaveReport,
    ) -> Result<KvPlan> {
        let p = self.page_tokens;
        let tokens = seq.tokens();
        // A memory kvrun does not page saves its log alone: a restore recomputes it.
        let kv_len = if self.memory.pages() { seq.kv_len() } else { 0 };
        let full = kv_len / p;
        let boundary = full * p;
        let mut ids = Vec::new();
        self.key.extend_ids(&tokens[..kv_len], p, &mut ids);
        // Pages queued to the writer count as stored: the commit follows them, and checks.
        let mut first_missing = full;
        for (i, id) in ids.iter().enumerate() {
            if self.ledger.damaged.contains(id) {
                first_missing = i;
                break;
            }
            if self.is_stored_or_queued(id)? {
                continue;
            }
            first_missing = i;
            break;
        }
        let capture_from = (first_missing * p).min(boundary);
        let mut captured = None;
        if kv_len > capture_from {
            let rows = capture::capture(
                ctx,
                self.slot,
                (self.memory, tokens),
                capture_from..kv_len,
                false,
            )?;
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
                n_swa: self.n_swa(),
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

        let slice_started = Instant::now();
        let mut objects = Vec::new();
        let (swa_pages, prefix_swa_pages, mut swa_complete, tail) = self.emit_objects(
            &mut |job| objects.push(job),
            &ids,
            first_missing,
            captured.as_ref(),
            kv_len,
            tokens,
        )?;
        let recurrent = captured.and_then(|c| c.recurrent);
        let snapshot_end = tail.as_ref().or(ids.last());
        let state = self.plan_state(ctx, seq, (snapshot_end, recurrent), &mut |job| {
            objects.push(job)
        })?;
        let checkpoints = self.plan_checkpoints(seq, &mut |job| objects.push(job))?;
        report.phases.slice_ms = slice_started.elapsed().as_secs_f64() * 1e3;
        for job in &objects {
            self.ledger.queued.insert(job.id);
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

        Ok(KvPlan {
            kv_len,
            ids,
            objects,
            layout,
            swa_pages,
            prefix_swa_pages,
            tail,
            state,
            checkpoints,
        })
    }

    /// Whether `id` is known stored, on its way there, or found in the store.
    pub(super) fn is_stored_or_queued(&mut self, id: &ObjectId) -> Result<bool> {
        if self.ledger.known(id) {
            return Ok(true);
        }
        if self.catalog.store().contains(id)? {
            self.ledger.present.insert(*id);
            return Ok(true);
        }
        Ok(false)
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
        tokens: &[crate::llama::TokenId],
    ) -> Result<(
        Vec<(usize, ObjectId)>,
        Vec<(usize, ObjectId)>,
        bool,
        Option<ObjectId>,
    )> {
        let p = self.page_tokens;
        let full = kv_len / p;
        let boundary = full * p;
        let mut job = |this: &mut Self, id: ObjectId, kind, payload, keep| {
            emit(PutJob {
                id,
                kind,
                payload,
                // A payload flip leaves a valid-looking header that `put` would keep.
                replace: this.ledger.damaged.remove(&id),
                keep,
            })
        };
        // New full-attention pages.
        let base_rows = captured.and_then(|c| c.base.as_ref());
        for (k, id) in ids.iter().enumerate().skip(first_missing) {
            if !self.ledger.damaged.contains(id) && self.is_stored_or_queued(id)? {
                continue;
            }
            let rows = base_rows
                .and_then(|b| b.gather(k * p..(k + 1) * p))
                .ok_or_else(|| LiveError::internal("page rows missing from the capture"))?;
            job(self, *id, ObjectKind::Page, rows, self.warm.is_some());
        }
        // Sliding-window rows: of the pages a restore point needs (the window before the
        // last page boundary), and of the earlier pages, for another conversation that
        // shares a prefix of this log. Written while the ring (or the capture) has them,
        // kept once stored; only a gap in the window makes the snapshot incomplete.
        let swa_first = if self.n_swa() > 0 {
            boundary.saturating_sub(self.n_swa() as usize) / p
        } else {
            full
        };
        let swa_capture = captured.and_then(|c| c.swa.as_ref());
        let mut swa_pages = Vec::new();
        let mut prefix_swa_pages = Vec::new();
        let mut swa_complete = true;
        let swa_start = if self.n_swa() > 0 { 0 } else { full };
        for (k, page_id) in ids.iter().enumerate().take(full).skip(swa_start) {
            let id = PageKey::swa_id(page_id);
            // Rows taken from the ring stay there until it is trimmed: if the commit
            // fails, the next save can still write them.
            let stored = if !self.ledger.damaged.contains(&id) && self.is_stored_or_queued(&id)? {
                true
            } else if let Some(rows) = self
                .swa_ring
                .get(&k)
                .cloned()
                .map(Payload::Owned)
                .or_else(|| swa_capture.and_then(|s| s.gather(k * p..(k + 1) * p)))
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
            let record = TailRecord::encode((kv_len - boundary) as u32, &base, &swa);
            let id = self.key.tail_id(ids, &tokens[boundary..kv_len]);
            job(self, id, ObjectKind::Tail, Payload::Owned(record), false);
            tail = Some(id);
        }
        Ok((swa_pages, prefix_swa_pages, swa_complete, tail))
    }
}
