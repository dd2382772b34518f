//! The memory panel's figures for a chat: the engine's tier use (hot sequences, the warm
//! pool, the cold store) with the machine's RAM, disk and GPUs, and the last move.

use std::time::Instant;

use crate::chat::protocol::{MemorySnapshot, TierUsage};
use crate::llama::gpu_devices;
use crate::paths::Paths;
use crate::service::handle::{ServiceStats, TierBytes};
use crate::session::catalog::SessionCatalog;
use crate::tiers::SystemMemory;

/// How long the cold tier's session list is reused: listing sessions parses every manifest.
const COLD_LIST_SECONDS: u64 = 5;

pub struct TierBook {
    /// The last move between tiers the chat saw, e.g. "refactor-agent: 18,432 tokens
    /// promoted cold→hot in 412 ms".
    pub last_move: Option<String>,
    /// The sessions with pages on disk, re-read after a save or every few seconds.
    cold_sessions: Option<(Instant, Vec<String>)>,
}

impl TierBook {
    pub fn new() -> Self {
        Self {
            last_move: None,
            cold_sessions: None,
        }
    }

    /// Forgets the cached cold session list (after a save, a fork, a removal).
    pub fn cold_changed(&mut self) {
        self.cold_sessions = None;
    }

    pub fn snapshot(
        &mut self,
        paths: &Paths,
        stats: &ServiceStats,
        catalog: &SessionCatalog,
        page_tokens: u64,
    ) -> MemorySnapshot {
        let fresh = matches!(&self.cold_sessions,
            Some((at, _)) if at.elapsed().as_secs() < COLD_LIST_SECONDS);
        if !fresh {
            let sessions = catalog
                .list()
                .map(|l| {
                    l.into_iter()
                        .filter(|s| s.kv_tokens > 0)
                        .map(|s| s.name)
                        .collect()
                })
                .unwrap_or_default();
            self.cold_sessions = Some((Instant::now(), sessions));
        }
        let in_tier = |tier: &str| -> Vec<String> {
            stats
                .sessions
                .iter()
                .filter(|s| s.tier == tier)
                .map(|s| s.name.clone())
                .collect()
        };
        let usage = |bytes: &TierBytes, sessions, hits| TierUsage {
            used_bytes: bytes.used,
            budget_bytes: bytes.budget,
            pages: bytes.pages,
            sessions,
            hit_tokens: hits,
        };
        let system = SystemMemory::read(&paths.data);
        let cells_used = stats.hot_cells_used;
        let mut hot = usage(&stats.hot, in_tier("hot"), stats.restored_hot_tokens);
        // The hot budget is the context's cells, shown in bytes at the current rate.
        hot.budget_bytes =
            (cells_used > 0).then(|| stats.hot.used.saturating_mul(stats.hot_cells) / cells_used);
        hot.pages = cells_used / page_tokens.max(1);
        MemorySnapshot {
            gpus: gpu_devices(),
            hot,
            hot_cells: stats.hot_cells,
            hot_cells_used: cells_used,
            hot_cells_ceiling: stats.ctx_ceiling.max(stats.hot_cells),
            warm: usage(&stats.warm, in_tier("warm"), stats.restored_warm_tokens),
            cold: usage(
                &stats.cold,
                self.cold_sessions
                    .as_ref()
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default(),
                stats.restored_cold_tokens,
            ),
            prefill_tokens: stats.prefilled_tokens,
            process_rss_bytes: system.process_rss,
            ram_total_bytes: system.ram_total,
            ram_available_bytes: system.ram_available,
            disk_total_bytes: system.disk_total,
            disk_free_bytes: system.disk_free,
            last_move: self.last_move.clone(),
            ..MemorySnapshot::default()
        }
    }
}
