//! The store's errors: one line each, naming the path or object involved.

use std::io;
use std::path::PathBuf;

use super::id::{InvalidId, ObjectId};

/// Errors from the store. Every message is one line and names the path or object involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Any I/O failure other than a full disk. The message includes the OS error text, so a
    /// plain `{}` is informative on its own.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// ENOSPC (or a quota limit) while writing; the previous file content, if any, is intact.
    #[error("disk full while writing {}", path.display())]
    DiskFull { path: PathBuf },

    /// The object exists but fails validation (truncated, bit flip, unknown format).
    #[error("object {id} is corrupt: {detail}")]
    Corrupt { id: ObjectId, detail: String },

    #[error("object {id} is missing")]
    Missing { id: ObjectId },

    /// An object larger than a read of its kind accepts; nothing was written.
    #[error("not writing {}: {len} bytes, more than the {max} bytes an object of its kind may hold", path.display())]
    TooLarge { path: PathBuf, len: u64, max: u64 },

    /// A non-blocking lock is held by another process or handle.
    #[error("{what} is in use by another kvrun process")]
    InUse { what: String },

    #[error(transparent)]
    InvalidId(#[from] InvalidId),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
