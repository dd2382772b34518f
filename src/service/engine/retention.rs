//! Keeping the cold tier under its budget, and the session commands (remove, pin).

use super::Engine;
use crate::llama::Context;
use crate::service::protocol::ServiceError;
use crate::session::SessionError;
use crate::tiers::evict::{next_victim, Candidate};

impl<'c, 'm> Engine<'c, 'm> {
    /// Past the cold budget, removes unnamed sessions, least recently used first, until the
    /// store fits (or only sessions that must stay are left).
    pub(super) fn enforce_cold_budget(&mut self, ctx: &mut Context<'m>) {
        let Some(budget) = self.tiers.cold_budget else {
            return;
        };
        loop {
            let used = match self.catalog.store().usage() {
                Ok((_, used)) => used,
                Err(e) => {
                    tracing::warn!("measuring the cold tier failed: {e}");
                    return;
                }
            };
            if used <= budget {
                return;
            }
            let victim =
                {
                    let mut candidates: Vec<Candidate<'_>> = self
                        .conversations
                        .iter()
                        .map(|o| Candidate {
                            name: &o.live.name,
                            named: o.named,
                            pinned: o.pinned,
                            busy: o.is_busy(),
                            last_used_unix: o.last_used_unix,
                        })
                        .collect();
                    candidates.extend(self.conversations.stored_unnamed().iter().map(|s| {
                        Candidate {
                            name: &s.name,
                            named: false,
                            pinned: s.pinned,
                            busy: false,
                            last_used_unix: s.updated_unix,
                        }
                    }));
                    next_victim(&candidates).map(str::to_string)
                };
            let Some(victim) = victim else {
                // gc keeps what manifests name: the commits in flight must have landed.
                self.wait_for_all_commits();
                if let Err(e) = self.catalog.gc() {
                    tracing::warn!("collecting unused pages failed: {e}");
                }
                self.forget_unnamed_writes();
                tracing::warn!(
                    "the cold tier holds {used} bytes that named or pinned sessions need, over \
                     its {budget}-byte budget"
                );
                return;
            };
            tracing::info!("cold budget: removing unnamed session '{victim}'");
            if let Err(e) = self.remove_session(ctx, &victim) {
                tracing::warn!("removing session '{victim}' failed: {e}");
                return;
            }
        }
    }

    /// Releases session `name` (its sequence and lock) and removes it from the catalog.
    pub(super) fn remove_session(
        &mut self,
        ctx: &mut Context<'m>,
        name: &str,
    ) -> Result<(), ServiceError> {
        if let Some(i) = self.conversations.find(name) {
            if self.conversations[i].is_busy() {
                return Err(ServiceError::SessionInUse {
                    name: name.to_string(),
                    detail: "a request is decoding in it".into(),
                });
            }
            // (Dropping it waits for its own commits before its lock goes.)
            self.conversations.close(ctx, i);
        }
        self.conversations.forget_stored(name);
        // The removal's gc keeps what manifests name: the others' commits land first.
        self.wait_for_all_commits();
        let removed = self.catalog.remove(name);
        self.forget_unnamed_writes();
        match removed {
            Ok(report) => {
                if let Err(e) = report.gc {
                    tracing::warn!("collecting the pages of '{name}' failed: {e}");
                }
                Ok(())
            }
            Err(e @ SessionError::InUse { .. }) => Err(ServiceError::SessionInUse {
                name: name.to_string(),
                detail: e.to_string(),
            }),
            Err(e) => Err(ServiceError::Internal(e.to_string())),
        }
    }

    /// Pins or unpins a session, open here or only on disk.
    pub(super) fn pin_session(&mut self, name: &str, pinned: bool) -> Result<(), ServiceError> {
        let internal =
            |e: crate::session::LiveError| ServiceError::Internal(crate::format::one_line_of(&e));
        if let Some(i) = self.conversations.find(name) {
            let open = &mut self.conversations[i];
            open.live.set_pinned(pinned).map_err(internal)?;
            open.pinned = pinned;
            return Ok(());
        }
        self.catalog.set_pinned(name, pinned).map_err(|e| match e {
            SessionError::InUse { .. } => ServiceError::SessionInUse {
                name: name.to_string(),
                detail: e.to_string(),
            },
            other => ServiceError::Internal(other.to_string()),
        })?;
        self.conversations.set_stored_pinned(name, pinned);
        Ok(())
    }
}
