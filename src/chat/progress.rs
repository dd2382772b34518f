//! What the engine reports while a turn runs: prefill progress, live context and hot-tier
//! figures while tokens stream, and the stop flag it watches between decodes.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::chat::protocol::{EngineEvent, ProgressKind};
use crate::engine::{Context, EngineError};
use crate::sequence::SyncObserver;

/// Prefill progress at most this often...
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// ...and the live figures this often (the panel promises at least once a second).
const LIVE_EVERY: Duration = Duration::from_millis(500);

/// The hot tier apart from the sequence being generated, fixed for the turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct OtherHot {
    pub tokens: u64,
    pub bytes: u64,
}

/// Prefill progress and live figures as events, and Ctrl-C (or a quit) as a stop.
pub struct TurnEvents<'a> {
    events: &'a Sender<EngineEvent>,
    cancel: &'a AtomicBool,
    started: Instant,
    last_progress: Instant,
    last_live: Instant,
    others: OtherHot,
    page_tokens: u64,
}

impl<'a> TurnEvents<'a> {
    pub fn new(
        events: &'a Sender<EngineEvent>,
        cancel: &'a AtomicBool,
        others: OtherHot,
        page_tokens: u64,
    ) -> Self {
        let now = Instant::now();
        Self {
            events,
            cancel,
            started: now,
            last_progress: now,
            last_live: now,
            others,
            page_tokens: page_tokens.max(1),
        }
    }
}

impl SyncObserver for TurnEvents<'_> {
    fn progress(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        if self.last_progress.elapsed() >= PROGRESS_EVERY || done >= total {
            self.last_progress = Instant::now();
            let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
            let _ = self.events.send(EngineEvent::Progress {
                kind: ProgressKind::Prefill,
                done: done as u64,
                total: total as u64,
                rate,
            });
        }
        if self.cancel.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn decoded(&mut self, ctx: &Context<'_>, seq: i32, kv_len: usize) {
        if self.last_live.elapsed() < LIVE_EVERY {
            return;
        }
        self.last_live = Instant::now();
        let cells = self.others.tokens + kv_len as u64;
        let _ = self.events.send(EngineEvent::Live {
            used: kv_len,
            hot_cells: cells,
            hot_bytes: self.others.bytes + ctx.state_size(seq) as u64,
            hot_pages: cells / self.page_tokens,
        });
    }

    fn page_filled(
        &mut self,
        _ctx: &mut Context<'_>,
        _positions: std::ops::Range<usize>,
    ) -> Result<(), EngineError> {
        Ok(())
    }
}
