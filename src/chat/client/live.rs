//! Live figures while a reply streams: the context's use, estimated from the engine's
//! figures at the start of the turn and the tokens since (asking the engine on every token
//! would cost a round trip).

use std::time::{Duration, Instant};

use crate::chat::protocol::ChatEvent;

/// The live figures at most this often while a reply streams (the panel promises at least
/// once a second).
const LIVE_EVERY: Duration = Duration::from_millis(500);

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
    /// From the engine's figures at the start of the turn (`hot`: cells and bytes in use),
    /// the conversation's own cells then, and the prompt's length.
    pub(super) fn new(
        hot: Option<(u64, u64)>,
        own: u64,
        prompt_len: usize,
        page_tokens: usize,
    ) -> Self {
        let (cells, bytes) = hot.unwrap_or((0, 0));
        Self {
            other_cells: cells.saturating_sub(own),
            bytes_per_cell: if cells > 0 {
                bytes as f64 / cells as f64
            } else {
                0.0
            },
            used: prompt_len,
            last: Instant::now(),
            page_tokens: page_tokens.max(1) as u64,
        }
    }

    /// One more token in the log; the event to send when it is time for one.
    pub(super) fn token(&mut self) -> Option<ChatEvent> {
        self.used += 1;
        if self.last.elapsed() < LIVE_EVERY {
            return None;
        }
        self.last = Instant::now();
        let cells = self.other_cells + self.used as u64;
        Some(ChatEvent::Live {
            used: self.used,
            hot_cells: cells,
            hot_bytes: (cells as f64 * self.bytes_per_cell) as u64,
            hot_pages: cells / self.page_tokens,
        })
    }
}
