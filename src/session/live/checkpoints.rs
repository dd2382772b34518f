//! Sessions of a memory kvrun does not page, on disk, past their whole state at the log's
//! end (`state.rs`): where a prompt parts from the saved log inside it (an agent's edited
//! turn after a restart, `run --session` with another prompt), the store still gives a
//! start.
//!
//! - Recurrent and hybrid models: each save keeps the hot sequence's checkpoints
//!   ([`crate::sequence::Checkpoints`]) as objects named by the page chain
//!   ([`crate::kv::PageKey::checkpoint_id`]), so sessions whose logs agree share them. A
//!   restore loads the last one at or before the parting point; an unpaged hybrid's
//!   attention cells come from the whole state at the log's end, cut there. (A paged
//!   hybrid's restore takes them from its pages: `restore_recurrent.rs`.)
//! - A memory that can be cut (no model kvrun loads has one unpaged now; kept for the
//!   kinds `MemoryKind` may add): the whole state is loaded and cut at the parting point.
//!
//! Every id is recomputed from the prompt's own tokens, so an object loads only as the
//! state of exactly the tokens it names; llama.cpp checks every size it reads, and the
//! sequence must then hold exactly the expected positions. Anything else is recomputed.

use crate::kv::{MemoryKind, PageKey};
use crate::llama::{Context, TokenId};
use crate::sequence::{common_prefix, thin_checkpoints, Sequence, MAX_CHECKPOINTS};
use crate::session::kv_error::LiveResult as Result;
use crate::session::manifest::StateCheckpoint;
use crate::store::{ObjectId, ObjectKind, Payload, PutJob};

use super::{LiveSession, RestoreReport};

/// Where a prompt of a memory kvrun does not page starts from in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UnpagedStart {
    Nothing,
    /// The whole state at the saved log's end: the prompt extends all of it.
    State(StateCheckpoint),
    /// A checkpoint; a hybrid's attention cells from `state`, cut at the checkpoint.
    Checkpoint {
        state: Option<StateCheckpoint>,
        checkpoint: StateCheckpoint,
    },
}

impl UnpagedStart {
    /// Tokens of the prompt it gives.
    pub(super) fn len(&self) -> usize {
        match self {
            UnpagedStart::Nothing => 0,
            UnpagedStart::State(s) => s.kv_len,
            UnpagedStart::Checkpoint { checkpoint, .. } => checkpoint.kv_len,
        }
    }
}

impl LiveSession<'_> {
    /// The checkpoints the next save lists: the sequence's own, written unless stored, and
    /// the last save's where the log still agrees with it (after a restart none is hot),
    /// thinned as in memory. Empty for a memory that can be cut.
    pub(super) fn plan_checkpoints(
        &mut self,
        seq: &Sequence,
        emit: &mut dyn FnMut(PutJob),
    ) -> Result<Vec<StateCheckpoint>> {
        if self.memory.cuts() {
            return Ok(Vec::new());
        }
        let tokens = &seq.tokens()[..seq.kv_len()];
        let ids = self.checkpoint_ids(tokens);
        let p = self.page_tokens;
        let named = |pos: usize| {
            (pos > 0 && pos.is_multiple_of(p))
                .then(|| ids.get(pos / p - 1).copied())
                .flatten()
        };
        // (checkpoint, bytes to write when the store lacks them)
        let mut kept: Vec<(StateCheckpoint, Option<&[u8]>)> = Vec::new();
        if let Some(m) = self.latest.as_ref().or(self.saved.as_ref()) {
            for c in &m.checkpoints {
                if named(c.kv_len) == Some(c.object) {
                    kept.push((c.clone(), None));
                }
            }
        }
        for c in seq.checkpoints().iter() {
            let Some(object) = named(c.pos) else {
                continue;
            };
            kept.retain(|(k, _)| k.object != object);
            let checkpoint = StateCheckpoint {
                kv_len: c.pos,
                object,
            };
            kept.push((checkpoint, Some(&c.bytes)));
        }
        kept.sort_by_key(|(c, _)| c.kv_len);
        thin_checkpoints(&mut kept, |(c, _)| c.kv_len);
        let mut listed = Vec::with_capacity(kept.len());
        for (c, bytes) in kept {
            let damaged = self.ledger.damaged.contains(&c.object);
            if damaged || !self.is_stored_or_queued(&c.object)? {
                // A saved one no longer hot and not in the store is not listed.
                let Some(bytes) = bytes else {
                    continue;
                };
                emit(PutJob {
                    id: c.object,
                    kind: ObjectKind::State,
                    payload: Payload::Owned(bytes.to_vec()),
                    replace: self.ledger.damaged.remove(&c.object),
                    keep: false,
                });
            }
            listed.push(c);
        }
        Ok(listed)
    }

    /// The ids the checkpoints after each whole page of `tokens` are stored under.
    fn checkpoint_ids(&self, tokens: &[TokenId]) -> Vec<ObjectId> {
        let mut pages = Vec::new();
        self.key.extend_ids(tokens, self.page_tokens, &mut pages);
        pages.iter().map(PageKey::checkpoint_id).collect()
    }

    /// Where `prompt` starts from in the store: the whole state when it extends this
    /// session's saved log, else the furthest start any saved log of this model gives (its
    /// own first on a tie): the last checkpoint before the prompt parts from that log. The
    /// prompt's last token is always decoded. (Only recurrent memory, and hybrids whose
    /// attention keeps a sliding window, are not paged; none of them can be cut.)
    pub(super) fn unpaged_start(&self, prompt: &[TokenId]) -> UnpagedStart {
        if let Some(state) = self.prompt_state(prompt) {
            return UnpagedStart::State(state);
        }
        let limit = prompt.len().saturating_sub(1);
        let ids = self.checkpoint_ids(&prompt[..limit]);
        let mut best = UnpagedStart::Nothing;
        if let Some(m) = &self.saved {
            best = self.start_from(
                prompt,
                &ids,
                (&m.tokens, m.state.as_ref(), &m.checkpoints),
                0,
            );
        }
        if self.recompute_whole {
            return best;
        }
        let logs = self
            .saved_logs
            .as_ref()
            .and_then(|l| l.read(self.catalog).ok());
        for log in logs.iter().flatten().filter(|l| l.name != self.name) {
            let log_kv = (&log.tokens[..], log.state.as_ref(), &log.checkpoints[..]);
            let start = self.start_from(prompt, &ids, log_kv, best.len());
            if start.len() > best.len() {
                best = start;
            }
        }
        best
    }

    /// The start `prompt` gets from one saved log (`tokens`, its whole `state` at the end
    /// and its `checkpoints`), if longer than `beat`. `ids`: the checkpoint ids of the
    /// prompt's pages, so a checkpoint is taken only under the prompt's own name for it.
    fn start_from(
        &self,
        prompt: &[TokenId],
        ids: &[ObjectId],
        (tokens, state, checkpoints): (&[TokenId], Option<&StateCheckpoint>, &[StateCheckpoint]),
        beat: usize,
    ) -> UnpagedStart {
        let usable = common_prefix(tokens, prompt).min(prompt.len().saturating_sub(1));
        // The whole state, when it is this log's (checked last: it hashes the log).
        let valid_state = |min_len: usize| {
            state.filter(|s| {
                s.kv_len >= min_len
                    && !self.ledger.damaged.contains(&s.object)
                    && tokens
                        .get(..s.kv_len)
                        .is_some_and(|logged| self.key.state_id(logged) == s.object)
            })
        };
        let p = self.page_tokens;
        let Some(checkpoint) = checkpoints.iter().rev().find(|c| {
            c.kv_len <= usable
                && c.kv_len >= p
                && ids.get(c.kv_len / p - 1) == Some(&c.object)
                && !self.ledger.damaged.contains(&c.object)
        }) else {
            return UnpagedStart::Nothing;
        };
        if checkpoint.kv_len <= beat {
            return UnpagedStart::Nothing;
        }
        let checkpoint = checkpoint.clone();
        if !matches!(self.memory, MemoryKind::Hybrid { .. }) {
            return UnpagedStart::Checkpoint {
                state: None,
                checkpoint,
            };
        }
        match valid_state(checkpoint.kv_len) {
            Some(state) => UnpagedStart::Checkpoint {
                state: Some(state.clone()),
                checkpoint,
            },
            None => UnpagedStart::Nothing,
        }
    }

    /// Loads the longest start the store gives `prompt` into the session's empty sequence;
    /// one whose object turns out damaged is passed over for the next best (as many times
    /// as a log keeps checkpoints). Returns the tokens now in the cache.
    pub(super) fn load_unpaged_prefix(
        &mut self,
        ctx: &mut Context<'_>,
        prompt: &[TokenId],
        report: &mut RestoreReport,
    ) -> usize {
        for _ in 0..=MAX_CHECKPOINTS {
            let damaged = self.ledger.damaged.len();
            let start = self.unpaged_start(prompt);
            let loaded = self.load_unpaged(ctx, start, report);
            if loaded > 0 || self.ledger.damaged.len() == damaged {
                return loaded;
            }
        }
        0
    }

    /// Loads `start` into the session's empty sequence. Returns the tokens now in the
    /// cache (0: recompute; a warning says why).
    fn load_unpaged(
        &mut self,
        ctx: &mut Context<'_>,
        start: UnpagedStart,
        report: &mut RestoreReport,
    ) -> usize {
        let seq = self.slot.seq;
        let (state, checkpoint) = match start {
            UnpagedStart::Nothing => return 0,
            UnpagedStart::State(state) => return self.load_state(ctx, Some(state), report),
            UnpagedStart::Checkpoint { state, checkpoint } => (state, checkpoint),
        };
        if state.is_some() && self.load_state(ctx, state, report) == 0 {
            return 0;
        }
        let keep = checkpoint.kv_len;
        let back = match self.read_state_object(&checkpoint, "checkpoint", report) {
            Some(bytes) => ctx.load_checkpoint(seq, &self.window_as_run(bytes, 1, keep), keep),
            None => {
                ctx.clear_seq(seq);
                return 0;
            }
        };
        if back {
            return keep;
        }
        ctx.clear_seq(seq);
        report.warnings.push(format!(
            "session '{}': llama.cpp refused to go back to token {keep} of its saved state; \
             recomputing by prefill",
            self.name
        ));
        0
    }
}
