//! What every handler holds.

use std::sync::Arc;

use crate::paths::Paths;
use crate::service::ServiceHandle;
use crate::settings::SamplingSettings;

pub use super::metrics::ServerCounters;

#[derive(Clone)]
pub struct AppState {
    pub service: ServiceHandle,
    pub paths: Arc<Paths>,
    /// The sampling a request gets for every field it leaves out (`serve`'s sampling flags
    /// and config keys).
    pub sampling: Arc<SamplingSettings>,
    /// HTTP-side counters for `/metrics`; the API handlers record each request's usage and
    /// early prefix misses here.
    pub counters: Arc<ServerCounters>,
}

impl AppState {
    /// A state with default sampling and fresh counters.
    pub fn new(service: ServiceHandle, paths: Paths) -> Self {
        Self {
            service,
            paths: Arc::new(paths),
            sampling: Arc::new(SamplingSettings::resolve(
                &Default::default(),
                &Default::default(),
            )),
            counters: Arc::new(ServerCounters::default()),
        }
    }
}
