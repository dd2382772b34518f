//! The context's size: fixed, or elastic between a floor and a ceiling, and the step it
//! grows by.

use std::time::Duration;

use crate::llama::{Context, LlamaError};
use crate::service::handle::ResizePhases;
use crate::settings::LlamaSettings;

/// Pages per decoding sequence an elastic context starts with (and shrinks back to).
pub const FLOOR_PAGES_PER_SEQUENCE: u32 = 2;

/// How the engine sizes its llama.cpp context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSizing {
    /// `llama.ctx_size` cells, allocated at start.
    Fixed,
    /// From the floor up to `ceiling` cells as the live tokens need (None: the model's
    /// training context).
    Elastic { ceiling: Option<u32> },
}

/// The context's current size against what it may grow to, and what resizing cost.
pub(super) struct Sizing {
    /// Settings every context is created with; `ctx_size` is set per resize.
    settings: LlamaSettings,
    pub(super) page_tokens: u32,
    pub(super) n_seq_max: u32,
    pub(super) elastic: bool,
    pub(super) floor: u32,
    /// The most cells a conversation may use (the fixed size when not elastic).
    pub ceiling: u32,
    pub resizes: u64,
    /// How long the last resize paused decoding, and its parts.
    pub last_pause: Duration,
    pub last_phases: ResizePhases,
    /// The smallest size llama.cpp could not create (out of memory): not asked for again
    /// until the context shrinks.
    pub(super) refused: Option<u32>,
}

impl Sizing {
    /// The sizing for `parallel` decoding sequences, and the cells to create the first
    /// context with.
    pub fn new(
        sizing: ContextSizing,
        settings: &LlamaSettings,
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
            refused: None,
        }
    }

    /// Settings for a context of `cells` cells.
    pub(super) fn settings_for(&self, cells: u32) -> LlamaSettings {
        LlamaSettings {
            ctx_size: cells,
            ..self.settings.clone()
        }
    }

    /// The first context: the floor when elastic, else the fixed size (which then is
    /// what llama.cpp gave).
    pub fn create<'m>(
        &mut self,
        model: &'m crate::llama::Model,
    ) -> Result<Context<'m>, LlamaError> {
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

/// The cells a context starts with (what a server budgets for a model before it loads it).
pub fn first_cells(
    sizing: ContextSizing,
    settings: &LlamaSettings,
    n_ctx_train: u32,
    page_tokens: u32,
    parallel: u32,
) -> u32 {
    Sizing::new(sizing, settings, n_ctx_train, page_tokens, parallel).floor
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
