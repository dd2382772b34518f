//! What the engine tells its front ends about the state of things: the active
//! conversation, its context use, the sessions list and the memory tiers.

use super::*;

impl<'m> Engine<'_, 'm, '_> {
    pub(super) fn send_switched(&self) {
        let open = &self.hot[self.active];
        self.send(EngineEvent::Switched {
            session: open.name.clone().unwrap_or_default(),
            history: open
                .conversation
                .messages
                .iter()
                .map(|m| ShownMessage {
                    role: m.role.clone(),
                    content: m.content.clone(),
                })
                .collect(),
        });
    }

    pub(super) fn send_context(&self) {
        let open = &self.hot[self.active];
        self.send(EngineEvent::Context {
            used: open.conversation.seq.len(),
            n_ctx: self
                .options
                .engine
                .ctx_size
                .min(self.model.facts().n_ctx_train),
        });
    }

    pub(super) fn send_sessions(&self) {
        let mut rows = Vec::new();
        let hot: Vec<&str> = self.hot.iter().filter_map(|o| o.name.as_deref()).collect();
        let active = self.hot[self.active].name.as_deref();
        if let Ok(list) = self.catalog.list() {
            for s in list {
                let tier = if hot.contains(&s.name.as_str()) {
                    Tier::Hot
                } else if self.book.warm_sessions.contains(&s.name) {
                    Tier::Warm
                } else if s.kv_tokens > 0 {
                    Tier::Cold
                } else {
                    Tier::Prefill
                };
                rows.push(SessionRow {
                    active: Some(s.name.as_str()) == active,
                    name: s.name,
                    tokens: s.tokens,
                    tier,
                    last_used_unix: s.updated_unix,
                });
            }
        }
        self.send(EngineEvent::Sessions(rows));
    }

    pub(super) fn send_memory(&mut self, ctx: &Context<'m>) {
        let tokens: usize = self.hot.iter().map(|o| o.conversation.seq.kv_len()).sum();
        let bytes: u64 = self.hot.iter().map(|o| ctx.state_size(o.seq) as u64).sum();
        let hot = HotView {
            sessions: self.hot.iter().filter_map(|o| o.name.clone()).collect(),
            tokens: tokens as u64,
            bytes,
            capacity_tokens: ctx.info().n_ctx as u64,
            page_tokens: ctx.info().page_tokens as u64,
        };
        let snapshot = self.book.snapshot(
            &self.options.paths,
            hot,
            &self.warm,
            self.catalog,
            self.options.tiers.cold_budget,
        );
        self.send(EngineEvent::Memory(Box::new(snapshot)));
    }
}
