//! The tier bookkeeping of one chat process: which sessions are hot (sequences of the
//! context), what the warm pool holds, counters, and the snapshot the UI draws.

use std::time::Instant;

use crate::chat::protocol::{MemorySnapshot, TierUsage};
use crate::engine::gpu_devices;
use crate::paths::Paths;
use crate::session::catalog::SessionCatalog;
use crate::tiers::{SystemMemory, WarmPool};

/// Tokens served from each tier since the process started.
#[derive(Debug, Default, Clone, Copy)]
pub struct HitCounters {
    pub hot: u64,
    pub warm: u64,
    pub cold: u64,
    pub prefill: u64,
}

/// What the hot tier holds right now, as the engine reports it.
pub struct HotView {
    pub sessions: Vec<String>,
    pub tokens: u64,
    pub bytes: u64,
    pub capacity_tokens: u64,
    pub page_tokens: u64,
}

pub struct TierBook {
    pub hits: HitCounters,
    pub last_move: Option<String>,
    pub warm_sessions: Vec<String>,
    /// The cold tier's figures (object count, bytes, sessions with pages), re-read after a
    /// save or every few seconds rather than on every one-second snapshot: listing sessions
    /// parses every manifest.
    cold_cache: Option<(Instant, u64, u64, Vec<String>)>,
}

impl TierBook {
    pub fn new() -> Self {
        Self {
            hits: HitCounters::default(),
            last_move: None,
            warm_sessions: Vec::new(),
            cold_cache: None,
        }
    }

    /// Forgets the cached cold-store size (after a save, a gc, a removal).
    pub fn cold_changed(&mut self) {
        self.cold_cache = None;
    }

    pub fn snapshot(
        &mut self,
        paths: &Paths,
        hot: HotView,
        warm: &WarmPool,
        catalog: &SessionCatalog,
        cold_budget: Option<u64>,
    ) -> MemorySnapshot {
        let fresh = matches!(&self.cold_cache, Some((at, ..)) if at.elapsed().as_secs() < 5);
        if !fresh {
            let (n, b) = catalog.store().usage().unwrap_or((0, 0));
            let sessions = catalog
                .list()
                .map(|l| {
                    l.into_iter()
                        .filter(|s| s.kv_tokens > 0)
                        .map(|s| s.name)
                        .collect()
                })
                .unwrap_or_default();
            self.cold_cache = Some((Instant::now(), n, b, sessions));
        }
        let (cold_count, cold_bytes, cold_sessions) = match &self.cold_cache {
            Some((_, n, b, sessions)) => (*n, *b, sessions.clone()),
            None => (0, 0, Vec::new()),
        };
        let system = SystemMemory::read(&paths.data);
        let w = warm.stats();
        MemorySnapshot {
            gpus: gpu_devices(),
            hot: TierUsage {
                used_bytes: hot.bytes,
                // The hot budget is the context's cells, shown in bytes at the current rate.
                budget_bytes: (hot.tokens > 0)
                    .then(|| hot.bytes.saturating_mul(hot.capacity_tokens) / hot.tokens),
                pages: hot.tokens / hot.page_tokens.max(1),
                sessions: hot.sessions,
                hit_tokens: self.hits.hot,
            },
            hot_cells: hot.capacity_tokens,
            hot_cells_used: hot.tokens,
            warm: TierUsage {
                used_bytes: w.used_bytes,
                budget_bytes: Some(w.budget_bytes),
                pages: w.pages,
                sessions: self.warm_sessions.clone(),
                hit_tokens: self.hits.warm,
            },
            cold: TierUsage {
                used_bytes: cold_bytes,
                budget_bytes: cold_budget,
                pages: cold_count,
                sessions: cold_sessions,
                hit_tokens: self.hits.cold,
            },
            prefill_tokens: self.hits.prefill,
            process_rss_bytes: system.process_rss,
            ram_total_bytes: system.ram_total,
            ram_available_bytes: system.ram_available,
            disk_total_bytes: system.disk_total,
            disk_free_bytes: system.disk_free,
            last_move: self.last_move.clone(),
        }
    }
}
