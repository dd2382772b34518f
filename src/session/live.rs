//! A session in use: the link between a named, persisted session and a live context.
//!
//! - While the KV cache grows, each filled page's sliding-window rows are captured (iSWA
//!   models only), because those rows leave the window soon after and cannot be recomputed.
//! - [`LiveSession::save`] writes only what the store lacks: pages that filled since the
//!   last save, the small tail record, and the manifest (atomically, last).
//! - [`LiveSession::restore`] rebuilds the cache from pages without prefill, and
//!   [`LiveSession::reuse_prefix`] does the same for any stored page chain a new token log
//!   starts with.

use std::collections::{BTreeMap, HashSet};
use std::ops::{ControlFlow, Range};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};

mod reuse;

use super::capture::{self, RestoreSection};
use super::catalog::SessionCatalog;
use super::identity::{bind_snapshot, page_key};
use super::manifest::{KvIdentity, KvSnapshot, ModelIdentity, SessionManifest, MANIFEST_FORMAT};
use crate::engine::{ChatMessage, Context, EngineError};
use crate::kv::layout::{BASE, SWA};
use crate::kv::{KvLayout, PageKey, TailRecord};
use crate::sequence::{Sequence, SyncObserver};
use crate::settings::{EngineSettings, SamplingSettings};
use crate::store::{ObjectId, ObjectKind, SessionLock};

/// The most sliding-window rows held in RAM between saves (they are written at the next
/// save). A 256-token page of the default model's window rows is about 4 MB.
const SWA_RING_MAX_BYTES: usize = 512 << 20;

/// What a restore did.
#[derive(Debug, Clone, Default)]
pub struct RestoreReport {
    /// Tokens whose KV came back from pages.
    pub restored_tokens: usize,
    /// Of those, tokens taken from pages another session stored (prefix reuse).
    pub reused_tokens: usize,
    pub restore_ms: f64,
    /// Problems that made kvrun fall back to prefilling part of the log.
    pub warnings: Vec<String>,
}

/// What a save did.
#[derive(Debug, Clone, Default)]
pub struct SaveReport {
    pub objects_written: usize,
    pub bytes_written: u64,
    pub save_ms: f64,
}

/// The conversation state the manifest records besides tokens.
pub struct ConversationState<'a> {
    pub messages: &'a [ChatMessage],
    pub rendered_len: usize,
    pub raw: bool,
}

pub struct LiveSession<'c> {
    pub name: String,
    catalog: &'c SessionCatalog,
    _lock: SessionLock,
    /// The manifest as last saved (None for a session never saved).
    saved: Option<SessionManifest>,
    model: ModelIdentity,
    kv: KvIdentity,
    engine: EngineSettings,
    sampling: SamplingSettings,
    key: PageKey,
    n_swa: u32,
    page_tokens: usize,
    layout: Option<KvLayout>,
    /// Objects known to be in the store (saves skip them without a syscall).
    present: HashSet<ObjectId>,
    /// Objects a read found damaged: the next save rewrites them from the live context
    /// (their header may look fine, so `put` alone would keep them).
    damaged: HashSet<ObjectId>,
    /// Sliding-window rows of recently filled pages, by page index.
    swa_ring: BTreeMap<usize, Vec<u8>>,
    /// Capture problems since the last save (reported once, not per page).
    capture_error: Option<String>,
    /// Where this session lives in the context.
    slot: capture::Slot,
    /// RAM cache of pages in front of the store (the warm tier), if any.
    warm: Option<std::sync::Arc<crate::tiers::WarmPool>>,
    /// The last reply was cut short; recorded in the next save's manifest.
    interrupted: bool,
    /// A new session under a generated name (recorded in its first manifest).
    unnamed: bool,
    /// See [`SessionManifest::prompt_tokens`].
    prompt_tokens: usize,
}

impl<'c> LiveSession<'c> {
    /// Opens (or starts) session `name`; the caller already holds its lock.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        catalog: &'c SessionCatalog,
        name: &str,
        lock: SessionLock,
        saved: Option<SessionManifest>,
        model: ModelIdentity,
        kv: KvIdentity,
        engine: EngineSettings,
        sampling: SamplingSettings,
        n_swa: u32,
    ) -> Self {
        let key = page_key(&model, &kv);
        let page_tokens = kv.page_tokens as usize;
        Self {
            name: name.to_string(),
            catalog,
            _lock: lock,
            model,
            kv,
            engine,
            sampling,
            key,
            n_swa,
            page_tokens,
            layout: None,
            present: HashSet::new(),
            damaged: HashSet::new(),
            swa_ring: BTreeMap::new(),
            capture_error: None,
            slot: capture::Slot::default(),
            warm: None,
            interrupted: saved.as_ref().is_some_and(|m| m.interrupted),
            unnamed: false,
            prompt_tokens: saved.as_ref().map_or(0, |m| m.prompt_tokens),
            saved,
        }
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

    /// Pins or unpins a saved session and rewrites its manifest (atomically).
    pub fn set_pinned(&mut self, pinned: bool) -> Result<()> {
        let Some(m) = &mut self.saved else {
            bail!("session '{}' is not saved yet", self.name);
        };
        if m.pinned != pinned {
            m.pinned = pinned;
            let _store = self.catalog.store().lock_shared()?;
            self.catalog.write_manifest(m)?;
        }
        Ok(())
    }

    /// Reads and writes pages through a RAM pool (the warm tier).
    pub fn set_warm_pool(&mut self, warm: std::sync::Arc<crate::tiers::WarmPool>) {
        self.warm = Some(warm);
    }

    /// The KV layout, once a save or restore has seen it.
    pub fn layout(&self) -> Option<&KvLayout> {
        self.layout.as_ref()
    }

    pub fn saved(&self) -> Option<&SessionManifest> {
        self.saved.as_ref()
    }

    /// Checks that a saved snapshot can load into this context, naming any mismatch.
    pub fn check_compatible(&self, ctx: &Context<'_>) -> Result<()> {
        let Some(m) = &self.saved else { return Ok(()) };
        if m.model.fingerprint != self.model.fingerprint {
            bail!(
                "session '{}' was saved with model {} ({}); you gave {} ({}): pass that model, \
                 or fork the session's log into a new one",
                self.name,
                m.model.name,
                m.model.path,
                self.model.name,
                self.model.path
            );
        }
        let (saved, now) = (&m.kv, &self.kv);
        if saved.kv_type != now.kv_type {
            bail!(
                "session '{}' stores its KV as {}; this context uses {} (pass --kv-type {})",
                self.name,
                saved.kv_type.as_str(),
                now.kv_type.as_str(),
                saved.kv_type.as_str()
            );
        }
        if saved.flash_attn != now.flash_attn {
            bail!(
                "session '{}' was saved with --flash-attn {}; this context uses {} (pass \
                 --flash-attn {})",
                self.name,
                saved.flash_attn.as_str(),
                now.flash_attn.as_str(),
                saved.flash_attn.as_str()
            );
        }
        if saved.page_tokens != now.page_tokens {
            bail!(
                "session '{}' uses {}-token pages; this context uses {}",
                self.name,
                saved.page_tokens,
                now.page_tokens
            );
        }
        let needed = m.tokens.len() + 1;
        if (ctx.info().n_ctx as usize) < needed {
            bail!(
                "session '{}' holds {} tokens but the context has room for {}; pass \
                 --ctx-size {} or more",
                self.name,
                m.tokens.len(),
                ctx.info().n_ctx,
                needed.next_multiple_of(256)
            );
        }
        Ok(())
    }

    /// Loads the saved snapshot into the (fresh) context. Damaged or missing pages are
    /// reported and the affected part of the log is left for prefill.
    pub fn restore(&mut self, ctx: &mut Context<'_>) -> Result<(Sequence, RestoreReport)> {
        let started = Instant::now();
        let mut report = RestoreReport::default();
        let Some(m) = self.saved.clone() else {
            return Ok((Sequence::new(), report));
        };
        self.check_compatible(ctx)?;
        if m.snapshot.is_none() {
            return Ok((
                Sequence::restored(m.tokens, 0).in_seq(self.slot.seq),
                report,
            ));
        };
        let stored = match m.kv.layout.as_deref().map(KvLayout::decode) {
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                report
                    .warnings
                    .push(format!("session '{}': {e}", self.name));
                return Ok((
                    Sequence::restored(m.tokens, 0).in_seq(self.slot.seq),
                    report,
                ));
            }
            None => {
                return Ok((
                    Sequence::restored(m.tokens, 0).in_seq(self.slot.seq),
                    report,
                ))
            }
        };
        // The stored layout is trusted only as far as its checksum and the checks above go:
        // llama.cpp validates every type and row size again, and a refusal falls back to
        // prefill. (No probe decode here: it would cost a forward pass per restore.)
        self.layout = Some(stored);
        let restored = self.load_snapshot(ctx, &m, &mut report)?;
        report.restored_tokens = restored;
        report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok((
            Sequence::restored(m.tokens, restored).in_seq(self.slot.seq),
            report,
        ))
    }

    /// Loads the snapshot as its token log names it: every id is recomputed from the log
    /// ([`bind_snapshot`]), and where the manifest's list disagrees the log wins (with a
    /// warning), so only pages that are the KV of these very tokens can be loaded.
    fn load_snapshot(
        &mut self,
        ctx: &mut Context<'_>,
        m: &SessionManifest,
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let bound = match bind_snapshot(m) {
            None => return Ok(0),
            Some(Ok(bound)) => bound,
            Some(Err(e)) => {
                report.warnings.push(format!(
                    "session '{}': {e}; recomputing it from the token log by prefill",
                    self.name
                ));
                return Ok(0);
            }
        };
        if let Some(first) = bound.mismatches.first() {
            report.warnings.push(format!(
                "session '{}': the manifest's KV ids do not match its token log ({first}{}); \
                 using only pages that match the log, the rest is recomputed",
                self.name,
                match bound.mismatches.len() {
                    1 => String::new(),
                    n => format!(", and {} more", n - 1),
                }
            ));
        }
        self.load_pages(ctx, &bound.snapshot, report)
    }

    /// Reads and verifies pages, picks the furthest restore point they support, assembles
    /// the blob and loads it. Returns the number of tokens now in the cache.
    fn load_pages(
        &mut self,
        ctx: &mut Context<'_>,
        snap: &KvSnapshot,
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let layout = self.layout.clone().context("internal: KV layout unknown")?;
        let p = self.page_tokens;
        let store = self.catalog.store();
        let warm = self.warm.clone();
        let damaged = std::cell::RefCell::new(Vec::new());
        let read_rows = |id: &ObjectId, expected: usize| {
            let read = read_rows(store, warm.as_deref(), id, expected);
            if read.is_err() {
                damaged.borrow_mut().push(*id);
            }
            read
        };
        let mut warn = |what: String| {
            report.warnings.push(what);
        };
        let name = self.name.clone();
        // Full-attention pages, up to the first damaged one.
        let read_started = Instant::now();
        let mut base: Vec<Vec<u8>> = Vec::with_capacity(snap.pages.len());
        for (i, id) in snap.pages.iter().enumerate() {
            match read_rows(id, p * layout.bytes_per_token(BASE)) {
                Ok(rows) => base.push(rows),
                Err(e) => {
                    warn(format!(
                        "session '{name}': page {i} ({id}) is unusable ({e}); recomputing from \
                         token {} by prefill",
                        i * p
                    ));
                    break;
                }
            }
        }
        let full = base.len();
        // The tail, only if every page before it is fine.
        let mut tail = None;
        if full == snap.pages.len() {
            if let Some(id) = snap.tail {
                let swa_per_cell = if layout.is_iswa() {
                    layout.bytes_per_token(SWA)
                } else {
                    0
                };
                let bytes = match &warm {
                    Some(pool) => pool.get_or_load(store, &id),
                    None => store.get(&id),
                };
                if bytes.is_err() {
                    damaged.borrow_mut().push(id);
                }
                match bytes.map_err(anyhow::Error::from).and_then(|b| {
                    Ok(TailRecord::decode(
                        &b,
                        layout.bytes_per_token(BASE),
                        swa_per_cell,
                    )?)
                }) {
                    Ok(t) if full * p + t.n_cells as usize == snap.kv_len => tail = Some(t),
                    Ok(_) => {
                        damaged.borrow_mut().push(id);
                        warn(format!(
                            "session '{name}': the tail record does not match the token log; \
                             recomputing it by prefill"
                        ))
                    }
                    Err(e) => warn(format!(
                        "session '{name}': the tail record ({id}) is unusable ({e}); \
                         recomputing it by prefill"
                    )),
                }
            }
        }
        // Sliding-window rows by page index (iSWA only).
        let mut swa_rows: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        if layout.is_iswa() {
            for (k, id) in &snap.swa_pages {
                match read_rows(id, p * layout.bytes_per_token(SWA)) {
                    Ok(rows) => {
                        swa_rows.insert(*k, rows);
                    }
                    Err(e) => warn(format!(
                        "session '{name}': sliding-window rows of page {k} ({id}) are unusable \
                         ({e})"
                    )),
                }
            }
        }
        for id in damaged.take() {
            // Missing or damaged alike: the next save writes it anew.
            self.present.remove(&id);
            self.damaged.insert(id);
        }
        // Candidate restore points, furthest first: the snapshot's end, then page
        // boundaries (a unified cache can stop at any; an iSWA cache needs its window).
        let mut candidates = Vec::new();
        if let Some(t) = &tail {
            candidates.push(full * p + t.n_cells as usize);
        }
        candidates.extend((1..=full).rev().map(|k| k * p));
        for end in candidates {
            let pages = (end / p).min(full);
            let tail_cells = end - pages * p;
            let mut sections = vec![RestoreSection {
                first_pos: 0,
                count: end,
                chunks: base[..pages].iter().map(Vec::as_slice).collect(),
            }];
            if tail_cells > 0 {
                if let Some(t) = &tail {
                    sections[0].chunks.push(&t.base);
                }
            }
            let swa_slices;
            if layout.is_iswa() {
                let start = end.saturating_sub(self.n_swa as usize);
                let mut pieces = Vec::new();
                let mut complete = true;
                for k in start / p..pages {
                    let lo = (k * p).max(start) - k * p;
                    match swa_rows.get(&k) {
                        Some(rows) if lo == 0 => pieces.push(rows.clone()),
                        Some(rows) => pieces.push(crate::kv::layout::slice_cells(
                            &layout.sections[SWA],
                            rows,
                            p,
                            lo..p,
                        )),
                        None => {
                            complete = false;
                            break;
                        }
                    }
                }
                if !complete {
                    continue;
                }
                if tail_cells > 0 {
                    if let Some(t) = &tail {
                        pieces.push(t.swa.clone());
                    }
                }
                swa_slices = pieces;
                sections.push(RestoreSection {
                    first_pos: start,
                    count: end - start,
                    chunks: swa_slices.iter().map(Vec::as_slice).collect(),
                });
            }
            let read_ms = read_started.elapsed().as_secs_f64() * 1e3;
            let load_started = Instant::now();
            let loaded = capture::restore_into(ctx, self.slot, &layout, &sections);
            tracing::debug!(
                "session '{name}': read and verified pages in {read_ms:.1} ms, assembled and \
                 loaded {end} tokens in {:.1} ms",
                load_started.elapsed().as_secs_f64() * 1e3
            );
            match loaded {
                Ok(()) => {
                    for id in snap.pages.iter().take(pages) {
                        self.present.insert(*id);
                    }
                    if end < snap.kv_len {
                        report.warnings.push(format!(
                            "session '{name}': restored {end} of {} tokens from pages; the rest \
                             is recomputed from the token log",
                            snap.kv_len
                        ));
                    }
                    return Ok(end);
                }
                Err(e) => {
                    report.warnings.push(format!(
                        "session '{name}': llama.cpp refused the restored KV ({e:#}); \
                         recomputing by prefill"
                    ));
                    return Ok(0);
                }
            }
        }
        if snap.kv_len > 0 {
            report.warnings.push(format!(
                "session '{name}': no usable restore point; recomputing all {} tokens by \
                 prefill",
                snap.kv_len
            ));
        }
        Ok(0)
    }

    /// Captures a filled page's sliding-window rows while they are still in the window.
    fn capture_filled_page(&mut self, ctx: &mut Context<'_>, positions: Range<usize>) {
        if self.n_swa == 0 || self.capture_error.is_some() {
            return;
        }
        let index = positions.start / self.page_tokens;
        match capture::capture(ctx, self.slot, self.n_swa, positions.clone(), true) {
            Ok(rows) => match rows.swa.and_then(|s| s.slice(positions)) {
                Some(r) => {
                    self.swa_ring.insert(index, r);
                }
                None => {
                    self.capture_error = Some(format!(
                        "page {index} left the sliding window before it was captured"
                    ))
                }
            },
            Err(e) => self.capture_error = Some(format!("{e:#}")),
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

    /// Pages of window rows a restore at the end of the log can need.
    fn swa_window_pages(&self) -> usize {
        (self.n_swa as usize).div_ceil(self.page_tokens) + 2
    }

    /// Puts an object, replacing it when a read found it damaged (a payload flip leaves a
    /// valid-looking header that `put` would keep).
    fn write_object(
        &mut self,
        id: &ObjectId,
        kind: ObjectKind,
        payload: &[u8],
    ) -> Result<crate::store::PutOutcome> {
        let store = self.catalog.store();
        let put = if self.damaged.remove(id) {
            store.replace(id, kind, payload)?
        } else {
            store.put(id, kind, payload)?
        };
        Ok(put)
    }

    /// Writes what the store lacks (new pages, the tail), then the manifest. O(new tokens).
    pub fn save(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &Sequence,
        conversation: ConversationState<'_>,
    ) -> Result<SaveReport> {
        let started = Instant::now();
        let mut report = SaveReport::default();
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
        let swa_first = if self.n_swa > 0 {
            boundary.saturating_sub(self.n_swa as usize) / p
        } else {
            full
        };
        let capture_from = (first_missing * p).min(boundary);
        let mut captured = None;
        if kv_len > capture_from {
            let rows = capture::capture(ctx, self.slot, self.n_swa, capture_from..kv_len, false)
                .with_context(|| format!("reading the KV of session '{}'", self.name))?;
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
                    bail!("internal: the context's KV layout changed mid-session: {diff}");
                }
            }
            layout = Some(seen);
        }
        self.layout = layout.clone();

        // New full-attention pages.
        let base_rows = captured.as_ref().and_then(|c| c.base.as_ref());
        for (k, id) in ids.iter().enumerate().skip(first_missing) {
            if !self.damaged.contains(id) && (self.present.contains(id) || store.contains(id)?) {
                self.present.insert(*id);
                continue;
            }
            let rows = base_rows
                .and_then(|b| b.slice(k * p..(k + 1) * p))
                .context("internal: page rows missing from the capture")?;
            let put = self.write_object(id, ObjectKind::Page, &rows)?;
            report.objects_written += 1;
            report.bytes_written += put.written_bytes;
            self.present.insert(*id);
            if let Some(warm) = &self.warm {
                warm.insert(*id, rows);
            }
        }
        // Sliding-window rows: of the pages a restore point needs (the window before the
        // last page boundary), and of the earlier pages, for another conversation that
        // shares a prefix of this log. Written while the ring (or the capture) has them,
        // kept once stored; only a gap in the window makes the snapshot incomplete.
        let swa_capture = captured.as_ref().and_then(|c| c.swa.as_ref());
        let mut swa_pages = Vec::new();
        let mut prefix_swa_pages = Vec::new();
        let mut swa_complete = true;
        let swa_start = if self.n_swa > 0 { 0 } else { full };
        for (k, page_id) in ids.iter().enumerate().take(full).skip(swa_start) {
            let id = PageKey::swa_id(page_id);
            let stored = if !self.damaged.contains(&id)
                && (self.present.contains(&id) || store.contains(&id)?)
            {
                true
            } else if let Some(rows) = self
                .swa_ring
                .remove(&k)
                .or_else(|| swa_capture.and_then(|s| s.slice(k * p..(k + 1) * p)))
            {
                let put = self.write_object(&id, ObjectKind::Page, &rows)?;
                report.objects_written += 1;
                report.bytes_written += put.written_bytes;
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
            if stored {
                self.present.insert(id);
            }
        }
        let keep = self.swa_window_pages();
        while self.swa_ring.len() > keep {
            self.swa_ring.pop_first();
        }
        // The tail: rows after the last full page.
        let mut tail = None;
        if kv_len > boundary {
            let c = captured
                .as_ref()
                .context("internal: no capture for the tail")?;
            let base = c
                .base
                .as_ref()
                .and_then(|b| b.slice(boundary..kv_len))
                .context("internal: tail rows missing")?;
            let swa = match &c.swa {
                Some(s) => s
                    .slice(boundary..kv_len)
                    .context("internal: tail window rows missing")?,
                None => Vec::new(),
            };
            let record = TailRecord {
                n_cells: (kv_len - boundary) as u32,
                base,
                swa,
            }
            .encode();
            let id = self.key.tail_id(&ids, &tokens[boundary..kv_len]);
            let put = self.write_object(&id, ObjectKind::Tail, &record)?;
            report.objects_written += usize::from(!put.already_present);
            report.bytes_written += put.written_bytes;
            tail = Some(id);
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
            }),
        };
        self.catalog.write_manifest(&manifest)?;
        drop(_store_lock);
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
        self.saved = Some(manifest);
        report.save_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(report)
    }
}

/// Reads a page object (from the warm pool when it holds it) and checks its length.
fn read_rows(
    store: &crate::store::ObjectStore,
    warm: Option<&crate::tiers::WarmPool>,
    id: &ObjectId,
    expected: usize,
) -> Result<Vec<u8>> {
    let rows = match warm {
        Some(pool) => pool.get_or_load(store, id)?,
        None => store.get(id)?,
    };
    if rows.len() != expected {
        bail!(
            "it holds {} bytes where the KV layout needs {expected}",
            rows.len()
        );
    }
    Ok(rows)
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
    ) -> Result<(), EngineError> {
        self.session.capture_filled_page(ctx, positions);
        Ok(())
    }
}
