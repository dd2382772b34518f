//! Restoring a prefix of any token log from pages other sessions stored: the chained page
//! ids make the store its own index, one lookup per page.

use std::time::Instant;

use crate::session::kv_error::LiveResult as Result;

use super::{LiveSession, RestoreReport};
use crate::engine::{Context, TokenId};
use crate::kv::PageKey;
use crate::sequence::Sequence;
use crate::session::capture;
use crate::session::manifest::KvSnapshot;
use crate::store::ObjectId;

impl LiveSession<'_> {
    /// For a log with no (usable) snapshot: restores the longest stored page chain it
    /// starts with. Returns the tokens restored.
    pub fn reuse_prefix(
        &mut self,
        ctx: &mut Context<'_>,
        seq: &mut Sequence,
    ) -> Result<RestoreReport> {
        let started = Instant::now();
        let mut report = RestoreReport::default();
        let tokens = seq.tokens().to_vec();
        if seq.kv_len() > 0 || tokens.len() < self.page_tokens + 1 {
            return Ok(report);
        }
        let p = self.page_tokens;
        let (ids, pages) = self.stored_prefix(&tokens)?;
        if pages == 0 {
            return Ok(report);
        }
        if self.layout.is_none() {
            self.layout = Some(capture::probe_layout(
                ctx, self.slot, self.n_swa, tokens[0],
            )?);
        }
        let snap = KvSnapshot {
            kv_len: pages * p,
            pages: ids[..pages].to_vec(),
            swa_pages: if self.n_swa > 0 {
                let first = (pages * p).saturating_sub(self.n_swa as usize) / p;
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
        let restored = self.load_pages(ctx, &snap, &mut report)?;
        // The log's own recorded batch starts (if any) still schedule what is left to
        // prefill.
        let starts = seq.batch_starts().clone();
        *seq = Sequence::restored(tokens, restored)
            .in_seq(self.slot.seq)
            .with_batch_starts(starts);
        report.restored_tokens = restored;
        report.reused_tokens = restored;
        report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(report)
    }

    /// Tokens at the start of `tokens` that [`Self::reuse_prefix`] would restore from the
    /// store: whole pages, and (sliding-window models) only up to a page boundary whose
    /// window rows are stored too.
    pub fn stored_prefix_len(&self, tokens: &[TokenId]) -> Result<usize> {
        Ok(self.stored_prefix(tokens)?.1 * self.page_tokens)
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
        // The largest page boundary whose sliding window is stored too.
        let mut pages = present;
        while pages > 0 && self.n_swa > 0 {
            let end = pages * p;
            let first = end.saturating_sub(self.n_swa as usize) / p;
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
