//! A session in use: the link between a named, persisted session and a live context.
//!
//! - While the KV cache grows, each filled page's sliding-window rows are captured (iSWA
//!   models only), because those rows leave the window soon after and cannot be recomputed.
//! - [`LiveSession::save`] writes only what the store lacks: pages that filled since the
//!   last save, the small tail record, and the manifest (atomically, last). The context's
//!   thread only captures and slices; the disk work runs on the session's writer thread
//!   ([`writer`]), and [`LiveSession::save_in_background`] returns without waiting for it.
//! - [`LiveSession::restore`] rebuilds the cache from pages without prefill, and
//!   [`LiveSession::reuse_prefix`] does the same for any stored page chain a new token log
//!   starts with.
//!
//! This file holds the session and its page capture; `save`, `restore` and `reuse` hold
//! the three operations.

use std::collections::BTreeMap;
use std::ops::{ControlFlow, Range};

mod branch;
mod buffers;
mod checkpoints;
mod chunk_read;
mod chunk_stream;
mod commit;
mod early;
mod in_place;
mod ledger;
mod page_read;
mod repair;
mod report;
mod restore;
mod restore_choice;
mod restore_plan;
mod restore_recurrent;
mod reuse;
mod save;
mod state;
mod tail_read;
mod writer;

/// The most memory a process keeps in restore buffers between restores.
pub use buffers::KEPT_BYTES as KEPT_RESTORE_BUFFER_BYTES;

pub use self::commit::{CommitNotice, CommitOutcome, SaveOrigin};
pub use self::report::{RestoreReport, SavePhases, SaveReport};
pub use super::capture::RestorePhases;
use super::capture::{self};
use super::catalog::SessionCatalog;
use super::error::{Incompatibility, SessionError};
use super::identity::page_key;
use super::kv_error::{LiveError, LiveResult};
use super::manifest::{KvIdentity, ModelIdentity, SessionManifest};
use super::CacheMiss;
use crate::kv::{KvLayout, MemoryKind, PageKey};
use crate::llama::{ChatMessage, Context, LlamaError, TokenId};
use crate::sequence::SyncObserver;
use crate::settings::{LlamaSettings, SamplingSettings};
use crate::store::{ObjectId, ObjectKind, SessionLock};
use crate::template::TemplateIdentity;
pub use restore_choice::{record_prefill, RestoreDecision, RestoreRates};

/// The most sliding-window rows held in RAM between saves (they are written at the next
/// save). A 256-token page of the default model's window rows is about 4 MB.
const SWA_RING_MAX_BYTES: usize = 512 << 20;

/// The conversation state the manifest records besides tokens.
#[derive(Clone)]
pub struct ConversationState<'a> {
    pub messages: &'a [ChatMessage],
    pub rendered_len: usize,
    pub raw: bool,
    /// The chat template that rendered the turns (`None` for raw text).
    pub template: Option<TemplateIdentity>,
    /// Where the last turn's prompt stopped extending the log, if it did.
    pub cache_miss: Option<&'a CacheMiss>,
}

pub struct LiveSession<'c> {
    pub name: String,
    catalog: &'c SessionCatalog,
    /// The manifest on disk, as far as this session has heard (None for a session never
    /// saved): a commit still on the writer is not in it yet.
    saved: Option<SessionManifest>,
    /// The manifest of the last save planned (its commit may still be queued, or have
    /// failed); the next save carries its fields over.
    latest: Option<SessionManifest>,
    model: ModelIdentity,
    kv: KvIdentity,
    llama: LlamaSettings,
    sampling: SamplingSettings,
    key: PageKey,
    /// What the model's memory is made of: paged ([`MemoryKind::pages`], with its sliding
    /// window), or kept as one whole-state object per save (`live/state.rs`).
    memory: MemoryKind,
    page_tokens: usize,
    layout: Option<KvLayout>,
    /// What this session knows of its objects in the store.
    ledger: ledger::Ledger,
    /// Sliding-window rows of recently filled pages, by page index.
    swa_ring: BTreeMap<usize, Vec<u8>>,
    /// Capture problems since the last save (reported once, not per page).
    capture_error: Option<String>,
    /// Where this session lives in the context.
    slot: capture::Slot,
    /// RAM cache of pages in front of the store (the warm tier), if any.
    warm: Option<std::sync::Arc<crate::tiers::WarmPool>>,
    /// Every saved log of this model by content, shared by the process's sessions of it
    /// (`live/branch.rs`); without it, reuse stops at whole pages.
    saved_logs: Option<std::sync::Arc<crate::session::saved_logs::SavedLogs>>,
    /// The last reply was cut short; recorded in the next save's manifest.
    interrupted: bool,
    /// A new session under a generated name (recorded in its first manifest).
    unnamed: bool,
    /// See [`SessionManifest::prompt_tokens`].
    prompt_tokens: usize,
    /// The KV type's precision warning was given (once per open session is enough).
    precision_warned: bool,
    /// A sliding-window cache that lost an object is recomputed whole until its next save
    /// repairs it: reusing part of its pages would change the answer
    /// ([`LiveSession::recompute_whole`]).
    recompute_whole: bool,
    /// Saves planned (numbers their commits).
    commits_planned: u64,
    /// Commit outcomes learnt and not yet taken by the caller.
    outcomes: Vec<CommitOutcome>,
    /// Stores filled pages and commits saves in the background (started with the first).
    /// Declared before the lock: dropping it waits for the last manifest, and only then is
    /// the session's lock released.
    writer: Option<writer::SessionWriter>,
    _lock: SessionLock,
}

impl<'c> LiveSession<'c> {
    /// The attention cache's sliding window (0 for none).
    fn n_swa(&self) -> u32 {
        self.memory.n_swa()
    }

    /// Opens (or starts) session `name`; the caller already holds its lock.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        catalog: &'c SessionCatalog,
        name: &str,
        lock: SessionLock,
        saved: Option<SessionManifest>,
        model: ModelIdentity,
        kv: KvIdentity,
        llama: LlamaSettings,
        sampling: SamplingSettings,
        memory: MemoryKind,
    ) -> Self {
        let key = page_key(&model, &kv);
        let page_tokens = kv.page_tokens as usize;
        Self {
            name: name.to_string(),
            catalog,
            _lock: lock,
            model,
            kv,
            llama,
            sampling,
            key,
            memory,
            page_tokens,
            layout: None,
            ledger: ledger::Ledger::default(),
            swa_ring: BTreeMap::new(),
            capture_error: None,
            slot: capture::Slot::default(),
            warm: None,
            saved_logs: None,
            interrupted: saved.as_ref().is_some_and(|m| m.interrupted),
            unnamed: false,
            prompt_tokens: saved.as_ref().map_or(0, |m| m.prompt_tokens),
            precision_warned: false,
            recompute_whole: false,
            commits_planned: 0,
            outcomes: Vec::new(),
            writer: None,
            latest: saved.clone(),
            saved,
        }
    }

    /// The KV type's precision warning for a session of `tokens` tokens, the first time it
    /// applies to this open session.
    fn take_precision_warning(&mut self, tokens: usize) -> Option<String> {
        if self.precision_warned {
            return None;
        }
        let warning = self.kv.kv_type.precision_warning(tokens)?;
        self.precision_warned = true;
        Some(format!("session '{}' holds {warning}", self.name))
    }

    /// Places the session in another sequence of a shared context.
    pub fn set_slot(&mut self, slot: capture::Slot) {
        self.slot = slot;
    }

    pub fn slot(&self) -> capture::Slot {
        self.slot
    }

    /// Records whether the last reply was cut short (saved with the next manifest).
    pub fn set_interrupted(&mut self, interrupted: bool) {
        self.interrupted = interrupted;
    }

    /// Marks a new session as one no client named (see [`SessionManifest::unnamed`]).
    pub fn set_unnamed(&mut self, unnamed: bool) {
        self.unnamed = unnamed;
    }

    /// Records how much of the log the last request's prompt covered (saved with the next
    /// manifest).
    pub fn set_prompt_tokens(&mut self, tokens: usize) {
        self.prompt_tokens = tokens;
    }

    /// Pins or unpins a saved session and rewrites its manifest (atomically), after any
    /// commit still queued (which would otherwise land over it).
    pub fn set_pinned(&mut self, pinned: bool) -> LiveResult<()> {
        self.wait_for_commits();
        let Some(m) = &mut self.saved else {
            return Err(LiveError::NotSaved(self.name.clone()));
        };
        if m.pinned != pinned {
            m.pinned = pinned;
            let _store = self.catalog.store().lock_shared()?;
            self.catalog.write_manifest(m)?;
        }
        if let Some(latest) = &mut self.latest {
            latest.pinned = pinned;
        }
        Ok(())
    }

    /// Reads and writes pages through a RAM pool (the warm tier).
    pub fn set_warm_pool(&mut self, warm: std::sync::Arc<crate::tiers::WarmPool>) {
        self.warm = Some(warm);
    }

    pub fn set_saved_logs(&mut self, logs: std::sync::Arc<crate::session::saved_logs::SavedLogs>) {
        self.saved_logs = Some(logs);
    }

    /// The KV layout, once a save or restore has seen it.
    pub fn layout(&self) -> Option<&KvLayout> {
        self.layout.as_ref()
    }

    /// The manifest on disk as far as this session has heard (see
    /// [`Self::wait_for_commits`] to hear the rest).
    pub fn saved(&self) -> Option<&SessionManifest> {
        self.saved.as_ref()
    }

    /// The manifest of the last save planned, landed or not: the session's transcript and
    /// template as its client last saved them.
    pub fn latest(&self) -> Option<&SessionManifest> {
        self.latest.as_ref().or(self.saved.as_ref())
    }

    /// Checks that a saved snapshot can load into this context, naming any mismatch.
    pub fn check_compatible(&self, ctx: &Context<'_>) -> Result<(), SessionError> {
        let Some(m) = &self.saved else { return Ok(()) };
        let refuse = |why| {
            Err(SessionError::Incompatible {
                name: self.name.clone(),
                why,
            })
        };
        if m.model.fingerprint != self.model.fingerprint {
            return refuse(Incompatibility::Model {
                saved: m.model.name.clone(),
                saved_path: m.model.path.clone(),
                given: self.model.name.clone(),
                given_path: self.model.path.clone(),
            });
        }
        let (saved, now) = (&m.kv, &self.kv);
        if saved.kv_type != now.kv_type {
            return refuse(Incompatibility::KvType {
                saved: saved.kv_type.as_str(),
                now: now.kv_type.as_str(),
            });
        }
        if saved.flash_attn != now.flash_attn {
            return refuse(Incompatibility::FlashAttn {
                saved: saved.flash_attn.as_str(),
                now: now.flash_attn.as_str(),
            });
        }
        if saved.page_tokens != now.page_tokens {
            return refuse(Incompatibility::PageTokens {
                saved: saved.page_tokens,
                now: now.page_tokens,
            });
        }
        let needed = m.tokens.len() + 1;
        if (ctx.info().n_ctx as usize) < needed {
            return refuse(Incompatibility::ContextTooSmall {
                tokens: m.tokens.len(),
                n_ctx: ctx.info().n_ctx,
                needed: needed.next_multiple_of(256),
            });
        }
        Ok(())
    }

    /// Captures a filled page's rows (its sliding-window rows while they are still in the
    /// window) and hands them to the background writer, so the next save finds them stored.
    fn capture_filled_page(
        &mut self,
        ctx: &mut Context<'_>,
        positions: Range<usize>,
        tokens: &[TokenId],
    ) {
        // (A hybrid's capture copies its whole recurrent state too: its pages wait for the
        // save, which captures them all at once.)
        if self.capture_error.is_some() || !self.memory.pages() || self.memory.recurrent() {
            return;
        }
        let index = positions.start / self.page_tokens;
        let rows = match capture::capture(
            ctx,
            self.slot,
            (self.memory, tokens),
            positions.clone(),
            false,
        ) {
            Ok(rows) => rows,
            Err(e) => {
                if self.n_swa() > 0 {
                    self.capture_error = Some(format!("{e:#}"));
                }
                return;
            }
        };
        let mut ids = Vec::new();
        self.key.extend_ids(tokens, self.page_tokens, &mut ids);
        let page_id = ids.get(index).copied();
        if self.n_swa() > 0 {
            match rows.swa.as_ref().and_then(|s| s.slice(positions.clone())) {
                Some(r) => {
                    if let Some(id) = page_id {
                        self.store_early(PageKey::swa_id(&id), r.clone(), false);
                    }
                    self.swa_ring.insert(index, r);
                }
                None => {
                    self.capture_error = Some(format!(
                        "page {index} left the sliding window before it was captured"
                    ))
                }
            }
        }
        let base = rows.base.as_ref().and_then(|b| b.slice(positions));
        if let (Some(id), Some(rows)) = (page_id, base) {
            self.store_early(id, rows, self.warm.is_some());
        }
        // Rows wait here until the next save writes them (every page's window rows are
        // stored, for prefix reuse), within a memory bound; past it the oldest go, and
        // their boundaries can then only be restored by this session at its end.
        let keep = self.swa_window_pages();
        while self.swa_ring.len() > keep
            && self.swa_ring.values().map(Vec::len).sum::<usize>() > SWA_RING_MAX_BYTES
        {
            self.swa_ring.pop_first();
        }
    }

    /// Queues a page object for the background writer, unless the store has it (or the
    /// save must repair it). Without a writer thread the next save writes it.
    fn store_early(&mut self, id: ObjectId, payload: Vec<u8>, keep: bool) {
        if self.ledger.present.contains(&id)
            || self.ledger.queued.contains(&id)
            || self.ledger.damaged.contains(&id)
        {
            return;
        }
        let keep = self.warm.clone().filter(|_| keep);
        let Some(writer) = self.ensure_writer() else {
            return;
        };
        let page = writer::PageJob {
            id,
            kind: ObjectKind::Page,
            payload,
            keep,
        };
        if writer.submit_page(page).is_ok() {
            self.ledger.queued.insert(id);
        }
    }

    /// The session's writer thread, started on first use; none if it cannot start (saves
    /// then do all their work on the caller's thread).
    fn ensure_writer(&mut self) -> Option<&writer::SessionWriter> {
        if self.writer.is_none() {
            match writer::SessionWriter::spawn(self.catalog.clone()) {
                Ok(w) => self.writer = Some(w),
                Err(e) => {
                    tracing::debug!("no background writer ({e}); saves write on this thread");
                    return None;
                }
            }
        }
        self.writer.as_ref()
    }

    /// Pages of window rows a restore at the end of the log can need.
    fn swa_window_pages(&self) -> usize {
        (self.n_swa() as usize).div_ceil(self.page_tokens) + 2
    }
}

/// Feeds prefill progress to an inner observer and filled pages to the session.
pub struct SessionObserver<'a, 'c> {
    pub session: &'a mut LiveSession<'c>,
    pub inner: &'a mut dyn SyncObserver,
}

impl SyncObserver for SessionObserver<'_, '_> {
    fn progress(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        self.inner.progress(done, total)
    }

    fn decoded(&mut self, ctx: &Context<'_>, seq: i32, kv_len: usize) {
        self.inner.decoded(ctx, seq, kv_len);
    }

    fn page_filled(
        &mut self,
        ctx: &mut Context<'_>,
        positions: Range<usize>,
        tokens: &[TokenId],
    ) -> Result<(), LlamaError> {
        self.session.capture_filled_page(ctx, positions, tokens);
        Ok(())
    }
}
