//! The recurrent half of a hybrid restore. A hybrid model whose attention kvrun pages
//! ([`crate::kv::MemoryKind::pages`]) keeps its recurrent state beside the pages: at the
//! snapshot's end and at page boundaries, each as a checkpoint named by the object it
//! follows ([`PageKey::checkpoint_id`] of a page or of the tail). llama.cpp reads a hybrid's
//! state as the attention cells followed by the recurrent part. A restore loads the pages of
//! `0..k` in chunks, each blob carrying an empty recurrent part, then loads the checkpoint at
//! `k` alone into the sequence (llama.cpp's `PARTIAL_ONLY` read, which leaves the attention
//! cells as they are). Both are the state of exactly those tokens, as the uninterrupted run
//! computed them. Without a checkpoint at or before the end the pages reach, nothing is
//! loaded: a restore never pairs cells with the recurrent state of other tokens. (After a
//! damaged read, the restore lays out one blob with the checkpoint's part appended.)

use std::time::{Duration, Instant};

use super::buffers::{keep_or_free, sized};
use super::page_read::{read_object, readers, PageRequest};
use super::restore_plan::RestorePlan;
use super::{LiveSession, RestoreReport};
use crate::kv::blob::{SEQ_HEADER_BYTES as BLOB_HEADER, SEQ_STATE_MAGIC};
use crate::kv::PageKey;
use crate::llama::Context;
use crate::session::capture::{self, RestorePhases};
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::{KvSnapshot, StateCheckpoint};
use crate::store::{ObjectId, ObjectStore, PayloadPart};
use crate::tiers::WarmPool;

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

/// A stored checkpoint a chunked restore loads after the attention chunks: the state after
/// `kv_len` tokens, whose payload is `payload_len` bytes (checked as it is read).
#[derive(Debug, Clone, Copy)]
pub(super) struct RecurrentSource {
    pub kv_len: usize,
    pub object: ObjectId,
    pub payload_len: usize,
}

impl RecurrentSource {
    /// Reads and verifies the checkpoint into `buffer` (or through the warm pool, which keeps
    /// its own copy), adding the time to `phases`. It needs no context, so it runs beside
    /// the attention chunks' reads and loads. `None` when the read failed: the restore then
    /// falls back to [`LiveSession::recurrent_part`], which reports and passes over a
    /// damaged one.
    ///
    /// A state of 150 MiB is read in ranges by a few threads at once, each faulting its
    /// range in first: one thread reading into fresh memory restored a large hybrid state
    /// markedly slower than two threads and a kept buffer.
    pub fn read(
        &self,
        store: &ObjectStore,
        warm: Option<&WarmPool>,
        buffer: Vec<u8>,
        phases: &mut RestorePhases,
    ) -> Option<Vec<u8>> {
        if let Some(pool) = warm {
            let request = PageRequest {
                id: self.object,
                expected_len: Some(self.payload_len),
            };
            return read_object(store, Some(pool), request, buffer, phases).ok();
        }
        let started = Instant::now();
        let reader = store.open_payload(&self.object).ok()?;
        // A payload of another length fails the read (its parts must add up to it).
        let (mut blob, fresh) = sized(buffer, self.payload_len);
        let parts = readers().min(self.payload_len.div_ceil(MIN_SPLIT));
        let mut hashing = Duration::ZERO;
        let prefault = |range: &mut [u8]| {
            if fresh {
                crate::llama::prefault(range);
            }
        };
        let read = reader.read_parts(
            vec![PayloadPart::Into(&mut blob)],
            parts,
            prefault,
            &mut hashing,
        );
        phases.read_ms += started.elapsed().as_secs_f64() * 1e3;
        phases.verify_ms += hashing.as_secs_f64() * 1e3;
        match read {
            Ok(_) => Some(blob),
            Err(_) => {
                keep_or_free(vec![blob]);
                None
            }
        }
    }
}

/// The least bytes worth a thread of their own in a split read.
const MIN_SPLIT: usize = 8 << 20;

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
        self.first_recurrent(snap, end, report, |this, kv_len, object, report| {
            let checkpoint = StateCheckpoint { kv_len, object };
            let what = match kv_len == snap.kv_len {
                true => "state",
                false => "checkpoint",
            };
            let blob = this.read_state_object(&checkpoint, what, report)?;
            if blob.len() < BLOB_HEADER || blob[..4] != SEQ_STATE_MAGIC.to_le_bytes() {
                report.warnings.push(format!(
                    "session '{}': its saved recurrent state ({object}) is not a state \
                     blob; passing it over",
                    this.name
                ));
                return None;
            }
            Some(RecurrentPart { kv_len, blob })
        })
    }

    /// [`Self::recurrent_part`], to be read beside the attention chunks: the latest
    /// candidate whose object is stored. Its payload is checked as it is read; a damaged
    /// one fails that read, and the restore falls back to [`Self::recurrent_part`].
    pub(super) fn recurrent_source(
        &mut self,
        snap: &KvSnapshot,
        end: usize,
        report: &mut RestoreReport,
    ) -> Option<Option<RecurrentSource>> {
        self.first_recurrent(snap, end, report, |this, kv_len, object, _| {
            let reader = this.catalog.store().open_payload(&object).ok()?;
            let payload_len = reader.len() as usize;
            (payload_len > BLOB_HEADER).then_some(RecurrentSource {
                kv_len,
                object,
                payload_len,
            })
        })
    }

    /// The first recurrent state `take` accepts among those a restore of `snap` up to `end`
    /// could end at, latest first (after the tail when `end` is the snapshot's, then at each
    /// page boundary), asked only of those the store (or the warm pool) holds and no read
    /// found damaged. `None` for attention alone; `Some(None)`, with a warning, when none
    /// is taken.
    fn first_recurrent<T>(
        &mut self,
        snap: &KvSnapshot,
        end: usize,
        report: &mut RestoreReport,
        mut take: impl FnMut(&mut Self, usize, ObjectId, &mut RestoreReport) -> Option<T>,
    ) -> Option<Option<T>> {
        if !self.memory.recurrent() {
            return None;
        }
        let p = self.page_tokens;
        let after_tail = snap
            .tail
            .filter(|_| end == snap.kv_len)
            .map(|tail| (snap.kv_len, PageKey::checkpoint_id(&tail)));
        let boundaries = (1..=(end / p).min(snap.pages.len()))
            .rev()
            .map(|k| (k * p, PageKey::checkpoint_id(&snap.pages[k - 1])));
        for (kv_len, object) in after_tail.into_iter().chain(boundaries) {
            let held = self.warm.as_deref().is_some_and(|w| w.contains(&object))
                || self.catalog.store().contains(&object).unwrap_or(false);
            if !held || self.ledger.damaged.contains(&object) {
                continue;
            }
            if let Some(found) = take(self, kv_len, object, report) {
                return Some(Some(found));
            }
        }
        if end > 0 {
            report.warnings.push(format!(
                "session '{}': no recurrent state is stored for the first {end} tokens; \
                 recomputing them by prefill",
                self.name
            ));
        }
        Some(None)
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
