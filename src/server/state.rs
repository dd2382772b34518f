//! What every handler holds.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::paths::Paths;
use crate::service::ServiceHandle;

use super::misses::PromptHistory;

#[derive(Clone)]
pub struct AppState {
    pub service: ServiceHandle,
    pub paths: Arc<Paths>,
    /// The API layers' own counters, for `/metrics`.
    pub counters: Arc<ServerCounters>,
    /// Each conversation's previous prompt, for the "why did this miss" diagnostic.
    pub prompts: Arc<PromptHistory>,
}

impl AppState {
    pub fn new(service: ServiceHandle, paths: Arc<Paths>) -> Self {
        Self {
            service,
            paths,
            counters: Arc::default(),
            prompts: Arc::default(),
        }
    }
}

/// Counters the API layers keep (the engine keeps its own in `ServiceStats`).
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// Requests whose prompt diverged from their conversation's previous prompt before
    /// its end: the KV after the divergence could not be reused (a volatile prefix, or a
    /// template that re-renders history differently). Logged at info with an excerpt.
    pub early_prefix_misses: AtomicU64,
    /// Claude Code billing-header system blocks dropped before rendering.
    pub billing_blocks_dropped: AtomicU64,
}
