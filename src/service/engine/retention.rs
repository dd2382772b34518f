//! Keeping the cold tier under its budget, and the session commands (remove, pin).

use super::Engine;
use crate::engine::Context;
use crate::service::protocol::ServiceError;
use crate::session::SessionError;

/// A session as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub named: bool,
    pub pinned: bool,
    /// A request is decoding in it.
    pub busy: bool,
    pub last_used_unix: u64,
}

/// The session to collect next: the least recently used unnamed one that is neither pinned
/// nor in use. Named sessions are never collected.
pub fn next_victim<'a>(candidates: &[Candidate<'a>]) -> Option<&'a str> {
    candidates
        .iter()
        .filter(|c| !c.named && !c.pinned && !c.busy)
        .min_by_key(|c| (c.last_used_unix, c.name))
        .map(|c| c.name)
}

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
            let victim = {
                let mut candidates: Vec<Candidate<'_>> = self
                    .conversations
                    .iter()
                    .map(|o| Candidate {
                        name: &o.live.name,
                        named: o.named,
                        pinned: o.pinned,
                        busy: o.busy,
                        last_used_unix: o.last_used_unix,
                    })
                    .collect();
                candidates.extend(self.stored_unnamed.iter().map(|s| Candidate {
                    name: &s.name,
                    named: false,
                    pinned: s.pinned,
                    busy: false,
                    last_used_unix: s.updated_unix,
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
        if let Some(i) = self.find(name) {
            if self.conversations[i].busy {
                return Err(ServiceError::SessionInUse {
                    name: name.to_string(),
                    detail: "a request is decoding in it".into(),
                });
            }
            self.cool(ctx, i);
            // (Dropping it waits for its own commits before its lock goes.)
            self.conversations.remove(i);
        }
        self.stored_unnamed.retain(|s| s.name != name);
        self.stored_members.retain(|s| s.name != name);
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
        if let Some(i) = self.find(name) {
            let open = &mut self.conversations[i];
            open.live.set_pinned(pinned).map_err(internal)?;
            open.pinned = pinned;
            return Ok(());
        }
        let in_use = |e: SessionError| match e {
            SessionError::InUse { .. } => ServiceError::SessionInUse {
                name: name.to_string(),
                detail: e.to_string(),
            },
            other => ServiceError::Internal(other.to_string()),
        };
        let _lock = self.catalog.lock(name).map_err(in_use)?;
        let mut manifest = self.catalog.read_manifest(name).map_err(in_use)?;
        manifest.pinned = pinned;
        let _store = self
            .catalog
            .store()
            .lock_shared()
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.catalog.write_manifest(&manifest).map_err(in_use)?;
        for s in self.stored_unnamed.iter_mut().filter(|s| s.name == name) {
            s.pinned = pinned;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, named: bool, pinned: bool, busy: bool, t: u64) -> Candidate<'_> {
        Candidate {
            name,
            named,
            pinned,
            busy,
            last_used_unix: t,
        }
    }

    #[test]
    fn the_least_recently_used_unnamed_session_goes_first() {
        let list = [
            c("anon-b", false, false, false, 20),
            c("anon-a", false, false, false, 10),
            c("anon-c", false, false, false, 30),
        ];
        assert_eq!(next_victim(&list), Some("anon-a"));
    }

    #[test]
    fn named_pinned_and_busy_sessions_are_never_collected() {
        let list = [
            c("work", true, false, false, 1),
            c("anon-p", false, true, false, 2),
            c("anon-busy", false, false, true, 3),
        ];
        assert_eq!(next_victim(&list), None);
        let mut more = list.to_vec();
        more.push(c("anon-old", false, false, false, 99));
        assert_eq!(next_victim(&more), Some("anon-old"));
    }
}
