//! Small filesystem helpers: private directories and files, directory fsync, and mapping
//! `io::Error` to [`StoreError`] with the path attached.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read};
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

/// Adds the flags every open of a file inside the home needs: no following a symbolic link
/// at the last component (a planted link cannot make kvrun read or write outside the home),
/// and no blocking in `open` on a FIFO (a regular file ignores `O_NONBLOCK`).
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
}

/// Opens an existing file for reading, refusing symbolic links and anything that is not a
/// regular file (FIFO, device, directory). Returns the file and its size.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let file = no_follow(OpenOptions::new().read(true))
        .open(path)
        .map_err(explain_link)?;
    let len = check_regular(&file)?;
    Ok((file, len))
}

/// Opens a file the user named (an import file): a link the user gave is followed, but
/// the file must be a regular one, and a FIFO does not block the open.
pub fn open_given_regular(path: &Path) -> io::Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let len = check_regular(&file)?;
    Ok((file, len))
}

/// Fails unless `file` is a regular file; returns its size.
pub fn check_regular(file: &File) -> io::Result<u64> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file",
        ));
    }
    Ok(meta.len())
}

/// `ELOOP` from an `O_NOFOLLOW` open means "this is a symbolic link": say so.
pub fn explain_link(err: io::Error) -> io::Error {
    if err.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a symbolic link, which kvrun does not follow here",
        )
    } else {
        err
    }
}

/// Reads a whole regular file of at most `max` bytes, checked against its size before
/// anything is allocated (a sparse 10 GB file is refused at once), and read through a
/// `take` so a file that grows meanwhile cannot exceed the bound either.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > max {
        return Err(too_large(len, max));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    Ok(bytes)
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("is {len} bytes, more than the {max} bytes allowed"),
    )
}

/// Fsyncs a directory so that entries created, renamed or removed in it are durable. Without
/// this a rename can be lost on power failure even though the file data itself was synced.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    // The parent of a bare file name is "", which means the current directory.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
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
    fn bounded_reads_refuse_links_specials_and_oversized_files() {
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join("small");
        fs::write(&small, b"hello").unwrap();
        assert_eq!(read_bounded(&small, 5).unwrap(), b"hello");
        let err = read_bounded(&small, 4).unwrap_err();
        assert!(err.to_string().contains("more than the 4"), "{err}");
        // A sparse file far above the bound is refused from its size, without reading.
        let sparse = tmp.path().join("sparse");
        File::create(&sparse).unwrap().set_len(10 << 30).unwrap();
        assert!(read_bounded(&sparse, 1 << 20).is_err());
        // A link to /dev/zero is not followed; /dev/zero itself is not a regular file.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_bounded(&link, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        // A FIFO neither blocks nor reads.
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let err = read_bounded(&fifo, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(read_bounded(tmp.path(), 1 << 20).is_err());
    }

    #[test]
    fn fsync_dir_works_and_reports_missing() {
        let tmp = tempfile::tempdir().unwrap();
        fsync_dir(tmp.path()).unwrap();
        fsync_dir(Path::new("")).unwrap();
        let err = fsync_dir(&tmp.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope"));
    }
}
