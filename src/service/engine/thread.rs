//! The engine thread as its starter sees it: the handle to join, and why it could not
//! start.

use std::thread::JoinHandle;

/// Why the engine could not start (or ended) before serving.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    #[error(transparent)]
    Model(#[from] crate::models::ModelError),
    #[error("loading {}: {source}", path.display())]
    Load {
        path: std::path::PathBuf,
        #[source]
        source: crate::llama::LlamaError,
    },
    #[error(transparent)]
    Engine(#[from] crate::llama::LlamaError),
    #[error(transparent)]
    Fingerprint(#[from] crate::session::identity::FingerprintError),
    #[error("starting the engine thread: {0}")]
    Thread(std::io::Error),
    #[error("the engine thread panicked")]
    Panicked,
}

pub type Result<T, E = StartError> = std::result::Result<T, E>;

/// The engine's thread. It ends after [`ServiceHandle::shutdown`], when every handle is
/// gone, or when the model fails to load (`join` returns that error).
pub struct EngineThread {
    thread: JoinHandle<Result<()>>,
}

impl EngineThread {
    pub(super) fn new(thread: JoinHandle<Result<()>>) -> Self {
        Self { thread }
    }

    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    pub fn join(self) -> Result<()> {
        match self.thread.join() {
            Ok(result) => result,
            Err(_) => Err(StartError::Panicked),
        }
    }
}
