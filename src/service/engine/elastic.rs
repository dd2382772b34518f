//! The elastic hot tier (`--ctx-size auto`): the llama.cpp context holds cells for the
//! tokens that are live, not for the longest conversations the server could take. It
//! starts at [`FLOOR_PAGES_PER_SEQUENCE`] pages per decoding sequence, doubles (up to its
//! ceiling) when an admission or a batch step needs more cells than it has, and goes back to
//! the floor once every conversation has left it (after `hot_idle`, see [`Engine::idle`]).
//!
//! A new size is made on the builder thread ([`super::builder`]) while decoding goes on:
//! ahead of need once the decoding requests would outgrow the context within about a page
//! each, and as soon as a request admitted while others decode needs more (it starts in
//! what fits, or waits for the cells without holding the others up). Only a step that
//! needs the cells before they are ready waits for them, and so does a request admitted
//! with nothing else decoding (see `admit.rs` for why).
//!
//! The new context replaces the old one by taking every hot sequence as llama.cpp's own
//! sequence state, copied in RAM. The cells come back byte for byte and in their order,
//! unfinished page included, so a conversation decodes on as if the context had always
//! been that size. Restoring from pages instead would decode the unfinished page's tokens
//! again in other batch shapes, whose sums round differently.

use super::sizing::grown_cells;
use std::time::{Duration, Instant};

use super::builder::Built;
use super::Engine;
use crate::llama::{Context, KvCapture, LlamaError};
use crate::service::handle::ResizePhases;

impl<'c, 'm> Engine<'c, 'm> {
    /// Cells a conversation may fill: the ceiling of an elastic context.
    pub(super) fn max_cells(&self) -> usize {
        self.sizing.ceiling as usize
    }

    /// The size an elastic context of `current` cells grows to for `needed`, if it can:
    /// below the ceiling, and smaller than a size llama.cpp could not create.
    fn growth_target(&self, current: u32, needed: usize) -> Option<u32> {
        if !self.sizing.elastic || needed <= current as usize {
            return None;
        }
        let cells = grown_cells(current, needed, self.sizing.ceiling)?;
        self.sizing
            .refused
            .is_none_or(|r| cells < r)
            .then_some(cells)
    }

    fn request_context(&mut self, cells: u32) {
        let settings = self.sizing.settings_for(cells);
        let (page_tokens, n_seq_max) = (self.sizing.page_tokens, self.sizing.n_seq_max);
        self.builder.request(settings, page_tokens, n_seq_max);
    }

    /// Grows an elastic context so that `needed` cells fit now, as far as its ceiling
    /// allows, waiting for the new context. When it cannot be created the old one stays,
    /// and the caller makes room as in a fixed context.
    pub(super) fn grow_for(&mut self, ctx: &mut Context<'m>, needed: usize) {
        self.take_built(ctx);
        if self.growth_target(ctx.info().n_ctx, needed).is_none() {
            return;
        }
        // One context is made at a time: the one in the making lands first.
        self.wait_built(ctx);
        if let Some(cells) = self.growth_target(ctx.info().n_ctx, needed) {
            self.request_context(cells);
            self.wait_built(ctx);
        }
    }

    /// For an admission that needs more cells than the context has: starts growing it so
    /// that `needed` cells fit, without waiting. Returns whether more cells are on their
    /// way (then the request starts in what fits, or waits for them, rather than sending
    /// others out).
    pub(super) fn grow_ahead(&mut self, ctx: &mut Context<'m>, needed: usize) -> bool {
        self.take_built(ctx);
        let current = ctx.info().n_ctx;
        if needed <= current as usize {
            return false;
        }
        if self
            .builder
            .in_flight()
            .is_some_and(|cells| cells > current)
        {
            return true;
        }
        match self.growth_target(current, needed) {
            Some(cells) => {
                self.request_context(cells);
                true
            }
            None => false,
        }
    }

    /// After a step: when the requests decoding would outgrow an elastic context within
    /// about a page of steps each (their prompts' rest, and up to a page of their replies),
    /// its next size is made off the engine thread, so that the step that would overflow
    /// it rarely has to wait. A page of decoding (seconds on a CPU) outlasts making the
    /// context; a reply that may never come keeps its memory unasked for.
    pub(super) fn grow_before_full(&mut self, ctx: &Context<'m>) {
        let current = ctx.info().n_ctx;
        if !self.sizing.elastic || self.builder.in_flight().is_some() {
            return;
        }
        let page = ctx.info().page_tokens as usize;
        let upcoming: usize = self
            .schedule
            .active()
            .iter()
            .filter(|a| a.finish.is_none())
            .filter_map(|a| {
                let seq = &self.conversations[self.conversations.find(&a.conversation)?].seq;
                let prompt_left = seq.len() - seq.kv_len();
                let reply_left = a.request.ask.max_tokens.saturating_sub(a.generated());
                Some(prompt_left + reply_left.min(page))
            })
            .sum();
        if let Some(cells) = self.growth_target(current, self.conversations.hot_cells() + upcoming)
        {
            self.request_context(cells);
        }
    }

    /// A larger context that is ready replaces the current one; any other is freed.
    pub(super) fn take_built(&mut self, ctx: &mut Context<'m>) {
        if let Some(built) = self.builder.try_take() {
            self.land(ctx, built, Duration::ZERO, |cells, current| cells > current);
        }
    }

    /// Waits for the context in the making and moves into it if it is larger.
    fn wait_built(&mut self, ctx: &mut Context<'m>) {
        let started = Instant::now();
        if let Some(built) = self.builder.wait() {
            let waited = started.elapsed();
            self.land(ctx, built, waited, |cells, current| cells > current);
        }
    }

    /// Back to the floor once no conversation is hot (they left after `hot_idle`).
    pub(super) fn shrink_when_empty(&mut self, ctx: &mut Context<'m>) {
        let empty =
            self.schedule.none_decoding() && self.conversations.iter().all(|o| o.hot().is_none());
        if !self.sizing.elastic || !empty || ctx.info().n_ctx <= self.sizing.floor {
            return;
        }
        let started = Instant::now();
        if let Some(built) = self.builder.wait() {
            self.land(ctx, built, Duration::ZERO, |_, _| false);
        }
        self.request_context(self.sizing.floor);
        if let Some(built) = self.builder.wait() {
            let waited = started.elapsed();
            if self.land(ctx, built, waited, |cells, current| cells < current) {
                // Memory was freed: a size that failed before may fit now.
                self.sizing.refused = None;
            }
        }
    }

    /// Moves every hot sequence into the built context when `wanted(its cells, the
    /// current cells)`, else frees it. `waited` is how long the engine thread waited for
    /// it. Returns whether the context was replaced.
    fn land(
        &mut self,
        ctx: &mut Context<'m>,
        built: Built<'m>,
        waited: Duration,
        wanted: impl Fn(u32, u32) -> bool,
    ) -> bool {
        let new = match built.context {
            Ok(new) => new,
            Err(e) => {
                tracing::warn!("creating a context of {} cells failed: {e}", built.cells);
                let refused = self.sizing.refused.get_or_insert(built.cells);
                *refused = (*refused).min(built.cells);
                return false;
            }
        };
        if !wanted(new.info().n_ctx, ctx.info().n_ctx) {
            self.builder.retire(new);
            return false;
        }
        match self.move_into(ctx, new, built.took, waited) {
            Ok(()) => true,
            Err((new, e)) => {
                tracing::warn!("resizing the context failed: {e}");
                self.builder.retire(new);
                false
            }
        }
    }

    /// Replaces the context with `new` and moves every hot sequence into it; the old one
    /// is freed on the builder thread. On an error reading the old state nothing changes.
    #[allow(clippy::result_large_err)]
    fn move_into(
        &mut self,
        ctx: &mut Context<'m>,
        mut new: Context<'m>,
        built: Duration,
        waited: Duration,
    ) -> Result<(), (Context<'m>, LlamaError)> {
        let started = Instant::now();
        let mut moving = Vec::new();
        for (index, open) in self.conversations.iter().enumerate() {
            if let Some(seq) = open.hot().filter(|_| open.seq.kv_len() > 0) {
                match ctx.state_get(seq, KvCapture::Full) {
                    Ok(blob) => moving.push((index, seq, blob)),
                    Err(e) => return Err((new, e)),
                }
            }
        }
        let captured = Instant::now();
        std::mem::swap(ctx, &mut new);
        self.builder.retire(new);
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
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let done = Instant::now();
        let phases = ResizePhases {
            capture_ms: ms(captured - started),
            wait_ms: ms(waited),
            load_ms: ms(done - captured),
            build_ms: ms(built),
        };
        self.sizing.resizes += 1;
        self.sizing.last_pause = waited + (done - started);
        self.sizing.last_phases = phases;
        tracing::info!(
            "context resized to {} cells, decoding paused {:.1} ms (state out {:.1}, waiting \
             for the new context {:.1}, state in {:.1}); the context took {:.1} ms to make \
             off the engine thread",
            ctx.info().n_ctx,
            ms(self.sizing.last_pause),
            phases.capture_ms,
            phases.wait_ms,
            phases.load_ms,
            phases.build_ms
        );
        Ok(())
    }

    /// Drops conversation `index`'s cells: an idle one leaves the context, a decoding one
    /// keeps its sequence and decodes its log again from the start.
    fn forget_cells(&mut self, ctx: &mut Context<'m>, index: usize) {
        let open = &mut self.conversations[index];
        match open.hot().filter(|_| open.is_busy()) {
            Some(seq) => {
                ctx.clear_seq(seq);
                open.seq = std::mem::take(&mut open.seq).forgotten().in_seq(seq);
            }
            None => self.conversations.cool(ctx, index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sizing::{ContextSizing, Sizing};
    use super::*;
    use crate::settings::LlamaSettings;

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
        let settings = LlamaSettings {
            ctx_size: 4096,
            ..LlamaSettings::defaults()
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
