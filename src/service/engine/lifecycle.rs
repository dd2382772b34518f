//! The session commands a chat front end sends besides its requests: open a session and
//! make it hot (a switch), save it now with its transcript, empty it, fork it. Whatever
//! the front end, a session is opened, locked, checked, restored and saved here.

use std::time::Instant;

use tokio::sync::oneshot;

use super::stats::restored_by_tier;
use super::Engine;
use crate::llama::Context;
use crate::sequence::Sequence;
use crate::service::handle::{Opened, Saved};
use crate::service::protocol::{CachedTokens, ServiceError, Transcript};
use crate::session::capture::Slot;
use crate::session::live::RestorePhases;
use crate::session::SessionError;
use crate::settings::SamplingSettings;

impl<'c, 'm> Engine<'c, 'm> {
    /// Opens session `name` (creating it when it does not exist) and loads its whole
    /// snapshot, the partial last page and the sliding window included, into a sequence of
    /// its own: its next request prefills only what it adds.
    pub(super) fn open_hot(
        &mut self,
        ctx: &mut Context<'m>,
        name: Option<&str>,
        sampling: SamplingSettings,
    ) -> Result<Opened, ServiceError> {
        let index = match name {
            Some(name) => match self.conversations.find(name) {
                Some(i) => i,
                None => self.open_session(ctx, name, true, sampling)?,
            },
            None => self.open_new_unnamed(ctx, sampling)?,
        };
        let name = self.conversations[index].live.name.clone();
        let name = name.as_str();
        if self.conversations[index].is_busy() {
            return Err(ServiceError::SessionInUse {
                name: name.to_string(),
                detail: "a request is decoding in it".into(),
            });
        }
        self.conversations[index].last_used = Instant::now();
        let started = Instant::now();
        let mut cached = CachedTokens::default();
        let mut warnings = Vec::new();
        let mut phases = RestorePhases::default();
        let mut decision = None;
        let open = &self.conversations[index];
        let has_snapshot = open
            .live
            .latest()
            .is_some_and(|m| m.snapshot.is_some() || m.state.is_some());
        if open.hot().is_some() {
            cached.hot = open.seq.kv_len();
        } else if let Some(seq_id) = has_snapshot.then(|| self.seq_for(ctx, index)).flatten() {
            // (With every sequence decoding, the session opens cold: its first request
            // restores it.)
            let others_empty = self
                .conversations
                .iter()
                .enumerate()
                .all(|(i, o)| i == index || o.hot().is_none() || o.seq.kv_len() == 0);
            let before = self.warm.stats();
            self.conversations.place(index, seq_id);
            let open = &mut self.conversations[index];
            ctx.clear_seq(seq_id);
            open.live.set_slot(Slot {
                seq: seq_id,
                scratch: self.parallel as i32,
                exclusive: others_empty,
            });
            let restored = open.live.restore(ctx);
            let (seq, report) = match restored {
                Ok(done) => done,
                Err(e) => {
                    self.conversations.cool(ctx, index);
                    return Err(ServiceError::Internal(crate::format::one_line_of(&e)));
                }
            };
            open.seq = seq;
            open.live.set_slot(Slot {
                seq: seq_id,
                scratch: self.parallel as i32,
                exclusive: false,
            });
            warnings = report.warnings;
            phases = report.phases;
            decision = report.decision;
            cached = restored_by_tier(&before, &self.warm.stats(), report.restored_tokens);
            self.counters.record_restore(cached);
        }
        let open = &self.conversations[index];
        // What the client saved last (its commit may still be on the writer).
        let saved = open.live.latest();
        Ok(Opened {
            session: name.to_string(),
            log: open.seq.tokens().to_vec(),
            transcript: saved.map_or_else(Transcript::default, |m| Transcript {
                messages: m.messages.clone(),
                rendered_len: m.rendered_len,
                raw: m.raw,
                cache_miss: m.cache_miss.clone(),
            }),
            template: saved.and_then(|m| m.chat_template.clone()),
            cached,
            restore_ms: started.elapsed().as_secs_f64() * 1e3,
            phases,
            decision,
            warnings,
        })
    }

    /// A free context sequence for conversation `index`, cooling the least recently used
    /// idle one when none is free; none while every sequence is decoding.
    fn seq_for(&mut self, ctx: &mut Context<'m>, index: usize) -> Option<i32> {
        if self.conversations.free_seq(self.parallel).is_none() {
            let victim = self.conversations.coolest(index)?;
            self.conversations.cool(ctx, victim);
        }
        self.conversations.free_seq(self.parallel)
    }

    /// Empties session `name`: its cells leave the context and its log restarts at nothing;
    /// the save records `transcript` (a chat keeps its system prompt).
    pub(super) fn reset(
        &mut self,
        ctx: &mut Context<'m>,
        name: &str,
        transcript: Transcript,
        reply: oneshot::Sender<Result<Saved, ServiceError>>,
    ) {
        // Not open here, or busy: `save_now` gives the client that same refusal.
        let Ok(index) = self.open_index(name) else {
            return self.save_now(ctx, name, transcript, reply);
        };
        let open = &mut self.conversations[index];
        if let Some(seq) = open.hot() {
            ctx.clear_seq(seq);
            open.seq = Sequence::new().in_seq(seq);
        } else {
            open.seq = Sequence::new();
        }
        open.prompt_len = 0;
        open.live.set_prompt_tokens(0);
        self.save_now(ctx, name, transcript, reply);
    }

    /// Saves `from` and copies its manifest to a new session `to` (their pages are shared).
    /// This engine holds `from`'s lock, so the copy is made here rather than by
    /// `SessionCatalog::fork`, which takes both locks itself.
    pub(super) fn fork(
        &mut self,
        ctx: &mut Context<'m>,
        from: &str,
        to: &str,
    ) -> Result<(), ServiceError> {
        let refused = |e: SessionError| match e {
            SessionError::InUse { .. } => ServiceError::SessionInUse {
                name: to.to_string(),
                detail: e.to_string(),
            },
            SessionError::InvalidName { .. } | SessionError::Exists { .. } => {
                ServiceError::Refused(e.to_string())
            }
            other => ServiceError::Internal(other.to_string()),
        };
        crate::session::name::validate_name(to)
            .map_err(|e| ServiceError::Refused(e.to_string()))?;
        let index = self.open_index(from)?;
        // The copy names what is on disk: the commits in flight land first.
        self.wait_for_commits_of(index);
        let open = &mut self.conversations[index];
        if open.live.saved().is_none() {
            let template = open.live.latest().and_then(|m| m.chat_template.clone());
            let transcript = Transcript::default();
            open.live
                .save(ctx, &open.seq, transcript.state(template))
                .map_err(|e| ServiceError::Internal(crate::format::one_line_of(&e)))?;
        }
        let open = &self.conversations[index];
        let mut manifest = open.live.saved().cloned().ok_or_else(|| {
            ServiceError::Internal(format!("session '{from}' has no saved state"))
        })?;
        let _lock = self.catalog.lock(to).map_err(refused)?;
        if self.catalog.exists(to).map_err(refused)? {
            return Err(refused(SessionError::Exists { name: to.into() }));
        }
        manifest.name = to.to_string();
        manifest.unnamed = false;
        manifest.pinned = false;
        let _store = self
            .catalog
            .store()
            .lock_shared()
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.catalog.write_manifest(&manifest).map_err(refused)?;
        Ok(())
    }

    /// The conversation open under `name`, idle.
    pub(super) fn open_index(&self, name: &str) -> Result<usize, ServiceError> {
        let index = self.conversations.find(name).ok_or_else(|| {
            ServiceError::Refused(format!("session '{name}' is not open in this engine"))
        })?;
        if self.conversations[index].is_busy() {
            return Err(ServiceError::SessionInUse {
                name: name.to_string(),
                detail: "a request is decoding in it".into(),
            });
        }
        Ok(index)
    }
}
