//! The engine's cumulative counters, for `ServiceStats`.

use crate::service::protocol::{CachedTokens, Request, Usage};

/// Cumulative counts since the engine started.
#[derive(Debug, Default)]
pub struct Counters {
    pub(super) requests: u64,
    pub(super) prompt_tokens: u64,
    pub(super) prefilled_tokens: u64,
    pub(super) cached: [u64; 3],
    pub(super) generated_tokens: u64,
    /// Saves queued, and the engine thread's time in them: planning (capture, slicing)
    /// and any wait for a commit in flight.
    pub(super) saves: u64,
    pub(super) save_engine_ms: f64,
    /// Saves landed, and their commits' time on the writer threads.
    pub(super) saves_landed: u64,
    pub(super) save_writer_ms: f64,
    pub(super) save_failures: u64,
    /// Checkpoints of recurrent and hybrid sequences, and their capture time.
    pub(super) checkpoints: u64,
    pub(super) checkpoint_ms: f64,
}

impl Counters {
    pub fn record_save_queued(&mut self, engine_ms: f64) {
        self.saves += 1;
        self.save_engine_ms += engine_ms;
    }

    pub fn record_save_wait(&mut self, waited_ms: f64) {
        self.save_engine_ms += waited_ms;
    }

    pub fn record_save_failed(&mut self) {
        self.save_failures += 1;
    }

    pub fn record_save_landed(&mut self, writer_ms: f64) {
        self.saves_landed += 1;
        self.save_writer_ms += writer_ms;
    }

    pub fn record_checkpoint(&mut self, took: std::time::Duration) {
        self.checkpoints += 1;
        self.checkpoint_ms += took.as_secs_f64() * 1e3;
    }

    pub fn record_start(&mut self, request: &Request, cached: CachedTokens) {
        self.requests += 1;
        self.prompt_tokens += request.ask.prompt.len() as u64;
        self.cached[0] += cached.hot as u64;
        self.cached[1] += cached.warm as u64;
        self.cached[2] += cached.cold as u64;
    }

    /// A session restored into the context without a request (a chat's switch).
    pub fn record_restore(&mut self, cached: CachedTokens) {
        self.cached[1] += cached.warm as u64;
        self.cached[2] += cached.cold as u64;
    }

    pub fn record_finish(&mut self, usage: &Usage) {
        self.prefilled_tokens += usage.prefilled as u64;
        self.generated_tokens += usage.generated as u64;
    }
}
