//! Reuse to the token: where a prompt parts from a saved log inside one of its pages, that
//! page (or the log's tail) holds the cells of every token before the parting point. They
//! are the cells this prompt would compute, since attention KV at a position depends only
//! on the tokens up to it. So the pages up to and including that one are loaded and the
//! sequence is cut at the parting point, instead of stopping at the last whole page and
//! prefilling up to 255 tokens again.
//!
//! Only attention memory is paged (recurrent and hybrid state never reach here), and a cut
//! llama.cpp refuses leaves the sequence empty, so the caller falls back to whole pages.

use crate::llama::{Context, TokenId};
use crate::sequence::{common_prefix, keep_is_valid};
use crate::session::kv_error::LiveResult as Result;
use crate::session::manifest::KvSnapshot;
use crate::session::saved_logs::SavedLog;
use crate::store::ObjectId;

use super::{LiveSession, RestoreReport};

/// A saved log a prompt parts from inside a stored page or tail, and the snapshot of
/// that log up to the object holding the parting point.
#[derive(Debug, Clone)]
pub(super) struct Branch {
    /// Tokens of the prompt the snapshot's cells hold (the parting point).
    pub keep: usize,
    pub snapshot: KvSnapshot,
    /// The log's tokens the snapshot holds (the cells' ext follow from them).
    pub tokens: Vec<TokenId>,
}

impl LiveSession<'_> {
    /// The saved log that `tokens` (less the last, which is always decoded) agree with
    /// furthest past `whole` tokens (what whole pages by content give), when the objects
    /// holding those cells are all in the store. `None` when no log reaches past `whole`.
    pub(super) fn branch(&self, tokens: &[TokenId], whole: usize) -> Option<Branch> {
        // (A branch is cut inside a page or tail of another log: a recurrent state cannot
        // be, and a checkpoint at a boundary is what whole pages by content give.)
        let cuts = self.memory.pages() && !self.memory.recurrent();
        if !cuts || self.recompute_whole || tokens.len() < 2 {
            return None;
        }
        let limit = tokens.len() - 1;
        let logs = self.saved_logs.as_ref()?.read(self.catalog).ok()?;
        let mut best: Option<Branch> = None;
        for log in logs {
            // This session's own save is [`Self::reuse_own_snapshot`]'s, with its own
            // rules for damage.
            if log.name == self.name {
                continue;
            }
            let keep = common_prefix(&log.tokens, tokens).min(limit);
            if keep <= whole || best.as_ref().is_some_and(|b| b.keep >= keep) {
                continue;
            }
            if let Some(snapshot) = self.branch_snapshot(&log, keep) {
                let tokens = log.tokens[..snapshot.kv_len].to_vec();
                best = Some(Branch {
                    keep,
                    snapshot,
                    tokens,
                });
            }
        }
        best
    }

    /// The part of `log`'s snapshot that holds its first `keep` tokens: its pages up to the
    /// one holding token `keep - 1`, or all of it with its tail, and the window rows an
    /// iSWA cache needs before `keep`. `None` unless every id is this session's own name
    /// for those tokens (same model, same KV settings, same log) and every object is stored.
    fn branch_snapshot(&self, log: &SavedLog, keep: usize) -> Option<KvSnapshot> {
        let p = self.page_tokens;
        let snap = log.snapshot.as_ref()?;
        let need = keep.div_ceil(p);
        let (pages, tail) = if need <= snap.pages.len() {
            (need, None)
        } else {
            (snap.pages.len(), Some(snap.tail?))
        };
        let mut ids = Vec::with_capacity(pages);
        self.key.extend_ids(&log.tokens[..pages * p], p, &mut ids);
        if ids[..] != snap.pages[..pages] {
            return None;
        }
        if let Some(tail) = tail {
            if self.key.tail_id(&ids, &log.tokens[pages * p..]) != tail {
                return None;
            }
        }
        let kv_len = match tail {
            Some(_) => snap.kv_len,
            None => pages * p,
        };
        let swa_pages = match self.n_swa() as usize {
            0 => Vec::new(),
            n_swa => {
                let rows: std::collections::BTreeMap<usize, ObjectId> = snap
                    .swa_pages
                    .iter()
                    .chain(&snap.prefix_swa_pages)
                    .copied()
                    .collect();
                let first = keep.saturating_sub(n_swa) / p;
                let mut window = Vec::new();
                for k in first..pages {
                    window.push((k, *rows.get(&k)?));
                }
                window
            }
        };
        let store = self.catalog.store();
        let stored = |id: &ObjectId| store.contains(id).unwrap_or(false);
        let objects = ids
            .iter()
            .chain(&tail)
            .chain(swa_pages.iter().map(|(_, id)| id));
        if !objects.clone().all(stored) {
            return None;
        }
        Some(KvSnapshot {
            kv_len,
            pages: ids,
            swa_pages,
            prefix_swa_pages: Vec::new(),
            tail,
            batch_starts: Default::default(),
        })
    }

    /// Loads `branch` into this session's (empty) sequence and cuts it at the parting
    /// point. Returns the tokens now held, or `None` when nothing usable was loaded (the
    /// sequence is empty again then).
    pub(super) fn load_branch(
        &mut self,
        ctx: &mut Context<'_>,
        branch: &Branch,
        report: &mut RestoreReport,
    ) -> Result<Option<usize>> {
        let seq = self.slot.seq;
        let cut = branch.snapshot.kv_len - branch.keep;
        // Another session's damaged object says nothing about this session's own pages.
        let recompute_whole = self.recompute_whole;
        let snap = (&branch.snapshot, &branch.tokens[..]);
        let restored = self.load_pages_to_cut(ctx, snap, cut, report)?;
        self.recompute_whole = recompute_whole;
        if restored == 0 {
            ctx.clear_seq(seq);
            return Ok(None);
        }
        Ok(self.cut_restored(ctx, restored, branch.keep))
    }

    /// Cuts the `restored` tokens just loaded back to `keep` (where the prompt parts from
    /// the log they came from). Returns the tokens held, or `None` when llama.cpp refuses
    /// the cut or a sliding window would lose cells the cut needs: the sequence is emptied
    /// then, and is recomputed rather than continued from a state not its own.
    pub(super) fn cut_restored(
        &self,
        ctx: &mut Context<'_>,
        restored: usize,
        keep: usize,
    ) -> Option<usize> {
        let seq = self.slot.seq;
        let keep = keep.min(restored);
        let window_kept = keep_is_valid(keep, ctx.seq_pos_min(seq), self.n_swa());
        if keep < restored && !(window_kept && ctx.truncate_seq(seq, keep)) {
            ctx.clear_seq(seq);
            return None;
        }
        Some(keep)
    }
}
