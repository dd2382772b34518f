//! What the chat tells its front ends about the state of things: the active conversation,
//! its context use, the sessions list and the memory tiers.

use super::Chat;
use crate::chat::protocol::{ChatEvent, SessionRow, ShownMessage, Tier};

impl Chat<'_, '_> {
    pub(super) fn send_switched(&self) {
        let history = self
            .active
            .conversation
            .messages
            .iter()
            .map(|m| ShownMessage {
                role: m.role.clone(),
                content: m.content.clone(),
            })
            .collect();
        self.send(ChatEvent::Switched {
            session: self.active.name.clone(),
            history,
        });
    }

    pub(super) fn send_context(&self) {
        self.send(ChatEvent::Context {
            used: self.active.conversation.seq.len(),
            n_ctx: self.n_ctx as u32,
        });
    }

    pub(super) fn send_sessions(&self) {
        let stats = self.service.stats_blocking().ok();
        let tier_of = |name: &str| {
            stats
                .as_ref()
                .and_then(|s| s.sessions.iter().find(|x| x.name == name))
                .map(|x| x.tier.as_ref())
        };
        let mut rows = Vec::new();
        if let Ok(list) = self.catalog.list() {
            for s in list {
                let tier = match tier_of(&s.name) {
                    Some("hot") => Tier::Hot,
                    Some("warm") => Tier::Warm,
                    _ if s.kv_tokens > 0 => Tier::Cold,
                    _ => Tier::Prefill,
                };
                rows.push(SessionRow {
                    active: s.name == self.active.name,
                    ..SessionRow::new(s, tier)
                });
            }
        }
        self.send(ChatEvent::Sessions(rows));
    }

    pub(super) fn send_memory(&mut self) {
        let Ok(stats) = self.service.stats_blocking() else {
            return;
        };
        let snapshot = self.book.snapshot(
            &self.options.paths,
            &stats,
            &self.catalog,
            self.page_tokens as u64,
        );
        self.send(ChatEvent::Memory(Box::new(snapshot)));
    }
}
