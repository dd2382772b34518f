//! Small filesystem helpers shared by both pull paths: streamed hashing and crash-safe
//! installation of a finished download.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{PullError, PullReporter};

/// Buffer size for all streaming copies: large enough to keep syscalls cheap, small enough
/// that progress updates stay smooth.
pub(super) const CHUNK: usize = 64 * 1024;

/// Hash a file in `CHUNK`-sized reads. With a label, progress is reported as its own phase
/// (verifying a multi-GB model takes seconds, which a user should see).
pub(super) fn hash_file(
    path: &Path,
    reporter: &dyn PullReporter,
    label: Option<&str>,
) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    if let Some(label) = label {
        reporter.begin(label, Some(file.metadata()?.len()));
    }
    hash_reader_into(&mut file, &mut hasher, reporter, label.is_some())?;
    if label.is_some() {
        reporter.finish();
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Feed everything `reader` yields into `hasher`, optionally advancing the reporter.
pub(super) fn hash_reader_into(
    reader: &mut dyn Read,
    hasher: &mut Sha256,
    reporter: &dyn PullReporter,
    report: bool,
) -> io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
        if report {
            reporter.advance(n as u64);
        }
    }
}

/// Size of `path`, or `None` if it does not exist.
pub(super) fn file_len(path: &Path) -> Result<Option<u64>, PullError> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.len())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PullError::io(path, e)),
    }
}

/// Delete a file; a file that is already gone is fine.
pub(super) fn remove_if_exists(path: &Path) -> Result<(), PullError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(PullError::io(path, e)),
    }
}

/// Create `dir` (and parents) if missing, private (0700) like every folder kvrun creates:
/// the models folder sits in kvrun's home next to the sessions. Existing folders keep their
/// mode, so a models folder the user shares on purpose stays shared.
pub(super) fn ensure_dir(dir: &Path) -> Result<(), PullError> {
    crate::store::create_private_dir_all(dir).map_err(|e| PullError::io(dir, io::Error::other(e)))
}

/// Create (or open, keeping its bytes) a download file, private (0600) when it is new.
pub(super) fn create_download_file(path: &Path) -> Result<File, PullError> {
    crate::store::private_file_options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| PullError::io(path, e))
}

/// Move a fully written and verified temp file to its final name so that readers only ever
/// see a complete model: fsync the data first (otherwise a crash right after the rename can
/// leave a correctly named but truncated file), rename (atomic within one filesystem; both
/// paths are in the models dir), then fsync the directory so the rename itself is durable.
pub(super) fn install(tmp: &Path, dest: &Path) -> Result<(), PullError> {
    let file = File::options()
        .read(true)
        .write(true)
        .open(tmp)
        .map_err(|e| PullError::io(tmp, e))?;
    file.sync_all().map_err(|e| PullError::io(tmp, e))?;
    drop(file);
    fs::rename(tmp, dest).map_err(|e| PullError::io(dest, e))?;
    if let Some(dir) = dest.parent() {
        crate::store::fsync_dir(dir).map_err(|e| PullError::io(dir, io::Error::other(e)))?;
    }
    Ok(())
}
