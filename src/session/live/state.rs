//! Sessions of a memory kvrun does not page (recurrent models, hybrids whose attention keeps
//! a sliding window): besides the token log, each save keeps llama.cpp's whole
//! state of the sequence at the end of the log as one object, named by every token it
//! holds. A restore of the same session, or a request that extends its log, loads it
//! instead of recomputing the log. (A hybrid with paged attention keeps only its recurrent
//! state at the log's end, beside its pages: `restore_recurrent.rs`.)
//!
//! A recurrent state holds the whole log and no earlier point, so this object serves only a
//! log that starts with all of it; a prompt that parts from the log inside it starts from a
//! checkpoint (`checkpoints.rs`). llama.cpp checks every count, type and size of the state
//! it loads; a refusal, a damaged object or a log that no longer matches means recompute
//! (the token log is the truth).

use crate::kv::blob::BlobShape;
use crate::kv::{window, KvLayout, MemoryKind, PageKey};
use crate::llama::{Context, KvCapture, TokenId};
use crate::sequence::{common_prefix, Sequence};
use crate::session::kv_error::LiveResult as Result;
use crate::session::manifest::StateCheckpoint;
use crate::store::{ObjectId, ObjectKind, Payload, PutJob};

use super::page_read::{read_object, PageRequest};
use super::{LiveSession, RestoreReport};

impl LiveSession<'_> {
    /// The state object of `seq` for the next save: queued for writing unless it is stored
    /// already (the log has not moved since the last save). A hybrid whose attention is
    /// paged keeps only its recurrent state here, as the checkpoint after the snapshot's
    /// last object (`snapshot_end`: its tail, else its last page), which any log ending in
    /// the same tokens shares; taken from the save's capture (`captured`) where it has
    /// one. `None` for attention alone, or a sequence with nothing in the cache.
    pub(super) fn plan_state(
        &mut self,
        ctx: &Context<'_>,
        seq: &Sequence,
        (snapshot_end, captured): (Option<&ObjectId>, Option<Payload>),
        emit: &mut dyn FnMut(PutJob),
    ) -> Result<Option<StateCheckpoint>> {
        let kv_len = seq.kv_len();
        let (object, what) = match (self.memory.pages(), self.memory.recurrent()) {
            _ if kv_len == 0 => return Ok(None),
            (true, false) => return Ok(None),
            (true, true) => match snapshot_end {
                Some(end) => (PageKey::checkpoint_id(end), KvCapture::Checkpoint),
                None => return Ok(None),
            },
            (false, _) => (self.key.state_id(&seq.tokens()[..kv_len]), KvCapture::Full),
        };
        if !self.ledger.damaged.contains(&object) && self.is_stored_or_queued(&object)? {
            return Ok(Some(StateCheckpoint { kv_len, object }));
        }
        // (Only a hybrid's capture carries its recurrent state.)
        let payload = match captured.filter(|_| what == KvCapture::Checkpoint) {
            Some(payload) => payload,
            None => Payload::Owned(ctx.state_get(self.slot.seq, what)?),
        };
        emit(PutJob {
            id: object,
            kind: ObjectKind::State,
            payload,
            replace: self.ledger.damaged.remove(&object),
            keep: false,
        });
        Ok(Some(StateCheckpoint { kv_len, object }))
    }

    /// Loads `state` (this session's, from [`Self::own_state`] or [`Self::prompt_state`])
    /// into the session's empty sequence. Returns the tokens now in the cache (0: none
    /// given, or recompute).
    pub(super) fn load_state(
        &mut self,
        ctx: &mut Context<'_>,
        state: Option<StateCheckpoint>,
        report: &mut RestoreReport,
    ) -> usize {
        let Some(state) = state else {
            return 0;
        };
        let Some(bytes) = self.read_state_object(&state, "state", report) else {
            return 0;
        };
        let bytes = self.window_as_run(bytes, 2, state.kv_len);
        let seq = self.slot.seq;
        ctx.clear_seq(seq);
        let started = std::time::Instant::now();
        let loaded = ctx.state_set(seq, &bytes, KvCapture::Full);
        report.phases.load_ms += started.elapsed().as_secs_f64() * 1e3;
        // What llama.cpp took must be the state of exactly these tokens.
        let holds = ctx.seq_len(seq);
        match loaded {
            Ok(()) if holds == state.kv_len => state.kv_len,
            outcome => {
                ctx.clear_seq(seq);
                let why = match outcome {
                    Err(e) => e.to_string(),
                    Ok(()) => format!("it holds {holds} tokens, not {}", state.kv_len),
                };
                report.warnings.push(format!(
                    "session '{}': llama.cpp refused its saved state ({why}); recomputing \
                     {} tokens by prefill",
                    self.name, state.kv_len
                ));
                0
            }
        }
    }

    /// A saved state (`sections`: 2) or checkpoint (1: the window alone) of a hybrid whose
    /// attention keeps a sliding window, with the window laid out as an uninterrupted run
    /// of its first `keep` tokens holds it ([`window::begin_window_at`]); any other bytes
    /// as they are. (llama.cpp checks what it loads; bytes that do not parse here go to it
    /// unchanged.)
    pub(super) fn window_as_run(&self, bytes: Vec<u8>, sections: u32, keep: usize) -> Vec<u8> {
        let MemoryKind::Hybrid { n_swa, cell_ext } = self.memory else {
            return bytes;
        };
        if n_swa == 0 {
            return bytes;
        }
        let shape = BlobShape {
            sections,
            ..KvLayout::shape_for(n_swa, cell_ext)
        };
        let first = window::cells_start(keep, n_swa as usize, self.page_tokens);
        match window::begin_window_at(&bytes, &shape, first) {
            Ok(Some(laid_out)) => laid_out,
            _ => bytes,
        }
    }

    /// Reads a saved state or checkpoint object (`what`, for the warning), checked. A damaged
    /// one is noted for the next save to rewrite.
    pub(super) fn read_state_object(
        &mut self,
        state: &StateCheckpoint,
        what: &str,
        report: &mut RestoreReport,
    ) -> Option<Vec<u8>> {
        let request = PageRequest {
            id: state.object,
            expected_len: None,
        };
        let (store, warm) = (self.catalog.store(), self.warm.as_deref());
        match read_object(store, warm, request, Vec::new(), &mut report.phases) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                if e.store_error().is_some() {
                    self.ledger.damaged.insert(state.object);
                }
                report.warnings.push(format!(
                    "session '{}': its saved {what} ({}) is unusable ({e:#}); recomputing \
                     {} tokens by prefill",
                    self.name, state.object, state.kv_len
                ));
                None
            }
        }
    }

    /// This session's saved state, when `tokens` start with the whole log it holds.
    pub(super) fn own_state(&self, tokens: &[TokenId]) -> Option<StateCheckpoint> {
        let m = self.saved.as_ref()?;
        let state = m.state.clone()?;
        let logged = m.tokens.get(..state.kv_len)?;
        let starts_with = common_prefix(logged, tokens) == state.kv_len;
        (starts_with && self.key.state_id(logged) == state.object).then_some(state)
    }

    /// The saved state a prompt can start from: this session's, when the prompt goes on
    /// past it (its last token is always decoded, for the logits that start the reply).
    pub(super) fn prompt_state(&self, prompt: &[TokenId]) -> Option<StateCheckpoint> {
        self.own_state(prompt).filter(|s| prompt.len() > s.kv_len)
    }
}
