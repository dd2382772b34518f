//! Adding engines' stats up: a fleet's totals over its loaded engines, and the counters
//! of the engines it unloaded.

use crate::service::handle::ServiceStats;

/// Adds `from`'s counters (not its current use) to `to`.
pub fn add_counters(to: &mut ServiceStats, from: &ServiceStats) {
    to.requests += from.requests;
    to.prompt_tokens += from.prompt_tokens;
    to.prefilled_tokens += from.prefilled_tokens;
    to.restored_hot_tokens += from.restored_hot_tokens;
    to.restored_warm_tokens += from.restored_warm_tokens;
    to.restored_cold_tokens += from.restored_cold_tokens;
    to.generated_tokens += from.generated_tokens;
    to.saves += from.saves;
    to.save_engine_ms += from.save_engine_ms;
    to.saves_landed += from.saves_landed;
    to.save_writer_ms += from.save_writer_ms;
    to.save_failures += from.save_failures;
    to.checkpoints += from.checkpoints;
    to.checkpoint_ms += from.checkpoint_ms;
    to.ctx_resizes += from.ctx_resizes;
}

/// Adds `from`'s current use to `to`: hot tiers and contexts add up; the warm and cold
/// tiers are shared, so any engine's figure is the whole.
pub fn add_use(to: &mut ServiceStats, from: ServiceStats) {
    to.queued += from.queued;
    to.active += from.active;
    to.hot_cells_used += from.hot_cells_used;
    to.hot_cells += from.hot_cells;
    to.ctx_ceiling += from.ctx_ceiling;
    to.hot.used += from.hot.used;
    to.checkpoint_bytes += from.checkpoint_bytes;
    to.hot.pages += from.hot.pages;
    to.warm = from.warm;
    to.cold = from.cold;
    if from.ctx_last_resize_ms > 0.0 {
        to.ctx_last_resize_ms = from.ctx_last_resize_ms;
        to.ctx_last_resize_phases = from.ctx_last_resize_phases;
    }
    for s in from.sessions {
        if !to.sessions.iter().any(|t| t.name == s.name) {
            to.sessions.push(s);
        }
    }
}
