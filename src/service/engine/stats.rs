//! The engine's counters and the [`ServiceStats`] snapshot built from them.

use super::Engine;
use crate::llama::Context;
use crate::service::handle::{ServiceStats, SessionStatus, TierBytes};
use crate::service::protocol::CachedTokens;
use crate::tiers::WarmStats;

/// `restored` tokens read through the warm pool, split between the warm and cold tiers in
/// the proportion of the pool's hits and loads between `before` and `after` the restore.
pub fn restored_by_tier(before: &WarmStats, after: &WarmStats, restored: usize) -> CachedTokens {
    let (hits, loads) = (after.hits - before.hits, after.loads - before.loads);
    let warm = (restored as u64 * hits)
        .checked_div(hits + loads)
        .unwrap_or(0) as usize;
    CachedTokens {
        hot: 0,
        warm,
        cold: restored - warm,
    }
}

impl<'c, 'm> Engine<'c, 'm> {
    pub(super) fn stats(&self, ctx: &Context<'m>) -> ServiceStats {
        let c = &self.counters;
        let hot_bytes: u64 = self
            .conversations
            .iter()
            .filter_map(|o| o.hot())
            .map(|s| ctx.state_size(s) as u64)
            .sum();
        let warm = self.warm.stats();
        let (cold_objects, cold_used) = self.catalog.store().usage().unwrap_or((0, 0));
        let page_tokens = u64::from(ctx.info().page_tokens.max(1));
        let mut sessions: Vec<SessionStatus> = self
            .conversations
            .iter()
            .map(|o| SessionStatus {
                name: o.live.name.clone(),
                tokens: o.seq.len(),
                tier: if o.hot().is_some() && o.seq.kv_len() > 0 {
                    "hot".into()
                } else if o
                    .live
                    .saved()
                    .is_some_and(|m| m.referenced_objects().any(|id| self.warm.contains(&id)))
                {
                    "warm".into()
                } else {
                    "cold".into()
                },
                named: o.named,
                pinned: o.pinned,
                last_used_unix: o.last_used_unix,
            })
            .collect();
        sessions.extend(
            self.conversations
                .stored_unnamed()
                .iter()
                .map(|s| SessionStatus {
                    name: s.name.clone(),
                    tokens: s.tokens.len(),
                    tier: "cold".into(),
                    named: false,
                    pinned: s.pinned,
                    last_used_unix: s.updated_unix,
                }),
        );
        sessions.sort_by(|a, b| a.name.cmp(&b.name));
        ServiceStats {
            requests: c.requests,
            prompt_tokens: c.prompt_tokens,
            prefilled_tokens: c.prefilled_tokens,
            restored_hot_tokens: c.cached[0],
            restored_warm_tokens: c.cached[1],
            restored_cold_tokens: c.cached[2],
            generated_tokens: c.generated_tokens,
            saves: c.saves,
            save_engine_ms: c.save_engine_ms,
            saves_landed: c.saves_landed,
            save_writer_ms: c.save_writer_ms,
            save_failures: c.save_failures,
            checkpoints: c.checkpoints,
            checkpoint_ms: c.checkpoint_ms,
            checkpoint_bytes: self
                .conversations
                .iter()
                .map(|o| o.seq.checkpoints().bytes() as u64)
                .sum(),
            queued: self.schedule.waiting(),
            active: self.schedule.decoding(),
            hot_cells_used: self.conversations.hot_cells() as u64,
            hot_cells: u64::from(ctx.info().n_ctx),
            ctx_ceiling: self.max_cells() as u64,
            ctx_resizes: self.sizing.resizes,
            ctx_last_resize_ms: self.sizing.last_pause.as_secs_f64() * 1e3,
            ctx_last_resize_phases: self.sizing.last_phases,
            hot: TierBytes {
                used: hot_bytes,
                budget: None,
                pages: self.conversations.hot_cells() as u64 / page_tokens,
            },
            warm: TierBytes {
                used: warm.used_bytes,
                budget: Some(warm.budget_bytes),
                pages: warm.pages,
            },
            cold: TierBytes {
                used: cold_used,
                budget: self.tiers.cold_budget,
                pages: cold_objects,
            },
            sessions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_tokens_split_by_the_pools_hits_and_loads() {
        let pool = |hits, loads| WarmStats {
            hits,
            loads,
            ..Default::default()
        };
        let start = pool(5, 7);
        // (hits, loads) during the restore, tokens restored -> (warm, cold)
        for ((hits, loads), restored, split) in [
            ((4, 0), 1024, (1024, 0)),
            ((0, 4), 1024, (0, 1024)),
            ((1, 3), 1024, (256, 768)),
            ((0, 0), 0, (0, 0)),
            // Nothing read through the pool (no warm tier): counted cold.
            ((0, 0), 300, (0, 300)),
        ] {
            let end = pool(5 + hits, 7 + loads);
            let got = restored_by_tier(&start, &end, restored);
            assert_eq!((got.hot, got.warm, got.cold), (0, split.0, split.1));
        }
    }
}
