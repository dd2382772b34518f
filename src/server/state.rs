//! What every handler holds.

use std::sync::Arc;

use crate::paths::Paths;
use crate::service::Fleet;
use crate::settings::{Durability, SamplingSettings};

use super::counters::ServerCounters;
use super::misses::PromptHistory;

#[derive(Clone)]
pub struct AppState {
    /// The models this server serves, loaded on demand.
    pub models: Fleet,
    pub paths: Arc<Paths>,
    /// The HTTP side's counters, for `/metrics` (the engine keeps its own in
    /// `ServiceStats`).
    pub counters: Arc<ServerCounters>,
    /// Each conversation's previous prompt, for the "why did this miss" diagnostic.
    pub prompts: Arc<PromptHistory>,
    /// The sampling a request gets for every field it leaves out (`serve`'s sampling flags
    /// and config keys).
    pub sampling: Arc<SamplingSettings>,
    /// `serve --max-tokens`: the largest reply a request may get.
    pub max_tokens: Option<u32>,
    /// `serve --durability`: whether a reply's final event waits for its save.
    pub durability: Durability,
}

impl AppState {
    /// Fresh counters, and kvrun's default sampling.
    pub fn new(models: Fleet, paths: Arc<Paths>) -> Self {
        Self {
            models,
            paths,
            counters: Arc::default(),
            prompts: Arc::default(),
            sampling: Arc::new(SamplingSettings::defaults()),
            max_tokens: None,
            durability: Durability::default(),
        }
    }
}
