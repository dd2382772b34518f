//! What the chat tells its front ends about the state of things: the active conversation,
//! its context use, the sessions list, the memory tiers, and live figures while a reply
//! streams.

use std::time::{Duration, Instant};

use super::Chat;
use crate::chat::protocol::{EngineEvent, SessionRow, ShownMessage, Tier};

/// The live figures at most this often while a reply streams (the panel promises at least
/// once a second).
const LIVE_EVERY: Duration = Duration::from_millis(500);

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
        self.send(EngineEvent::Switched {
            session: self.active.name.clone(),
            history,
        });
    }

    pub(super) fn send_context(&self) {
        self.send(EngineEvent::Context {
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
                .map(|x| x.tier)
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
                    name: s.name,
                    tokens: s.tokens,
                    tier,
                    last_used_unix: s.updated_unix,
                });
            }
        }
        self.send(EngineEvent::Sessions(rows));
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
        self.send(EngineEvent::Memory(Box::new(snapshot)));
    }
}

/// The context's figures while a reply streams, from the engine's figures at the start of
/// the turn and the tokens since (asking the engine on every token would cost a round trip).
pub(super) struct LiveFigures {
    /// Cells other sequences hold, and bytes per cell.
    other_cells: u64,
    bytes_per_cell: f64,
    used: usize,
    last: Instant,
    page_tokens: u64,
}

impl LiveFigures {
    pub(super) fn new(chat: &Chat<'_, '_>, prompt_len: usize) -> Self {
        let own = chat.active.conversation.seq.kv_len() as u64;
        let (cells, bytes) = chat
            .service
            .stats_blocking()
            .map_or((0, 0), |s| (s.hot_cells_used, s.hot.used));
        Self {
            other_cells: cells.saturating_sub(own),
            bytes_per_cell: if cells > 0 {
                bytes as f64 / cells as f64
            } else {
                0.0
            },
            used: prompt_len,
            last: Instant::now(),
            page_tokens: chat.page_tokens.max(1) as u64,
        }
    }

    /// One more token in the log.
    pub(super) fn token(&mut self, chat: &Chat<'_, '_>) {
        self.used += 1;
        if self.last.elapsed() < LIVE_EVERY {
            return;
        }
        self.last = Instant::now();
        let cells = self.other_cells + self.used as u64;
        chat.send(EngineEvent::Live {
            used: self.used,
            hot_cells: cells,
            hot_bytes: (cells as f64 * self.bytes_per_cell) as u64,
            hot_pages: cells / self.page_tokens,
        });
    }
}
