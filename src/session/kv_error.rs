//! The error of moving KV between a live context and a session's pages: reading rows out
//! of llama.cpp, writing and reading pages, and loading assembled pages back. Callers act
//! on the variant: a store that is in use or full, a session the catalog refused, a page
//! that does not fit the context's layout (a corrupt or foreign object), or a bug.

use crate::kv::blob::BlobError;
use crate::kv::KvError;
use crate::llama::LlamaError;
use crate::session::SessionError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Engine(#[from] LlamaError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    /// llama.cpp's state did not have the layout kvrun reads (`what` says which state).
    #[error("{what}: {source}")]
    Blob {
        what: &'static str,
        #[source]
        source: BlobError,
    },
    #[error(transparent)]
    Kv(#[from] KvError),
    /// A stored page whose bytes do not fit the context's KV layout.
    #[error("{0}")]
    PageShape(String),
    #[error("session '{0}' is not saved yet")]
    NotSaved(String),
    /// One of kvrun's own invariants broke: a bug, never bad input.
    #[error("internal: {0}")]
    Internal(String),
}

impl LiveError {
    pub(crate) fn blob(what: &'static str) -> impl FnOnce(BlobError) -> Self {
        move |source| Self::Blob { what, source }
    }

    pub(crate) fn internal(detail: impl Into<String>) -> Self {
        Self::Internal(detail.into())
    }

    /// The session or store error inside, for exit codes and status codes.
    pub fn session_error(&self) -> Option<&SessionError> {
        match self {
            Self::Session(s) => Some(s),
            _ => None,
        }
    }

    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            Self::Store(s) => Some(s),
            Self::Session(SessionError::Store(s) | SessionError::Object { error: s, .. }) => {
                Some(s)
            }
            _ => None,
        }
    }
}

pub type LiveResult<T> = std::result::Result<T, LiveError>;
