//! What every handler holds.

use std::sync::Arc;

use crate::paths::Paths;
use crate::service::ServiceHandle;

#[derive(Clone)]
pub struct AppState {
    pub service: ServiceHandle,
    pub paths: Arc<Paths>,
}
