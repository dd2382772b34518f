//! The elastic hot tier (`--ctx-size auto`): the llama.cpp context holds cells for the
//! tokens that are live, not for the longest conversations the server could take. It
//! starts at [`FLOOR_PAGES_PER_SEQUENCE`] pages per decoding sequence, doubles (up to its
//! ceiling) when an admission or a batch step needs more cells than it has, and goes back to
//! the floor once every conversation has left it (after `hot_idle`, see [`Engine::idle`]).
//!
//! A resize creates the new context, then moves every hot sequence into it as llama.cpp's
//! own sequence state, copied in RAM. The cells come back byte for byte and in their order,
//! unfinished page included, so a conversation decodes on as if the context had always
//! been that size. Restoring from pages instead would decode the unfinished page's tokens
//! again in other batch shapes, whose sums round differently.

use std::time::{Duration, Instant};

use super::Engine;
use crate::engine::{Context, EngineError, KvCapture};
use crate::sequence::Sequence;
use crate::service::handle::ResizePhases;
use crate::settings::EngineSettings;

/// Pages per decoding sequence an elastic context starts with (and shrinks back to).
pub const FLOOR_PAGES_PER_SEQUENCE: u32 = 2;

/// How the engine sizes its llama.cpp context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSizing {
    /// `engine.ctx_size` cells, allocated at start.
    Fixed,
    /// From the floor up to `ceiling` cells as the live tokens need (None: the model's
    /// training context).
    Elastic { ceiling: Option<u32> },
}

/// The context's current size against what it may grow to, and what resizing cost.
pub(super) struct Sizing {
    /// Settings every context is created with; `ctx_size` is set per resize.
    settings: EngineSettings,
    page_tokens: u32,
    n_seq_max: u32,
    elastic: bool,
    floor: u32,
    /// The most cells a conversation may use (the fixed size when not elastic).
    pub ceiling: u32,
    pub resizes: u64,
    pub last_pause: Duration,
    pub last_phases: ResizePhases,
}

impl Sizing {
    /// The sizing for `parallel` decoding sequences, and the cells to create the first
    /// context with.
    pub fn new(
        sizing: ContextSizing,
        settings: &EngineSettings,
        n_ctx_train: u32,
        page_tokens: u32,
        parallel: u32,
    ) -> Self {
        let trained = n_ctx_train.max(1);
        let (elastic, floor, ceiling) = match sizing {
            ContextSizing::Fixed => {
                let cells = settings.ctx_size.min(trained);
                (false, cells, cells)
            }
            ContextSizing::Elastic { ceiling } => {
                let ceiling = ceiling.unwrap_or(trained).min(trained);
                let floor = (FLOOR_PAGES_PER_SEQUENCE * page_tokens).saturating_mul(parallel);
                (true, floor.min(ceiling), ceiling)
            }
        };
        Self {
            settings: settings.clone(),
            page_tokens,
            n_seq_max: parallel + 1,
            elastic,
            floor,
            ceiling,
            resizes: 0,
            last_pause: Duration::ZERO,
            last_phases: ResizePhases::default(),
        }
    }

    /// Settings for a context of `cells` cells.
    fn settings_for(&self, cells: u32) -> EngineSettings {
        EngineSettings {
            ctx_size: cells,
            ..self.settings.clone()
        }
    }

    /// The first context: the floor when elastic, else the fixed size (which then is
    /// what llama.cpp gave).
    pub fn create<'m>(
        &mut self,
        model: &'m crate::engine::Model,
    ) -> Result<Context<'m>, EngineError> {
        let ctx = Context::new(
            model,
            &self.settings_for(self.floor),
            self.page_tokens,
            self.n_seq_max,
        )?;
        if !self.elastic {
            self.floor = ctx.info().n_ctx;
            self.ceiling = self.floor;
        }
        Ok(ctx)
    }
}

/// The size a context of `current` cells grows to so that `needed` fit: doubled until they
/// do, at most `ceiling`. None when it is at its ceiling already.
pub fn grown_cells(current: u32, needed: usize, ceiling: u32) -> Option<u32> {
    if current >= ceiling {
        return None;
    }
    let mut cells = current.max(1);
    while (cells as usize) < needed && cells < ceiling {
        cells = cells.saturating_mul(2);
    }
    Some(cells.min(ceiling))
}

impl<'c, 'm> Engine<'c, 'm> {
    /// Cells a conversation may fill: the ceiling of an elastic context.
    pub(super) fn max_cells(&self) -> usize {
        self.sizing.ceiling as usize
    }

    /// Grows an elastic context so that `needed` cells fit, as far as its ceiling allows.
    /// When the larger context cannot be created the old one stays, and the caller makes
    /// room as in a fixed context.
    pub(super) fn grow_for(&mut self, ctx: &mut Context<'m>, needed: usize) {
        let current = ctx.info().n_ctx;
        if !self.sizing.elastic || needed <= current as usize {
            return;
        }
        if let Some(cells) = grown_cells(current, needed, self.sizing.ceiling) {
            if let Err(e) = self.resize(ctx, cells) {
                tracing::warn!("growing the context to {cells} cells failed: {e}");
            }
        }
    }

    /// Back to the floor once no conversation is hot (they left after `hot_idle`).
    pub(super) fn shrink_when_empty(&mut self, ctx: &mut Context<'m>) {
        let empty = self.active.is_empty() && self.conversations.iter().all(|o| o.hot.is_none());
        if self.sizing.elastic && empty && ctx.info().n_ctx > self.sizing.floor {
            if let Err(e) = self.resize(ctx, self.sizing.floor) {
                tracing::warn!("shrinking the context failed: {e}");
            }
        }
    }

    /// Recreates the context with `cells` cells and moves every hot sequence into it. On
    /// an error before the new context exists, the old one is left as it was.
    fn resize(&mut self, ctx: &mut Context<'m>, cells: u32) -> Result<(), EngineError> {
        let started = Instant::now();
        let mut moving = Vec::new();
        for (index, open) in self.conversations.iter().enumerate() {
            if let Some(seq) = open.hot.filter(|_| open.seq.kv_len() > 0) {
                moving.push((index, seq, ctx.state_get(seq, KvCapture::Full)?));
            }
        }
        let captured = Instant::now();
        let settings = self.sizing.settings_for(cells);
        *ctx = Context::new(
            self.model,
            &settings,
            self.sizing.page_tokens,
            self.sizing.n_seq_max,
        )?;
        let created = Instant::now();
        for (index, seq, blob) in moving {
            let kv_len = self.conversations[index].seq.kv_len();
            let moved =
                ctx.state_set(seq, &blob, KvCapture::Full).is_ok() && ctx.seq_len(seq) == kv_len;
            if !moved {
                tracing::warn!(
                    "session '{}' could not move to the resized context; its log is \
                     decoded again",
                    self.conversations[index].live.name
                );
                self.forget_cells(ctx, index);
            }
        }
        let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e3;
        let done = Instant::now();
        let phases = ResizePhases {
            capture_ms: ms(started, captured),
            create_ms: ms(captured, created),
            load_ms: ms(created, done),
        };
        self.sizing.resizes += 1;
        self.sizing.last_pause = done - started;
        self.sizing.last_phases = phases;
        tracing::info!(
            "context resized to {} cells in {:.1} ms (state out {:.1}, new context {:.1}, \
             state in {:.1})",
            ctx.info().n_ctx,
            ms(started, done),
            phases.capture_ms,
            phases.create_ms,
            phases.load_ms
        );
        Ok(())
    }

    /// Drops conversation `index`'s cells: an idle one leaves the context, a decoding one
    /// keeps its sequence and decodes its log again from the start.
    fn forget_cells(&mut self, ctx: &mut Context<'m>, index: usize) {
        let open = &mut self.conversations[index];
        match open.hot.filter(|_| open.busy) {
            Some(seq) => {
                ctx.clear_seq(seq);
                let tokens = std::mem::take(&mut open.seq).tokens().to_vec();
                open.seq = Sequence::restored(tokens, 0).in_seq(seq);
            }
            None => self.cool(ctx, index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_doubles_until_the_cells_fit_and_stops_at_the_ceiling() {
        assert_eq!(grown_cells(512, 513, 8192), Some(1024));
        assert_eq!(grown_cells(512, 3000, 8192), Some(4096));
        assert_eq!(grown_cells(512, 100_000, 8192), Some(8192));
        assert_eq!(grown_cells(4096, 5000, 6000), Some(6000));
        assert_eq!(grown_cells(8192, 9000, 8192), None);
    }

    #[test]
    fn an_elastic_context_starts_at_its_floor_and_a_fixed_one_at_its_size() {
        let settings = EngineSettings {
            ctx_size: 4096,
            ..EngineSettings::defaults()
        };
        let elastic = ContextSizing::Elastic { ceiling: None };
        let s = Sizing::new(elastic, &settings, 32768, 256, 4);
        assert_eq!((s.floor, s.ceiling, s.elastic), (2048, 32768, true));
        let capped = ContextSizing::Elastic {
            ceiling: Some(1000),
        };
        let s = Sizing::new(capped, &settings, 32768, 256, 4);
        assert_eq!((s.floor, s.ceiling), (1000, 1000));
        let s = Sizing::new(ContextSizing::Fixed, &settings, 2048, 256, 4);
        assert_eq!((s.floor, s.ceiling, s.elastic), (2048, 2048, false));
    }
}
