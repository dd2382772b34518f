//! The client side of the service: what a front end holds to reach the engine thread.
//! Cheap to clone; every HTTP handler gets one.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::protocol::{CachedTokens, Request, ServiceError, Transcript};
use crate::llama::{Model, TokenId};
use crate::template::TemplateIdentity;

/// Facts about the loaded model and context, fixed once the engine is ready. Read back from
/// `/v1/kvrun/stats` by `kvrun top` and `stats --connect` (fields an older server lacks
/// take their defaults).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceInfo {
    /// The name responses use: `--alias`, else the model file's stem.
    pub model_name: String,
    /// Every id a client may name the model by in `/v1/models/{id}`: the alias, if any,
    /// then the file's stem.
    pub model_ids: Vec<String>,
    /// The context the model was trained for (`n_ctx_train`).
    pub n_ctx_train: usize,
    pub n_ctx: usize,
    /// Sequences decoded together (`--parallel`).
    pub parallel: usize,
    pub page_tokens: usize,
    /// The largest decode batch (`--batch-size` within the model's batch span): it sizes
    /// llama.cpp's compute buffer.
    pub n_batch: usize,
    /// When the model finished loading (seconds since the Unix epoch).
    pub created_unix: u64,
    /// Tokens in the model's vocabulary.
    pub n_vocab: usize,
    /// The model's weights (`llama_model_size`).
    pub weights_bytes: u64,
    /// K and V bytes one context cell takes at most (every layer's full cache; a sliding
    /// window's layers take less); 0 where the metadata does not say (recurrent state).
    pub kv_bytes_per_cell: u64,
    /// The model file.
    pub path: String,
}

/// What the engine thread is asked to do.
#[derive(Debug)]
pub enum Command {
    /// Boxed: a request is far larger than the other commands.
    Generate(Box<Request>),
    /// Counters and tier use, for `/metrics`, `/v1/kvrun/sessions` and `kvrun stats`.
    Stats(oneshot::Sender<ServiceStats>),
    /// Answers once the commits in flight of the named session (if open here) have landed,
    /// so that what the sessions API reads from disk includes its last reply.
    Settle(String, oneshot::Sender<()>),
    /// Releases a session the server holds (its sequence and lock), then removes it.
    RemoveSession(String, oneshot::Sender<Result<(), ServiceError>>),
    /// Pins (or unpins) a session: a pinned one is never collected under the cold budget.
    PinSession(String, bool, oneshot::Sender<Result<(), ServiceError>>),
    /// Opens (locking it, or creating it) a named session and restores its snapshot into
    /// the context, so that its next request starts at once (a chat's switch).
    Open(OpenSession, oneshot::Sender<Result<Opened, ServiceError>>),
    /// Saves a session now, recording the transcript with its log.
    Save(
        String,
        Transcript,
        oneshot::Sender<Result<Saved, ServiceError>>,
    ),
    /// Empties a session's log (and its cells) and saves it with the transcript.
    Reset(
        String,
        Transcript,
        oneshot::Sender<Result<Saved, ServiceError>>,
    ),
    /// Saves session `from` and copies it to a new session `to`.
    Fork {
        from: String,
        to: String,
        reply: oneshot::Sender<Result<(), ServiceError>>,
    },
    /// Idle conversations leave the context and an elastic context shrinks to its floor;
    /// answers with the stats after.
    Release(oneshot::Sender<ServiceStats>),
    /// Cancel what runs, save every conversation, release every lock and exit.
    Shutdown,
}

/// What [`Command::Open`] opens.
#[derive(Debug, Clone)]
pub struct OpenSession {
    /// `None`: a new session under a generated name, collected first under the cold budget
    /// (a chat started without `--session`).
    pub name: Option<String>,
    /// Recorded in a new session's manifest (a saved session keeps its own).
    pub sampling: crate::settings::SamplingSettings,
}

/// A session made hot by [`Command::Open`].
#[derive(Debug, Clone)]
pub struct Opened {
    pub session: String,
    /// Its token log (empty for a new session).
    pub log: Vec<TokenId>,
    /// What its last save recorded besides the log.
    pub transcript: Transcript,
    /// The chat template its turns were rendered with.
    pub template: Option<TemplateIdentity>,
    /// Tokens of the log now in the context, by the tier they came from (`hot`: it was
    /// hot already).
    pub cached: CachedTokens,
    pub restore_ms: f64,
    /// Where `restore_ms` went (all zero when nothing was restored).
    pub phases: crate::session::live::RestorePhases,
    /// Restore or recompute: what the restore chose, from the engine's own measured
    /// restore throughput and prefill rate (`None` when nothing was restored).
    pub decision: Option<crate::session::live::RestoreDecision>,
    /// Parts of the snapshot that could not be used (the log is recomputed there).
    pub warnings: Vec<String>,
}

/// What a save wrote.
#[derive(Debug, Clone, Default)]
pub struct Saved {
    pub bytes: u64,
    pub ms: f64,
    pub warnings: Vec<String>,
}

/// One session the server knows, hot or not.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStatus {
    pub name: String,
    pub tokens: usize,
    /// "hot", "warm" or "cold" (owned only when read back from a server).
    pub tier: Cow<'static, str>,
    pub named: bool,
    pub pinned: bool,
    pub last_used_unix: u64,
}

/// Bytes in a tier against its budget.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TierBytes {
    pub used: u64,
    pub budget: Option<u64>,
    /// Pages (objects, for the cold tier) it holds.
    pub pages: u64,
}

/// Where a resize of the elastic context spent its pause, in milliseconds, and what the
/// new context cost off the engine thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResizePhases {
    /// Reading the hot sequences' state out of the old context.
    pub capture_ms: f64,
    /// Waiting for the new context to be made (0 when it was made ahead of need).
    pub wait_ms: f64,
    /// Loading the sequences' state into the new context.
    pub load_ms: f64,
    /// Making the new context (its KV buffer allocated and cleared) on the builder
    /// thread, while decoding went on; only `wait_ms` of it paused decoding.
    pub build_ms: f64,
}

/// Cumulative counters since start, and current use. Read back like [`ServiceInfo`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceStats {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub prefilled_tokens: u64,
    pub restored_hot_tokens: u64,
    pub restored_warm_tokens: u64,
    pub restored_cold_tokens: u64,
    pub generated_tokens: u64,
    /// Saves queued (each reply's end, each client Save), and the engine thread's time in
    /// them: capture, slicing, and any wait for a commit in flight (a cold restore, a
    /// gc, a fork, a Save when nothing else decodes).
    pub saves: u64,
    pub save_engine_ms: f64,
    /// Saves whose commit landed, and the commits' time on the sessions' writer threads
    /// (the disk work the engine thread no longer waits for).
    pub saves_landed: u64,
    pub save_writer_ms: f64,
    /// Saves whose planning or commit failed (each reported to its client or the log).
    pub save_failures: u64,
    /// Checkpoints taken of recurrent and hybrid sequences at page boundaries, and the
    /// engine thread's time copying them out of llama.cpp.
    pub checkpoints: u64,
    pub checkpoint_ms: f64,
    /// RAM the hot sequences' checkpoints hold now.
    pub checkpoint_bytes: u64,
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
    pub ctx_last_resize_phases: ResizePhases,
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

    /// Blocks until `engine` has loaded the model; `None` when it stopped instead (its
    /// `join` says why).
    pub fn wait_until_ready(
        &self,
        engine: &super::EngineThread,
    ) -> Option<(Arc<Model>, ServiceInfo)> {
        loop {
            if let Some((model, info)) = self.ready.get() {
                return Some((model.clone(), info.clone()));
            }
            if engine.is_finished() {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
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

    /// Asks the engine to give back the memory its idle conversations hold.
    pub async fn release(&self) -> Result<ServiceStats, ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Release(tx))?;
        rx.await.map_err(|_| ServiceError::ShuttingDown)
    }

    /// Requests sent and not finished yet (queued or decoding).
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Waits until session `name`'s saves in flight are on disk (at once when none are).
    pub async fn settle(&self, name: &str) -> Result<(), ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Settle(name.to_string(), tx))?;
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

    /// The blocking calls below are for front ends on threads of their own (the chat's);
    /// they must not run inside an async runtime.
    pub fn stats_blocking(&self) -> Result<ServiceStats, ServiceError> {
        self.call(Command::Stats)
    }

    pub fn open_blocking(&self, open: OpenSession) -> Result<Opened, ServiceError> {
        self.call(|tx| Command::Open(open, tx))?
    }

    pub fn save_blocking(&self, name: &str, transcript: Transcript) -> Result<Saved, ServiceError> {
        self.call(|tx| Command::Save(name.to_string(), transcript, tx))?
    }

    pub fn reset_blocking(
        &self,
        name: &str,
        transcript: Transcript,
    ) -> Result<Saved, ServiceError> {
        self.call(|tx| Command::Reset(name.to_string(), transcript, tx))?
    }

    pub fn fork_blocking(&self, from: &str, to: &str) -> Result<(), ServiceError> {
        self.call(|reply| Command::Fork {
            from: from.to_string(),
            to: to.to_string(),
            reply,
        })?
    }

    fn call<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.send(command(tx))?;
        rx.blocking_recv().map_err(|_| ServiceError::ShuttingDown)
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
