//! Restoring a prefix of any token log from pages other sessions stored: the chained page
//! ids make the store its own index, one lookup per page.

use std::time::Instant;

use crate::session::kv_error::LiveResult as Result;

use super::{LiveSession, RestoreReport};
use crate::kv::PageKey;
use crate::llama::{Context, TokenId};
use crate::sequence::common_prefix;
use crate::sequence::Sequence;
use crate::session::capture;
use crate::session::manifest::KvSnapshot;
use crate::store::ObjectId;

impl LiveSession<'_> {
    /// For a log with no (usable) snapshot: restores the longest cached prefix of it the
    /// store holds (see [`Self::stored_prefix_len`]). Returns what was restored.
    pub fn reuse_prefix(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &mut Sequence,
    ) -> Result<RestoreReport> {
        let started = Instant::now();
        let mut report = RestoreReport::default();
        if seq.kv_len() > 0 || self.recompute_whole {
            return Ok(report);
        }
        let tokens = seq.tokens().to_vec();
        let mut restored = self.restore_cells(ctx, &tokens, &mut report)?;
        // The log's own recorded batch starts (if any) still schedule what is left to
        // prefill. Where that replays a recorded batch (one starts later), it is exact only
        // from a start: with batches wider than a page, cells loaded past the last start
        // are cut off and recomputed in their recorded batch. (Page batches start at every
        // page boundary; what follows the log's last start is new and has no batch to
        // match.)
        let starts = seq.batch_starts().clone();
        let replays_inside_a_batch =
            !starts.is_start(restored) && starts.next_after(restored).is_some();
        if restored > 0 && self.memory.wide_batches() && replays_inside_a_batch {
            let back = starts.last_at_or_before(restored);
            report.warnings.push(format!(
                "session '{}': tokens {back}..{restored} lie inside one of its recorded \
                 batches; keeping {back} restored tokens and recomputing the batch whole",
                self.name
            ));
            restored = if back > 0 && ctx.truncate_seq(self.slot.seq, back) {
                back
            } else {
                ctx.clear_seq(self.slot.seq);
                0
            };
        }
        if restored > 0 {
            *seq = Sequence::restored(tokens, restored)
                .in_seq(self.slot.seq)
                .with_batch_starts(starts);
            report.restored_tokens = restored;
            if self.memory.pages() {
                report.reused_tokens = restored;
            }
            report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
        }
        Ok(report)
    }

    /// Loads the longest cached prefix of `tokens` into this session's empty sequence, in
    /// this order: the whole state of a memory that is not paged; this session's own save
    /// to the token; another saved log to the token (`branch.rs`); whole pages by content.
    /// Returns the tokens loaded.
    fn restore_cells(
        &mut self,
        ctx: &mut Context<'_>,
        tokens: &[TokenId],
        report: &mut RestoreReport,
    ) -> Result<usize> {
        if !self.memory.pages() {
            return Ok(self.load_unpaged_prefix(ctx, tokens, report));
        }
        if let Some(restored) = self.reuse_own_snapshot(ctx, tokens, report)? {
            return Ok(restored);
        }
        let p = self.page_tokens;
        let (ids, pages) = self.stored_prefix(tokens)?;
        let branch = self.branch(tokens, pages * p);
        if pages == 0 && branch.is_none() {
            return Ok(0);
        }
        if self.layout.is_none() {
            self.layout = Some(capture::probe_layout(
                ctx,
                self.slot,
                self.memory,
                tokens[0],
            )?);
        }
        if let Some(branch) = branch {
            if let Some(restored) = self.load_branch(ctx, &branch, report)? {
                return Ok(restored);
            }
            if pages == 0 {
                return Ok(0);
            }
        }
        let snap = KvSnapshot {
            kv_len: pages * p,
            pages: ids[..pages].to_vec(),
            swa_pages: if self.n_swa() > 0 {
                let first = (pages * p).saturating_sub(self.n_swa() as usize) / p;
                (first..pages)
                    .map(|k| (k, PageKey::swa_id(&ids[k])))
                    .collect()
            } else {
                Vec::new()
            },
            prefix_swa_pages: Vec::new(),
            tail: None,
            batch_starts: Default::default(),
        };
        self.load_pages(ctx, (&snap, tokens), report)
    }

    /// Loads this session's own saved snapshot, its tail included (the partial last page,
    /// which no other session can name by content), when `tokens` agree with its log at
    /// least into that tail: a returning conversation or a retried turn. Where they part
    /// inside it, the loaded sequence is cut there, so what is restored is exact to the
    /// token; one token is always left to decode. `None` when the pages by content give as
    /// much, or the cut is refused (then nothing is left loaded).
    fn reuse_own_snapshot(
        &mut self,
        ctx: &mut Context<'_>,
        tokens: &[TokenId],
        report: &mut RestoreReport,
    ) -> Result<Option<usize>> {
        let keep = self.own_snapshot_keep(tokens);
        if keep == 0 {
            return Ok(None);
        }
        let Some(m) = self.saved.clone() else {
            return Ok(None);
        };
        let full_pages = m.snapshot.as_ref().map_or(0, |s| s.pages.len());
        match m.kv.layout.as_deref().map(crate::kv::KvLayout::decode) {
            Some(Ok(layout)) => self.layout = Some(layout),
            _ => return Ok(None),
        }
        let restored = self.load_snapshot(ctx, &m, report)?;
        if restored <= full_pages * self.page_tokens {
            // The tail did not load (damaged, missing): let the pages by content serve.
            ctx.clear_seq(self.slot.seq);
            return Ok(None);
        }
        Ok(self.cut_restored(ctx, restored, keep))
    }

    /// How far [`Self::reuse_own_snapshot`] would restore `tokens`: as far as they agree
    /// with the saved log's KV, when that reaches into its tail; else 0.
    fn own_snapshot_keep(&self, tokens: &[TokenId]) -> usize {
        let Some(m) = &self.saved else {
            return 0;
        };
        let Some(snapshot) = &m.snapshot else {
            return 0;
        };
        let logged = &m.tokens[..snapshot.kv_len.min(m.tokens.len())];
        let keep = common_prefix(logged, tokens).min(tokens.len().saturating_sub(1));
        // Before the tail, whole pages found by content give the same, without the cut.
        // A recurrent state cannot be cut: only a prompt that extends the whole snapshot
        // takes it (its state at the end is kept).
        let cut = keep < snapshot.kv_len;
        if keep <= snapshot.pages.len() * self.page_tokens || (cut && self.memory.recurrent()) {
            0
        } else {
            keep
        }
    }

    /// Tokens at the start of `tokens` that [`Self::reuse_prefix`] would restore from the
    /// store: this session's own save to the token where it reaches into its tail, else
    /// as far as any saved log agrees with them (`branch.rs`), else whole pages, and
    /// (sliding-window models) only up to a page boundary whose window rows are stored
    /// too.
    pub fn stored_prefix_len(&self, tokens: &[TokenId]) -> Result<usize> {
        if self.recompute_whole {
            return Ok(0);
        }
        if !self.memory.pages() {
            return Ok(self.unpaged_start(tokens).len());
        }
        let own = self.own_snapshot_keep(tokens);
        if own > 0 {
            return Ok(own);
        }
        let whole = self.stored_prefix(tokens)?.1 * self.page_tokens;
        Ok(self.branch(tokens, whole).map_or(whole, |b| b.keep))
    }

    /// The page ids of `tokens` (all but the last token) and how many of them, from the
    /// first, can be restored. The chained ids make this one lookup per page.
    fn stored_prefix(&self, tokens: &[TokenId]) -> Result<(Vec<ObjectId>, usize)> {
        let p = self.page_tokens;
        let mut ids = Vec::new();
        if tokens.len() < p + 1 {
            return Ok((ids, 0));
        }
        // Keep at least the last token out: it is decoded to produce logits.
        self.key
            .extend_ids(&tokens[..tokens.len() - 1], p, &mut ids);
        let store = self.catalog.store();
        let mut present = 0;
        for id in &ids {
            if !store.contains(id)? {
                break;
            }
            present += 1;
        }
        // A hybrid's attention pages serve up to the last boundary whose recurrent state
        // (a checkpoint) is stored too.
        while present > 0 && self.memory.recurrent() {
            if store.contains(&PageKey::checkpoint_id(&ids[present - 1]))? {
                break;
            }
            present -= 1;
        }
        // The largest page boundary whose sliding window is stored too.
        let mut pages = present;
        while pages > 0 && self.n_swa() > 0 {
            let end = pages * p;
            let first = end.saturating_sub(self.n_swa() as usize) / p;
            let mut ok = true;
            for id in &ids[first..pages] {
                if !store.contains(&PageKey::swa_id(id))? {
                    ok = false;
                    break;
                }
            }
            if ok {
                break;
            }
            pages -= 1;
        }
        Ok((ids, pages))
    }
}
