//! How a download reports its progress and what it fetched.

use std::path::PathBuf;

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
