//! The recurrent half of a hybrid restore. A hybrid model whose attention kvrun pages
//! ([`crate::kv::MemoryKind::pages`]) keeps its recurrent state beside the pages: at the
//! snapshot's end and at page boundaries, each as a checkpoint named by the object it
//! follows ([`PageKey::checkpoint_id`] of a page or of the tail). llama.cpp reads a hybrid's
//! state as the attention cells followed by the recurrent part, so a restore lays out the
//! pages of `0..k` and appends the checkpoint at `k`: both are the state of exactly those
//! tokens, as the uninterrupted run computed them. Without a checkpoint at or before the
//! end the pages reach, nothing is loaded: a restore never pairs cells with the recurrent
//! state of other tokens.

use super::restore_plan::RestorePlan;
use super::{LiveSession, RestoreReport};
use crate::kv::blob::SEQ_STATE_MAGIC;
use crate::kv::PageKey;
use crate::llama::Context;
use crate::session::capture;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::{KvSnapshot, StateCheckpoint};
use crate::store::ObjectId;

/// Bytes before the recurrent part in a checkpoint blob: llama.cpp's magic and seq id.
const BLOB_HEADER: usize = 8;

/// A checkpoint read for a restore: the state after `kv_len` tokens.
pub(super) struct RecurrentPart {
    pub kv_len: usize,
    blob: Vec<u8>,
}

impl RecurrentPart {
    /// Its recurrent part, as it follows the attention sections in a full blob.
    pub fn trailer(&self) -> &[u8] {
        &self.blob[BLOB_HEADER..]
    }
}

/// A stored checkpoint a restore reads straight into the blob it lays out: the state after
/// `kv_len` tokens, whose payload is `payload_len` bytes (checked as it is read).
#[derive(Debug, Clone, Copy)]
pub(super) struct RecurrentSource {
    pub kv_len: usize,
    pub object: ObjectId,
    pub payload_len: usize,
}

impl RecurrentSource {
    /// Bytes of its payload before the recurrent part.
    pub const SKIP: usize = BLOB_HEADER;

    /// Bytes of the recurrent part, as it follows the attention sections in a full blob.
    pub fn trailer_len(&self) -> usize {
        self.payload_len - BLOB_HEADER
    }
}

/// `plan` ending where a recurrent state after `kv_len` tokens ends: at a page boundary
/// before a plan's end, the pages after it (and the tail) are left for prefill.
pub(super) fn limit_plan(plan: &RestorePlan, kv_len: usize, page_tokens: usize) -> RestorePlan {
    if kv_len >= plan.end {
        return plan.clone();
    }
    RestorePlan {
        end: kv_len,
        pages: kv_len / page_tokens,
        tail_cells: 0,
        window: None,
    }
}

impl LiveSession<'_> {
    /// The latest stored recurrent state a restore of `snap` can end at, at or before
    /// `end`: the snapshot's own end (after its tail) when `end` reaches it, else a page
    /// boundary. Read and checked; a damaged one is passed over (and rewritten by the next
    /// save). `None` for attention alone, or when none is stored.
    pub(super) fn recurrent_part(
        &mut self,
        snap: &KvSnapshot,
        end: usize,
        report: &mut RestoreReport,
    ) -> Option<Option<RecurrentPart>> {
        if !self.memory.recurrent() {
            return None;
        }
        for (kv_len, object) in self.recurrent_candidates(snap, end) {
            let checkpoint = StateCheckpoint { kv_len, object };
            let what = match kv_len == snap.kv_len {
                true => "state",
                false => "checkpoint",
            };
            let Some(blob) = self.read_state_object(&checkpoint, what, report) else {
                continue;
            };
            if blob.len() < BLOB_HEADER || blob[..4] != SEQ_STATE_MAGIC.to_le_bytes() {
                report.warnings.push(format!(
                    "session '{}': its saved recurrent state ({object}) is not a state \
                     blob; passing it over",
                    self.name
                ));
                continue;
            }
            return Some(Some(RecurrentPart { kv_len, blob }));
        }
        self.no_recurrent_state(end, report);
        Some(None)
    }

    /// [`Self::recurrent_part`], to be read into place: the latest candidate whose object
    /// is stored with a valid header. Its payload is checked as it is read; a damaged one
    /// fails that read, and the restore falls back to [`Self::recurrent_part`].
    pub(super) fn recurrent_source(
        &mut self,
        snap: &KvSnapshot,
        end: usize,
        report: &mut RestoreReport,
    ) -> Option<Option<RecurrentSource>> {
        if !self.memory.recurrent() {
            return None;
        }
        let store = self.catalog.store();
        for (kv_len, object) in self.recurrent_candidates(snap, end) {
            let Ok(reader) = store.open_payload(&object) else {
                continue;
            };
            let payload_len = reader.len() as usize;
            if payload_len > BLOB_HEADER {
                return Some(Some(RecurrentSource {
                    kv_len,
                    object,
                    payload_len,
                }));
            }
        }
        self.no_recurrent_state(end, report);
        Some(None)
    }

    /// The recurrent states a restore of `snap` up to `end` could end at, latest first,
    /// that the store (or the warm pool) holds and no read found damaged: after the tail
    /// when `end` is the snapshot's, then at each page boundary.
    fn recurrent_candidates(&self, snap: &KvSnapshot, end: usize) -> Vec<(usize, ObjectId)> {
        let p = self.page_tokens;
        let mut candidates = Vec::new();
        if let Some(tail) = snap.tail.filter(|_| end == snap.kv_len) {
            candidates.push((snap.kv_len, PageKey::checkpoint_id(&tail)));
        }
        let pages = (end / p).min(snap.pages.len());
        candidates.extend(
            (1..=pages)
                .rev()
                .map(|k| (k * p, PageKey::checkpoint_id(&snap.pages[k - 1]))),
        );
        let store = self.catalog.store();
        candidates.retain(|(_, object)| {
            let held = self.warm.as_deref().is_some_and(|w| w.contains(object))
                || store.contains(object).unwrap_or(false);
            held && !self.ledger.damaged.contains(object)
        });
        candidates
    }

    fn no_recurrent_state(&self, end: usize, report: &mut RestoreReport) {
        if end > 0 {
            report.warnings.push(format!(
                "session '{}': no recurrent state is stored for the first {end} tokens; \
                 recomputing them by prefill",
                self.name
            ));
        }
    }

    /// A hybrid load counts only if the sequence then holds exactly the plan's `end`
    /// tokens (llama.cpp reports the shorter of its attention and recurrent halves); else
    /// the sequence is emptied and the load reported refused.
    pub(super) fn check_recurrent_load(
        &self,
        ctx: &mut Context<'_>,
        loaded: Result<()>,
        end: usize,
    ) -> Result<()> {
        loaded?;
        let holds = ctx.seq_len(self.slot.seq);
        if !self.memory.recurrent() || holds == end {
            return Ok(());
        }
        capture::empty(ctx, self.slot);
        Err(LiveError::internal(format!(
            "the restored sequence holds {holds} tokens, not {end}"
        )))
    }
}
