//! Routing: which conversation a request continues (by name, by family, or by content for
//! an anonymous prompt), and opening (and locking) its session.

use super::conversations::{Open, StoredLog, Target};

use super::prefix::common_prefix;
use super::Engine;
use crate::llama::{Context, TokenId};
use crate::sequence::Sequence;
use crate::service::protocol::{ConversationKey, ServiceError};
use crate::session::family::{member_index, member_name, next_member};
use crate::session::SessionError;
use crate::settings::SamplingSettings;

impl<'c, 'm> Engine<'c, 'm> {
    /// Notes the unnamed sessions of this model on disk, so that an anonymous prompt can
    /// continue one after a restart. The store itself is the index of their pages.
    pub(super) fn index_stored_sessions(&mut self) {
        let Ok(list) = self.catalog.list() else {
            return;
        };
        for summary in list.into_iter().filter(|s| s.error.is_none()) {
            let Ok(m) = self.catalog.read_manifest(&summary.name) else {
                continue;
            };
            if m.unnamed && m.model.fingerprint == self.sessions.model().fingerprint {
                self.conversations.note_stored_unnamed(StoredLog {
                    name: m.name,
                    tokens: m.tokens,
                    prompt_tokens: m.prompt_tokens,
                    pinned: m.pinned,
                    updated_unix: m.updated_unix,
                });
            }
        }
    }

    /// Finds or opens the conversation for `key` and `prompt`.
    pub(super) fn target(
        &mut self,
        ctx: &Context<'m>,
        key: &ConversationKey,
        prompt: &[TokenId],
    ) -> Result<Target, ServiceError> {
        match key {
            ConversationKey::Named(name) => {
                if let Some(i) = self.conversations.find(name) {
                    return Ok(if self.conversations[i].is_busy() {
                        Target::Busy
                    } else {
                        Target::Open(i)
                    });
                }
                let sampling = crate::settings::SamplingSettings::greedy();
                self.open_session(ctx, name, true, sampling)
                    .map(Target::Open)
            }
            ConversationKey::Family(family) => self.family_target(ctx, family, prompt),
            ConversationKey::Anonymous => {
                let open = self
                    .conversations
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| !o.named && !o.is_busy())
                    .map(|(i, o)| (i, common_prefix(o.seq.tokens(), prompt), o.prompt_len))
                    .filter(|&(_, common, len)| common > 0 && common >= len)
                    .max_by_key(|&(_, common, _)| common);
                let stored = self
                    .conversations
                    .stored_unnamed()
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i, common_prefix(&s.tokens, prompt), s.prompt_tokens))
                    .filter(|&(_, common, len)| common > 0 && common >= len)
                    .max_by_key(|&(_, common, _)| common);
                match (open, stored) {
                    (Some((i, a, _)), Some((_, b, _))) if a >= b => Ok(Target::Open(i)),
                    (Some((i, _, _)), None) => Ok(Target::Open(i)),
                    (_, Some((j, _, _))) => {
                        let name = self.conversations.take_stored_unnamed(j).name;
                        let greedy = crate::settings::SamplingSettings::greedy;
                        match self.open_session(ctx, &name, false, greedy()) {
                            Ok(i) => Ok(Target::Open(i)),
                            // Someone else holds it now: start a new conversation.
                            Err(_) => self.open_new_unnamed(ctx, greedy()).map(Target::Open),
                        }
                    }
                    (None, None) => self
                        .open_new_unnamed(ctx, crate::settings::SamplingSettings::greedy())
                        .map(Target::Open),
                }
            }
        }
    }

    /// The member of `family` that `prompt` continues (see [`crate::session::family`]): of
    /// those whose log it extends, the one it extends furthest. When that is a member
    /// decoding now (the prompt is its next turn), the request waits for it. A prompt that
    /// extends no member starts a new one, so members never overwrite each other and run
    /// side by side.
    fn family_target(
        &mut self,
        ctx: &Context<'m>,
        family: &str,
        prompt: &[TokenId],
    ) -> Result<Target, ServiceError> {
        self.index_family(family);
        let open = self
            .conversations
            .iter()
            .enumerate()
            .filter(|(_, o)| member_index(&o.live.name, family).is_some())
            .filter_map(|(i, o)| {
                // A member decoding now covers its whole prompt in flight.
                let covered = if o.is_busy() {
                    self.schedule.in_flight_prompt_len(&o.live.name)
                } else {
                    o.prompt_len
                };
                let common = common_prefix(o.seq.tokens(), prompt);
                (common >= covered).then_some((i, common, o.is_busy()))
            })
            .max_by_key(|&(_, common, busy)| (common, busy));
        let stored = self
            .conversations
            .stored_members()
            .iter()
            .enumerate()
            .filter(|(_, s)| member_index(&s.name, family).is_some())
            .map(|(j, s)| (j, common_prefix(&s.tokens, prompt), s.prompt_tokens))
            .filter(|&(_, common, covered)| common >= covered)
            .max_by_key(|&(_, common, _)| common);
        let greedy = crate::settings::SamplingSettings::greedy;
        // An open member wins a tie with a stored one (no read from disk).
        let open_wins = match (open, stored) {
            (Some((_, a, _)), Some((_, b, _))) => a >= b,
            (open, _) => open.is_some(),
        };
        match (open, stored) {
            (Some((i, _, busy)), _) if open_wins => {
                Ok(if busy { Target::Busy } else { Target::Open(i) })
            }
            (_, Some((j, _, _))) => {
                let name = self.conversations.take_stored_member(j).name;
                self.open_session(ctx, &name, true, greedy())
                    .map(Target::Open)
            }
            _ => {
                let taken = self
                    .conversations
                    .iter()
                    .filter_map(|o| member_index(&o.live.name, family))
                    .chain(self.family_numbers(family));
                let name = member_name(family, next_member(taken));
                self.open_session(ctx, &name, true, greedy())
                    .map(Target::Open)
            }
        }
    }

    /// Notes the stored members of `family` this server has not opened (once per family),
    /// so that a request after a restart continues the one its prompt extends.
    fn index_family(&mut self, family: &str) {
        if !self.conversations.mark_family_indexed(family) {
            return;
        }
        let Ok(members) = self.catalog.family_members(family) else {
            return;
        };
        for (_, name) in members {
            if self.conversations.find(&name).is_some() {
                continue;
            }
            let Ok(m) = self.catalog.read_manifest(&name) else {
                continue;
            };
            if m.model.fingerprint == self.sessions.model().fingerprint {
                self.conversations.note_stored_member(StoredLog {
                    name: m.name,
                    tokens: m.tokens,
                    prompt_tokens: m.prompt_tokens,
                    pinned: m.pinned,
                    updated_unix: m.updated_unix,
                });
            }
        }
    }

    /// The member numbers of `family` on disk (of any model: a new member takes none).
    fn family_numbers(&self, family: &str) -> Vec<usize> {
        self.catalog
            .family_members(family)
            .map(|members| members.into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default()
    }

    pub(super) fn open_new_unnamed(
        &mut self,
        ctx: &Context<'m>,
        sampling: SamplingSettings,
    ) -> Result<usize, ServiceError> {
        loop {
            let name = generated_name();
            if self.conversations.find(&name).is_none()
                && !self.catalog.exists(&name).unwrap_or(true)
            {
                return self.open_session(ctx, &name, false, sampling);
            }
        }
    }

    /// Locks session `name`, reads it if it exists and checks it fits this server. A new
    /// session records `sampling`.
    pub(super) fn open_session(
        &mut self,
        ctx: &Context<'m>,
        name: &str,
        named: bool,
        sampling: SamplingSettings,
    ) -> Result<usize, ServiceError> {
        let incompatible = |detail: String| ServiceError::Incompatible {
            name: name.to_string(),
            detail,
        };
        let (lock, manifest) = self.catalog.lock_and_read(name).map_err(|e| match e {
            SessionError::InUse { .. } => ServiceError::SessionInUse {
                name: name.to_string(),
                detail: e.to_string(),
            },
            SessionError::Io { .. } | SessionError::Store(_) | SessionError::DiskFull { .. } => {
                ServiceError::Internal(e.to_string())
            }
            e @ SessionError::InvalidName { .. } => ServiceError::Refused(e.to_string()),
            // A manifest this server cannot use (corrupt, too new).
            other => incompatible(other.to_string()),
        })?;
        // The log's recorded batches come along: whatever of it is recomputed (all of it,
        // for a memory kvrun does not page) replays them and comes out bit-identical.
        let (seq, unnamed, pinned, prompt_len) =
            manifest
                .as_ref()
                .map_or((Sequence::new(), !named, false, 0), |m| {
                    let seq = Sequence::restored(m.tokens.clone(), 0)
                        .with_batch_starts(m.replay_starts());
                    (seq, m.unnamed, m.pinned, m.prompt_tokens)
                });
        self.conversations.forget_stored(name);
        let mut live = self.sessions.open(name, lock, manifest, sampling);
        live.check_compatible(ctx)
            .map_err(|e| incompatible(e.to_string()))?;
        live.set_unnamed(unnamed);
        Ok(self
            .conversations
            .add(Open::new(live, seq, !unnamed, pinned, prompt_len)))
    }
}

/// `anon-` and 16 hex digits from the clock, the process and a counter.
fn generated_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = crate::clock::unix_nanos();
    let mut hasher = blake3::Hasher::new();
    hasher.update(&nanos.to_le_bytes());
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    format!("anon-{}", &hasher.finalize().to_hex()[..16])
}
