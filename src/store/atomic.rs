//! Crash-safe whole-file replacement.
//!
//! Built on `tempfile` rather than `atomic-write-file`: `tempfile` is already in kvrun's
//! dependency tree, creates its files with mode 0600 at `open` time, and deletes the temp file
//! on every early return (its `Drop`). `atomic-write-file` 0.2 would do the directory fsync
//! for us but pulls in `nix` 0.29 and `rand` 0.8 next to the versions already locked, for the
//! sake of the two `sync_all` calls written out below.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use super::fsutil::{fsync_dir, io_err, FILE_MODE};
use super::Result;

/// Name prefix of in-flight temp files. Leading dot keeps them out of casual listings;
/// [`super::ObjectStore::gc`] uses it to find strays left by a crash.
pub const TEMP_PREFIX: &str = ".kvrun-tmp-";

/// Small writes from the closure (headers, manifest fields) are batched; slices larger than
/// this go straight to the file, so a big payload is not copied through the buffer.
const BUF_CAPACITY: usize = 256 * 1024;

/// Where one atomic write's time went, in milliseconds (the save phases add these up).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteTimings {
    /// Creating the temp file, writing it, and the rename.
    pub write_ms: f64,
    /// The temp file's fsync.
    pub fsync_ms: f64,
}

/// Atomically replaces `path` with `bytes`. The parent directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Atomically replaces `path` with whatever `write` produces, without building the whole
/// content in memory first. The parent directory must exist.
///
/// Steps: temp file (0600) in the same directory, so the rename cannot cross filesystems;
/// write; fsync the file; rename over `path`; fsync the directory so the rename itself is
/// durable. If anything fails, including `write` returning an error, the temp file is
/// removed and the previous content of `path` is untouched. ENOSPC anywhere on the way
/// becomes [`super::StoreError::DiskFull`] naming `path`.
pub fn write_atomic_with<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    write_atomic_unsynced_dir(path, write)?;
    fsync_dir(parent_dir(path))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// [`write_atomic_with`] up to the rename: the content is durable, and readers see the old
/// or the new file, but the rename itself is durable only once the caller fsyncs the parent
/// directory. Lets a writer of many files in one directory fsync it once, after all of them.
pub fn write_atomic_unsynced_dir<F>(path: &Path, write: F) -> Result<WriteTimings>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let started = Instant::now();
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(fs::Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)
        .map_err(|e| io_err(path, e))?;

    let mut writer = BufWriter::with_capacity(BUF_CAPACITY, tmp.as_file_mut());
    let written = write(&mut writer).and_then(|()| writer.flush());
    if let Err(e) = written {
        // Drop the buffered bytes instead of letting BufWriter's Drop flush them into a file
        // that is about to be deleted anyway; `tmp`'s Drop then removes the temp file.
        let _ = writer.into_parts();
        return Err(io_err(path, e));
    }
    drop(writer);

    let written_at = Instant::now();
    tmp.as_file().sync_all().map_err(|e| io_err(path, e))?;
    let synced_at = Instant::now();
    // On failure the PersistError owns the temp file and deletes it when dropped.
    tmp.persist(path).map_err(|e| io_err(path, e.error))?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    Ok(WriteTimings {
        write_ms: ms(written_at - started) + ms(synced_at.elapsed()),
        fsync_ms: ms(synced_at - written_at),
    })
}

#[cfg(test)]
mod tests {
    use super::super::fsutil::mode_of;
    use super::super::StoreError;
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn creates_replaces_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("manifest.json");
        write_atomic(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(mode_of(&path).unwrap(), 0o600);
        write_atomic(&path, b"second, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer");
        assert_eq!(mode_of(&path).unwrap(), 0o600);
        assert_eq!(names(tmp.path()), vec!["manifest.json"]);
    }

    #[test]
    fn streaming_variant_writes_many_pieces() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("big");
        let big = vec![7u8; BUF_CAPACITY * 3 + 5];
        write_atomic_with(&path, |w| {
            w.write_all(b"head")?;
            w.write_all(&big)?;
            w.write_all(b"tail")
        })
        .unwrap();
        let got = fs::read(&path).unwrap();
        assert_eq!(got.len(), 8 + big.len());
        assert_eq!(&got[..4], b"head");
        assert_eq!(&got[got.len() - 4..], b"tail");
    }

    #[test]
    fn failure_mid_write_keeps_old_content_and_removes_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        write_atomic(&path, b"old").unwrap();
        let err = write_atomic_with(&path, |w| {
            w.write_all(&vec![1u8; BUF_CAPACITY * 2])?;
            w.write_all(b"partial")?;
            Err(io::Error::other("simulated failure"))
        })
        .unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }), "{err}");
        assert!(err.to_string().contains("simulated failure"));
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(names(tmp.path()), vec!["state"]);
    }

    #[test]
    fn enospc_is_disk_full_and_keeps_old_content() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        write_atomic(&path, b"old").unwrap();
        let err = write_atomic_with(&path, |w| {
            w.write_all(b"some")?;
            Err(io::Error::from_raw_os_error(28))
        })
        .unwrap_err();
        assert!(matches!(err, StoreError::DiskFull { .. }));
        assert_eq!(
            err.to_string(),
            format!("disk full while writing {}", path.display())
        );
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(names(tmp.path()), vec!["state"]);
    }

    #[test]
    fn missing_parent_is_an_error_naming_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("no/such/dir/file");
        let err = write_atomic(&path, b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir/file"), "{err}");
    }

    #[test]
    fn real_enospc_from_dev_full_is_disk_full() {
        // /dev/full fails every write with ENOSPC: checks the mapping on a real OS error,
        // not just a constructed one.
        let Ok(mut full) = fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let e = full
            .write_all(b"x")
            .and_then(|()| full.flush())
            .unwrap_err();
        let err = io_err(Path::new("/dev/full"), e);
        assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    }
}
