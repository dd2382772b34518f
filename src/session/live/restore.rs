//! Restoring a saved session from its pages: the snapshot is bound to the token log (the
//! log wins where the manifest's ids disagree), pages are read through the warm pool and
//! verified, and the furthest restore point they support is loaded without prefill.
//!
//! The common case reads pages in place ([`super::in_place`]); when a read fails, every page
//! is read again into buffers of its own ([`super::page_read::fetch_pages`]) and the
//! furthest point the intact ones support is assembled here.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::buffers::keep_or_free;
use super::page_read::fetch_pages;
use super::restore_choice::{choose_restore, current_rates, record_restore, SourceRange};
use super::restore_plan::{
    expected_tail_cells, plan_restore, tail_matches, PlanInput, RestorePlan,
};
use super::restore_recurrent::limit_plan;
use super::tail_read::PendingTail;
use super::{LiveSession, RestoreReport};
use crate::kv::blob::CellExts;
use crate::kv::layout::{slice_cells, BASE, SWA};
use crate::kv::{KvLayout, TailRecord};
use crate::llama::{Context, TokenId};
use crate::sequence::Sequence;
use crate::session::capture::{self, RestoreSection};
use crate::session::identity::bind_snapshot;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::{KvSnapshot, SessionManifest};
use crate::store::ObjectId;

impl LiveSession<'_> {
    /// Loads the saved snapshot into the (fresh) context. Damaged or missing pages are
    /// reported and the affected part of the log is left for prefill.
    pub fn restore(&mut self, ctx: &mut Context<'_>) -> Result<(Sequence, RestoreReport)> {
        let started = Instant::now();
        let mut report = RestoreReport::default();
        // The pages of a commit still queued are not all stored yet.
        self.wait_for_commits();
        let Some(m) = self.saved.clone() else {
            return Ok((Sequence::new(), report));
        };
        self.check_compatible(ctx)?;
        // Whatever is not restored is recomputed in the batches it was first decoded in.
        let seq_id = self.slot.seq;
        let replay = m.replay_starts();
        let open = move |tokens, restored| {
            Sequence::restored(tokens, restored)
                .in_seq(seq_id)
                .with_batch_starts(replay)
        };
        // (A hybrid session saved before its attention was paged keeps its whole state.)
        if !self.memory.pages() || (self.memory.recurrent() && m.snapshot.is_none()) {
            let state = self.own_state(&m.tokens);
            let restored = self.load_state(ctx, state, &mut report);
            report.restored_tokens = restored;
            report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
            return Ok((open(m.tokens, restored), report));
        }
        if m.snapshot.is_none() {
            return Ok((open(m.tokens, 0), report));
        };
        let stored = match m.kv.layout.as_deref().map(KvLayout::decode) {
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                report
                    .warnings
                    .push(format!("session '{}': {e}", self.name));
                return Ok((open(m.tokens, 0), report));
            }
            None => return Ok((open(m.tokens, 0), report)),
        };
        // The stored layout is trusted only as far as its checksum and the checks above go:
        // llama.cpp validates every type and row size again, and a refusal falls back to
        // prefill. (No probe decode here: it would cost a forward pass per restore.)
        self.layout = Some(stored);
        let restored = self.load_snapshot(ctx, &m, &mut report)?;
        report.restored_tokens = restored;
        report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok((open(m.tokens, restored), report))
    }

    /// Loads the snapshot as its token log names it: every id is recomputed from the log
    /// ([`bind_snapshot`]), and where the manifest's list disagrees the log wins (with a
    /// warning), so only pages that are the KV of these very tokens can be loaded.
    pub(super) fn load_snapshot(
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
        self.load_pages(ctx, (&bound.snapshot, &m.tokens), report)
    }

    /// Reads and verifies pages, picks the furthest restore point they support
    /// ([`plan_restore`]), and loads it. Returns the number of tokens now in the cache.
    /// `snap` comes with the token log its cells hold (their ext follows from it).
    ///
    /// The common case, every object intact, reads each page straight into its place in
    /// the blob handed to llama.cpp. When a read fails (or the cache's V is transposed and
    /// cannot be filled in place) the pages are read again into buffers of their own, and
    /// the furthest point the intact ones support is assembled from those.
    pub(super) fn load_pages(
        &mut self,
        ctx: &mut Context<'_>,
        snap: (&KvSnapshot, &[TokenId]),
        report: &mut RestoreReport,
    ) -> Result<usize> {
        self.load_pages_to_cut(ctx, snap, 0, report)
    }

    /// [`Self::load_pages`], with the sliding window (iSWA caches) restored `cut` positions
    /// further back than the end needs, so the sequence can then be cut up to `cut` tokens
    /// short of the snapshot's end and still hold the window before the cut.
    pub(super) fn load_pages_to_cut(
        &mut self,
        ctx: &mut Context<'_>,
        (snap, tokens): (&KvSnapshot, &[TokenId]),
        cut: usize,
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let exts = CellExts {
            kind: self.memory.cell_ext(),
            tokens,
        };
        let layout = self
            .layout
            .clone()
            .ok_or_else(|| LiveError::internal("KV layout unknown"))?;
        let catalog = self.catalog;
        let warm = self.warm.clone();
        let pending = snap
            .tail
            .map(|id| PendingTail::new(id, catalog.store(), warm.as_deref(), &layout));
        let loaded =
            self.load_pages_with_tail(ctx, (snap, exts), &layout, (cut, pending.as_ref()), report);
        if let Some(t) = pending {
            report.phases.add(&t.phases());
            keep_or_free(t.into_buffer().into_iter().collect());
        }
        loaded
    }

    /// [`Self::load_pages_to_cut`], with the tail record (if any) to read when a path needs
    /// it whole.
    fn load_pages_with_tail(
        &mut self,
        ctx: &mut Context<'_>,
        (snap, exts): (&KvSnapshot, CellExts<'_>),
        layout: &KvLayout,
        (cut, pending): (usize, Option<&PendingTail<'_>>),
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let p = self.page_tokens;
        let n_swa = self.n_swa() as usize + cut;
        let window_pages = |intact: BTreeSet<usize>| layout.is_iswa().then_some((n_swa, intact));
        // A partial restore is exact only from a recorded batch start.
        let replay = match snap.batch_starts.is_empty() {
            true => Default::default(),
            false => snap.batch_starts.for_replay(snap.kv_len),
        };
        let plan_with = |tail_cells| {
            plan_restore(&PlanInput {
                page_tokens: p,
                pages: snap.pages.len(),
                intact_pages: snap.pages.len(),
                tail_cells,
                window: window_pages(snap.swa_pages.iter().map(|(k, _)| *k).collect()),
                replay: replay.clone(),
            })
        };
        // Planned with the tail the manifest promises: the chunk that holds it reads its
        // rows in place, and fails when the record is unusable or holds another count (the
        // careful path below then plans with what it really holds).
        let promised = pending.and_then(|_| expected_tail_cells(p, snap.pages.len(), snap.kv_len));
        let mut optimistic = plan_with(promised);
        // A plan that ends before the tail loads without it, so no chunk would check it:
        // that (rare) case reads the record first and plans with it.
        if pending.is_some() && optimistic.as_ref().is_some_and(|plan| plan.tail_cells == 0) {
            let (tail, tail_cells) = resolve_tail(pending, p, snap);
            if layout.is_iswa() && tail_cells.is_none() {
                self.note_tail(tail, tail_cells, report);
                return Ok(self.recompute_whole(snap, report));
            }
            optimistic = plan_with(tail_cells);
        }
        if let Some(plan) = &optimistic {
            let recurrent = match self.recurrent_source(snap, plan.end, report) {
                Some(None) => return Ok(0),
                source => source.flatten(),
            };
            let plan = &recurrent.map_or(plan.clone(), |r| limit_plan(plan, r.kv_len, p));
            // Restore or recompute, from this process's running estimates (on a CPU loading
            // all but always wins; without a prefill estimate it is not even asked).
            let bytes = plan_bytes(layout, plan);
            let warm = self
                .warm
                .as_deref()
                .is_some_and(|w| snap.pages.iter().take(plan.pages).all(|id| w.contains(id)));
            let decision = choose_restore(
                &[SourceRange {
                    tokens: plan.end,
                    bytes,
                    warm,
                }],
                &current_rates(),
            );
            report.decision = Some(decision);
            if decision.load_tokens == 0 {
                tracing::debug!("session '{}': {}", self.name, decision.describe());
                return Ok(0);
            }
            let started = Instant::now();
            if let Some(loaded) =
                self.load_in_place(ctx, (snap, exts), layout, (plan, recurrent), report)
            {
                // A tail the plan loaded was read in place and checked; one it stops
                // before is read now, to report what is wrong with it.
                if plan.tail_cells == 0 {
                    let (tail, tail_cells) = resolve_tail(pending, p, snap);
                    self.note_tail(tail, tail_cells, report);
                }
                let loaded = self.check_recurrent_load(ctx, loaded, plan.end);
                if loaded.is_ok() {
                    record_restore(bytes, started.elapsed().as_secs_f64() * 1e3, warm);
                }
                return Ok(self.finish(snap, Some(plan), loaded, report));
            }
        }

        let (tail, tail_cells) = resolve_tail(pending, p, snap);
        let tail_record = match &tail {
            Some((_, Ok(t))) => Some(t),
            _ => None,
        };
        if layout.is_iswa() && tail.is_some() && tail_cells.is_none() {
            self.note_tail(tail, tail_cells, report);
            return Ok(self.recompute_whole(snap, report));
        }
        let mut damaged = Vec::new();
        let (store, warm) = (self.catalog.store(), self.warm.as_deref());
        let fetched = fetch_pages((store, warm), snap, layout, p, &mut report.phases);
        // Full-attention pages, up to the first damaged one.
        let mut base: Vec<Vec<u8>> = Vec::with_capacity(snap.pages.len());
        for (i, (id, read)) in snap.pages.iter().zip(fetched.base).enumerate() {
            match read {
                Ok(rows) => base.push(rows),
                Err(e) => {
                    damaged.push(*id);
                    report.warnings.push(format!(
                        "session '{}': page {i} ({id}) is unusable ({e:#}); recomputing \
                         from token {} by prefill",
                        self.name,
                        i * p
                    ));
                    break;
                }
            }
        }
        // The tail counts only if every page before it is fine.
        if base.len() == snap.pages.len() {
            self.note_tail(tail, tail_cells, report);
        }
        // Sliding-window rows by page index (iSWA only).
        let mut swa_rows: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        for ((k, id), read) in snap.swa_pages.iter().zip(fetched.swa) {
            match read {
                Ok(rows) => {
                    swa_rows.insert(*k, rows);
                }
                Err(e) => {
                    damaged.push(*id);
                    report.warnings.push(format!(
                        "session '{}': sliding-window rows of page {k} ({id}) are \
                         unusable ({e:#})",
                        self.name
                    ))
                }
            }
        }
        let lost = !damaged.is_empty();
        self.mark_damaged(damaged);
        if lost && layout.is_iswa() {
            return Ok(self.recompute_whole(snap, report));
        }
        let plan = plan_restore(&PlanInput {
            page_tokens: p,
            pages: snap.pages.len(),
            intact_pages: base.len(),
            tail_cells,
            window: window_pages(swa_rows.keys().copied().collect()),
            replay,
        });
        let Some(plan) = plan else {
            return Ok(self.finish(snap, None, Ok(()), report));
        };
        let recurrent = match self.recurrent_part(snap, plan.end, report) {
            Some(None) => return Ok(0),
            part => part.flatten(),
        };
        let plan = recurrent
            .as_ref()
            .map_or(plan.clone(), |r| limit_plan(&plan, r.kv_len, p));
        let trailer = recurrent.as_ref().map_or(&[][..], |r| r.trailer());
        let tail_rows = |swa: bool| {
            let rows = tail_record.filter(|_| plan.tail_cells > 0);
            rows.map(|t| match swa {
                true => t.swa(),
                false => t.base(),
            })
        };
        let mut sections = vec![RestoreSection {
            first_pos: 0,
            count: plan.end,
            chunks: base[..plan.pages]
                .iter()
                .map(Vec::as_slice)
                .chain(tail_rows(false))
                .collect(),
        }];
        // Pieces of a page that starts before the window are cut to the window.
        let swa_pieces: Vec<Cow<'_, [u8]>> = plan
            .window
            .iter()
            .flat_map(|w| &w.pieces)
            .filter_map(|&(k, skip)| {
                let rows = swa_rows.get(&k)?;
                Some(match skip {
                    0 => Cow::Borrowed(&rows[..]),
                    _ => Cow::Owned(slice_cells(&layout.sections[SWA], rows, p, skip..p)),
                })
            })
            .collect();
        if let Some(w) = &plan.window {
            sections.push(RestoreSection {
                first_pos: w.start,
                count: plan.end - w.start,
                chunks: swa_pieces
                    .iter()
                    .map(|c| &c[..])
                    .chain(tail_rows(true))
                    .collect(),
            });
        }
        let loaded = capture::restore_into(
            ctx,
            self.slot,
            (layout, exts),
            &sections,
            trailer,
            &mut report.phases,
        );
        let loaded = self.check_recurrent_load(ctx, loaded, plan.end);
        Ok(self.finish(snap, Some(&plan), loaded, report))
    }

    /// Restores nothing of a sliding-window cache that lost an object. Its window rebuilt
    /// from part of the pages would land in other cache slots than the session's first run
    /// used, and CPU flash attention sums by slot, so the answer could drift from the
    /// undamaged session's. Recomputing the whole log in its recorded batches lays every
    /// cell as that run did: it continues exactly as an uninterrupted run of its turns.
    fn recompute_whole(&mut self, snap: &KvSnapshot, report: &mut RestoreReport) -> usize {
        self.recompute_whole = true;
        report.warnings.push(format!(
            "session '{}': a sliding-window cache is not rebuilt from part of its pages (the \
             answer could change); recomputing all {} tokens in their recorded batches",
            self.name, snap.kv_len
        ));
        0
    }

    /// Reports a tail record that cannot complete the restore, and marks it for rewriting
    /// when its object is damaged or does not match the log.
    fn note_tail(
        &mut self,
        tail: Option<(ObjectId, &Result<TailRecord>)>,
        tail_cells: Option<usize>,
        report: &mut RestoreReport,
    ) {
        let name = self.name.clone();
        match tail {
            None => {}
            Some((_, Ok(_))) if tail_cells.is_some() => {}
            Some((id, Ok(_))) => {
                self.mark_damaged([id]);
                report.warnings.push(format!(
                    "session '{name}': the tail record does not match the token log; \
                     recomputing it by prefill"
                ));
            }
            Some((id, Err(e))) => {
                // An object that failed its read is rewritten; one that read back whole
                // but does not decode is reported only.
                if e.store_error().is_some() {
                    self.mark_damaged([id]);
                }
                report.warnings.push(format!(
                    "session '{name}': the tail record ({id}) is unusable ({e:#}); \
                     recomputing it by prefill"
                ));
            }
        }
    }

    /// Missing or damaged alike: the next save writes these objects anew.
    fn mark_damaged(&mut self, ids: impl IntoIterator<Item = ObjectId>) {
        for id in ids {
            self.ledger.found_damaged(id);
        }
    }

    /// Records what a restore loaded and warns about what it did not. Returns the tokens
    /// now in the cache.
    fn finish(
        &mut self,
        snap: &KvSnapshot,
        plan: Option<&RestorePlan>,
        loaded: Result<()>,
        report: &mut RestoreReport,
    ) -> usize {
        let name = &self.name;
        tracing::debug!("session '{name}': restore phases {:?}", report.phases);
        let Some(plan) = plan else {
            if snap.kv_len > 0 {
                report.warnings.push(format!(
                    "session '{name}': no usable restore point; recomputing all {} tokens \
                     by prefill",
                    snap.kv_len
                ));
            }
            return 0;
        };
        if let Err(e) = loaded {
            report.warnings.push(format!(
                "session '{name}': llama.cpp refused the restored KV ({e:#}); recomputing \
                 by prefill"
            ));
            return 0;
        }
        self.ledger
            .present
            .extend(snap.pages.iter().take(plan.pages).copied());
        if plan.end < snap.kv_len {
            report.warnings.push(format!(
                "session '{name}': restored {} of {} tokens from pages; the rest is \
                 recomputed from the token log",
                plan.end, snap.kv_len
            ));
        }
        plan.end
    }
}

/// The tail record as read (waiting for its read), and the cells it completes the
/// snapshot's pages with (`None` when it cannot).
fn resolve_tail<'t>(
    pending: Option<&'t PendingTail<'_>>,
    page_tokens: usize,
    snap: &KvSnapshot,
) -> (Option<(ObjectId, &'t Result<TailRecord>)>, Option<usize>) {
    let tail = pending.map(|t| (t.id, t.get()));
    let cells = match &tail {
        Some((_, Ok(t))) => {
            let n = t.n_cells as usize;
            tail_matches(page_tokens, snap.pages.len(), n, snap.kv_len).then_some(n)
        }
        _ => None,
    };
    (tail, cells)
}

/// Bytes of rows a plan loads: its pages, window pieces and tail cells.
fn plan_bytes(layout: &KvLayout, plan: &RestorePlan) -> u64 {
    let base = layout.bytes_per_token(BASE) * plan.end;
    let swa = plan.window.as_ref().map_or(0, |w| {
        layout.bytes_per_token(SWA) * (plan.end - w.start.min(plan.end))
    });
    (base + swa) as u64
}
