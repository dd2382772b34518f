//! Small filesystem helpers: private directories and files, directory fsync, and mapping
//! `io::Error` to [`StoreError`] with the path attached.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use super::{Result, StoreError};

/// Mode for every directory kvrun creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode for every file kvrun creates.
pub const FILE_MODE: u32 = 0o600;

/// Creates `path` and any missing parents with mode 0700 (applied at `mkdir` time, so there
/// is no window with wider permissions). Directories that already exist are left as they are:
/// a parent may well be the user's home or `~/.local/share`, which is not ours to chmod.
///
/// Each directory it creates is made durable by fsyncing its parent, so files written into
/// it later (and fsynced) cannot vanish with it in a crash. Costs nothing when all exist.
pub fn create_private_dir_all(path: &Path) -> Result<()> {
    let missing: Vec<&Path> = path
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
        .collect();
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| io_err(path, e))?;
    for dir in missing {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fsync_dir(parent)?;
        }
    }
    Ok(())
}

/// Creates a single directory with mode 0700. Returns `true` if it was created, `false` if it
/// already existed, so the caller knows whether the parent needs an fsync.
pub(crate) fn create_private_dir(path: &Path) -> Result<bool> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(false),
        Err(e) => Err(io_err(path, e)),
    }
}

/// `OpenOptions` that create files with mode 0600. Add `read`/`write`/`create`… as needed.
pub fn private_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Fsyncs a directory so that entries created, renamed or removed in it are durable. Without
/// this a rename can be lost on power failure even though the file data itself was synced.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

/// True for "no space left on device" and for a quota limit, which is the same situation
/// from the user's point of view: free some space and retry.
pub fn is_disk_full(err: &io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122; // Linux value; on other unixes the kind check below catches it.
    matches!(
        err.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) || matches!(err.raw_os_error(), Some(ENOSPC) | Some(EDQUOT))
}

/// Attaches `path` to an I/O error, turning a full disk into [`StoreError::DiskFull`].
pub(crate) fn io_err(path: &Path, err: io::Error) -> StoreError {
    if is_disk_full(&err) {
        StoreError::DiskFull {
            path: path.to_path_buf(),
        }
    } else {
        StoreError::Io {
            path: path.to_path_buf(),
            source: err,
        }
    }
}

/// The permission bits of `path` (for tests and `kvrun doctor`-style checks).
pub fn mode_of(path: &Path) -> Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .map_err(|e| io_err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn private_dirs_are_0700_at_every_level() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        create_private_dir_all(&deep).unwrap();
        for p in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode_of(&tmp.path().join(p)).unwrap(), 0o700, "{p}");
        }
        // Idempotent.
        create_private_dir_all(&deep).unwrap();
        assert!(!create_private_dir(&deep).unwrap());
        assert!(create_private_dir(&deep.join("d")).unwrap());
        assert_eq!(mode_of(&deep.join("d")).unwrap(), 0o700);
    }

    #[test]
    fn private_files_are_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let mut f = private_file_options()
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(mode_of(&path).unwrap(), 0o600);
    }

    #[test]
    fn enospc_maps_to_disk_full_with_one_line_message() {
        let err = io_err(Path::new("/x/y"), io::Error::from_raw_os_error(28));
        assert!(matches!(err, StoreError::DiskFull { .. }));
        assert_eq!(err.to_string(), "disk full while writing /x/y");
        let err = io_err(
            Path::new("/x/y"),
            io::Error::from(io::ErrorKind::StorageFull),
        );
        assert!(matches!(err, StoreError::DiskFull { .. }));
        let err = io_err(Path::new("/x/y"), io::Error::from_raw_os_error(13));
        assert!(matches!(err, StoreError::Io { .. }));
        let msg = err.to_string();
        assert!(msg.starts_with("I/O error on /x/y: "), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn fsync_dir_works_and_reports_missing() {
        let tmp = tempfile::tempdir().unwrap();
        fsync_dir(tmp.path()).unwrap();
        let err = fsync_dir(&tmp.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope"));
    }
}
