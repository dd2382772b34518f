//! The client side of the service: what a front end holds to reach the engine thread.
//! Cheap to clone; every HTTP handler gets one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tokio::sync::oneshot;

use super::protocol::{Request, ServiceError};
use crate::engine::Model;

/// Facts about the loaded model and context, fixed once the engine is ready.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceInfo {
    /// The name responses use: `--alias`, else the model's own name.
    pub model_name: String,
    pub n_ctx: usize,
    /// Sequences decoded together (`--parallel`).
    pub parallel: usize,
    pub page_tokens: usize,
    /// When the model finished loading (seconds since the Unix epoch).
    pub created_unix: u64,
}

/// What the engine thread is asked to do.
#[derive(Debug)]
pub enum Command {
    /// Boxed: a request is far larger than the other commands.
    Generate(Box<Request>),
    /// Counters and tier use, for `/metrics`, `/v1/kvrun/sessions` and `kvrun stats`.
    Stats(oneshot::Sender<ServiceStats>),
    /// Releases a session the server holds (its sequence and lock), then removes it.
    RemoveSession(String, oneshot::Sender<Result<(), ServiceError>>),
    /// Pins (or unpins) a session: a pinned one is never collected under the cold budget.
    PinSession(String, bool, oneshot::Sender<Result<(), ServiceError>>),
    /// Cancel what runs, save every conversation, release every lock and exit.
    Shutdown,
}

/// One session the server knows, hot or not.
#[derive(Debug, Clone, Serialize)]
pub struct SessionStatus {
    pub name: String,
    pub tokens: usize,
    /// "hot", "warm" or "cold".
    pub tier: &'static str,
    pub named: bool,
    pub pinned: bool,
    pub last_used_unix: u64,
}

/// Bytes in a tier against its budget.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TierBytes {
    pub used: u64,
    pub budget: Option<u64>,
}

/// Cumulative counters since start, and current use.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServiceStats {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub prefilled_tokens: u64,
    pub restored_hot_tokens: u64,
    pub restored_warm_tokens: u64,
    pub restored_cold_tokens: u64,
    pub generated_tokens: u64,
    /// Requests waiting for a sequence.
    pub queued: usize,
    /// Requests decoding now.
    pub active: usize,
    /// Context cells in use and in all (an elastic context's current allocation).
    pub hot_cells_used: u64,
    pub hot_cells: u64,
    /// Cells the context may grow to (`hot_cells` itself when its size is fixed).
    pub ctx_ceiling: u64,
    /// Times the elastic context was recreated at another size, and how long the last
    /// resize paused decoding.
    pub ctx_resizes: u64,
    pub ctx_last_resize_ms: f64,
    pub hot: TierBytes,
    pub warm: TierBytes,
    pub cold: TierBytes,
    pub sessions: Vec<SessionStatus>,
}

/// How a front end reaches the engine.
#[derive(Clone)]
pub struct ServiceHandle {
    commands: std::sync::mpsc::Sender<Command>,
    /// Requests sent but not yet finished; past `max_pending` a submit is refused.
    pending: Arc<AtomicUsize>,
    max_pending: usize,
    ready: Arc<OnceLock<(Arc<Model>, ServiceInfo)>>,
}

impl ServiceHandle {
    /// The engine side keeps `pending` (decrementing it as requests finish) and fills
    /// `ready` once the model is loaded.
    pub fn new(
        commands: std::sync::mpsc::Sender<Command>,
        pending: Arc<AtomicUsize>,
        max_pending: usize,
        ready: Arc<OnceLock<(Arc<Model>, ServiceInfo)>>,
    ) -> Self {
        Self {
            commands,
            pending,
            max_pending,
            ready,
        }
    }

    /// The model (for rendering and tokenizing on the caller's thread) once it is loaded.
    pub fn model(&self) -> Option<&Arc<Model>> {
        self.ready.get().map(|(m, _)| m)
    }

    pub fn info(&self) -> Option<&ServiceInfo> {
        self.ready.get().map(|(_, i)| i)
    }

    /// Queues a generation; its replies arrive on `request.replies`.
    pub fn submit(&self, request: Request) -> Result<(), ServiceError> {
        let before = self.pending.fetch_add(1, Ordering::SeqCst);
        if before >= self.max_pending {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(ServiceError::QueueFull(before));
        }
        self.commands
            .send(Command::Generate(Box::new(request)))
            .map_err(|_| {
                self.pending.fetch_sub(1, Ordering::SeqCst);
                ServiceError::ShuttingDown
            })
    }

    pub async fn stats(&self) -> Result<ServiceStats, ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Stats(tx))?;
        rx.await.map_err(|_| ServiceError::ShuttingDown)
    }

    pub async fn remove_session(&self, name: &str) -> Result<(), ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::RemoveSession(name.to_string(), tx))?;
        rx.await.map_err(|_| ServiceError::ShuttingDown)?
    }

    pub async fn pin_session(&self, name: &str, pinned: bool) -> Result<(), ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::PinSession(name.to_string(), pinned, tx))?;
        rx.await.map_err(|_| ServiceError::ShuttingDown)?
    }

    pub fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown);
    }

    fn send(&self, command: Command) -> Result<(), ServiceError> {
        self.commands
            .send(command)
            .map_err(|_| ServiceError::ShuttingDown)
    }
}

// The handle crosses tokio's worker threads, and the model is shared with the engine.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ServiceHandle>();
};
