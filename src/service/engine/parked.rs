//! A client's Save waiting for its session's commit in flight.

use tokio::sync::oneshot;

use crate::service::handle::Saved;
use crate::service::protocol::{ServiceError, Transcript};

/// A client's Save waiting for the session's earlier commit to land.
pub struct ParkedSave {
    pub name: String,
    pub transcript: Transcript,
    pub reply: oneshot::Sender<Result<Saved, ServiceError>>,
}
