//! Advisory file locks: [`SessionLock`] (one process per session, fail fast) and
//! [`StoreLock`] (gc exclusive vs savers shared, blocking).
//!
//! Uses `fs4` rather than `fd-lock`: both are maintained, but `fs4` locks a plain
//! `std::fs::File` that the guard can own, while `fd-lock` hands out guards that borrow its
//! `RwLock`, which would make a lifetime-free guard struct self-referential. `fs4` is
//! `flock(2)` through rustix (already in kvrun's tree), no libc.
//!
//! The `fs4::fs_std::FileExt` methods are called in fully qualified form on purpose: since
//! Rust 1.89 `std::fs::File` has inherent `lock_shared`/`unlock`/`try_lock…` methods that
//! would silently win method resolution on newer toolchains, with different signatures.
//!
//! Lock files are never deleted: unlinking a lock file while another process has it open
//! and is waiting lets two processes "hold" locks on two different inodes.
//!
//! Caveat: the lock is per open file description. A process that holds the shared store lock
//! and then asks for the exclusive one through another handle deadlocks with itself.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fs4::fs_std::FileExt;

use super::fsutil::{check_regular, explain_link, io_err, no_follow, private_file_options};
use super::{Result, StoreError};

/// Opens (creating 0600) a lock file. A symbolic link planted in its place is refused, not
/// followed, and so is anything but a regular file: the holder truncates the file to write
/// its pid, which must never reach a file outside the home.
fn open_lock_file(path: &Path) -> Result<File> {
    let file = no_follow(
        private_file_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false), // the holder's pid is in there; truncating is the holder's call
    )
    .open(path)
    .map_err(|e| io_err(path, explain_link(e)))?;
    check_regular(&file).map_err(|e| io_err(path, e))?;
    Ok(file)
}

/// What this process calls itself in the lock files it holds (`kvrun serve`), so a
/// contender's message can name it. Unset, it is `kvrun`.
static PROCESS_NAME: OnceLock<String> = OnceLock::new();

/// Names this process in the session locks it takes from now on (the first call wins).
pub fn name_this_process(name: &str) {
    let _ = PROCESS_NAME.set(name.to_string());
}

/// Who holds a session lock, as the holder wrote it: `PID` (older kvrun) or `PID NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: u32,
    pub command: Option<String>,
}

impl LockHolder {
    /// Parses a lock file's text; anything else (empty, garbage) is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (pid, command) = text.split_once(' ').unwrap_or((text, ""));
        let pid = pid.parse().ok()?;
        let command = command.trim();
        let printable =
            !command.is_empty() && command.chars().all(|c| c.is_ascii_graphic() || c == ' ');
        Some(Self {
            pid,
            command: printable.then(|| command.to_string()),
        })
    }

    /// `kvrun serve (pid 12)`, or `pid 12` when the holder did not say what it is.
    pub fn describe(&self) -> String {
        match &self.command {
            Some(command) => format!("{command} (pid {})", self.pid),
            None => format!("pid {}", self.pid),
        }
    }

    fn of_this_process() -> Self {
        Self {
            pid: std::process::id(),
            command: Some(
                PROCESS_NAME
                    .get()
                    .map_or("kvrun", String::as_str)
                    .to_string(),
            ),
        }
    }

    fn line(&self) -> String {
        match &self.command {
            Some(command) => format!("{} {command}\n", self.pid),
            None => format!("{}\n", self.pid),
        }
    }
}

/// Most a lock file's holder line may take (a pid and a short command name).
pub const HOLDER_MAX_BYTES: u64 = 128;

/// Retries a blocking lock call interrupted by a signal.
fn retry_eintr(mut f: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Exclusive, non-blocking lock on one session, held while the guard lives. Released on drop
/// and by the kernel when the process dies (any signal, `kill -9` included).
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Takes the lock or fails at once with [`StoreError::InUse`], naming the lock file and,
    /// when it can be read, the pid of the holder. The file is created 0600 if missing; its
    /// parent directory must exist.
    pub fn try_acquire(lock_path: impl AsRef<Path>) -> Result<SessionLock> {
        let path = lock_path.as_ref();
        let mut file = open_lock_file(path)?;
        let locked = FileExt::try_lock_exclusive(&file).map_err(|e| io_err(path, e))?;
        if !locked {
            let mut text = String::new();
            // Best effort: only improves the message.
            let _ = (&file).take(HOLDER_MAX_BYTES).read_to_string(&mut text);
            let what = match LockHolder::parse(&text) {
                Some(holder) => {
                    format!(
                        "session lock {} (held by {})",
                        path.display(),
                        holder.describe()
                    )
                }
                None => format!("session lock {}", path.display()),
            };
            return Err(StoreError::InUse { what });
        }
        // Record who holds it, for the InUse message of the next contender. Informational
        // only: the lock itself is the flock, not this content.
        let holder = LockHolder::of_this_process().line();
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(|e| io_err(path, e))?;
        Ok(SessionLock {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Closing the file releases the lock anyway; unlocking explicitly also covers a
        // forked child that might still hold a duplicate of the descriptor.
        let _ = FileExt::unlock(&self.file);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    Shared,
    Exclusive,
}

/// Reader/writer lock over the object store: savers hold it shared, gc holds it exclusive
/// from reading the manifests until the last delete. Held while the guard lives.
#[derive(Debug)]
pub struct StoreLock {
    file: File,
    path: PathBuf,
    mode: LockMode,
}

impl StoreLock {
    /// Blocks until the shared lock is granted.
    pub fn shared(lock_path: impl AsRef<Path>) -> Result<StoreLock> {
        Self::acquire(lock_path.as_ref(), LockMode::Shared)
    }

    /// Blocks until the exclusive lock is granted.
    pub fn exclusive(lock_path: impl AsRef<Path>) -> Result<StoreLock> {
        Self::acquire(lock_path.as_ref(), LockMode::Exclusive)
    }

    /// Takes the exclusive lock or fails at once with [`StoreError::InUse`] (e.g. for a
    /// `kvrun gc` that should not wait behind a long save).
    pub fn try_exclusive(lock_path: impl AsRef<Path>) -> Result<StoreLock> {
        let path = lock_path.as_ref();
        let file = open_lock_file(path)?;
        if !FileExt::try_lock_exclusive(&file).map_err(|e| io_err(path, e))? {
            return Err(StoreError::InUse {
                what: format!("object store lock {}", path.display()),
            });
        }
        Ok(StoreLock {
            file,
            path: path.to_path_buf(),
            mode: LockMode::Exclusive,
        })
    }

    fn acquire(path: &Path, mode: LockMode) -> Result<StoreLock> {
        let file = open_lock_file(path)?;
        retry_eintr(|| match mode {
            LockMode::Shared => FileExt::lock_shared(&file),
            LockMode::Exclusive => FileExt::lock_exclusive(&file),
        })
        .map_err(|e| io_err(path, e))?;
        Ok(StoreLock {
            file,
            path: path.to_path_buf(),
            mode,
        })
    }

    pub fn mode(&self) -> LockMode {
        self.mode
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fsutil::mode_of;
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_symlinked_lock_file_is_refused_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, b"precious").unwrap();
        let link = tmp.path().join("s.lock");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let err = SessionLock::try_acquire(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(StoreLock::shared(&link).is_err());
        assert!(StoreLock::try_exclusive(&link).is_err());
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        // A dangling link is not created through either.
        let dangling = tmp.path().join("d.lock");
        std::os::unix::fs::symlink(tmp.path().join("created"), &dangling).unwrap();
        assert!(SessionLock::try_acquire(&dangling).is_err());
        assert!(!tmp.path().join("created").exists());
        // Nor is a FIFO opened (which would block).
        let fifo = tmp.path().join("f.lock");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = SessionLock::try_acquire(&fifo).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn second_handle_in_same_process_is_in_use_until_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.lock");
        let first = SessionLock::try_acquire(&path).unwrap();
        assert_eq!(mode_of(&path).unwrap(), 0o600);
        // A separate open file description conflicts even within one process (flock).
        let err = SessionLock::try_acquire(&path).unwrap_err();
        match &err {
            StoreError::InUse { what } => {
                assert!(what.contains("session.lock"), "{what}");
                assert!(what.contains(&std::process::id().to_string()), "{what}");
            }
            other => panic!("expected InUse, got {other}"),
        }
        assert!(err
            .to_string()
            .ends_with("is in use by another kvrun process"));
        drop(first);
        let again = SessionLock::try_acquire(&path).unwrap();
        assert_eq!(again.path(), path);
    }

    #[test]
    fn holder_lines_old_and_new_parse() {
        assert_eq!(
            LockHolder::parse("123\n"),
            Some(LockHolder {
                pid: 123,
                command: None
            })
        );
        let serve = LockHolder::parse("77 kvrun serve\n").unwrap();
        assert_eq!(serve.describe(), "kvrun serve (pid 77)");
        assert_eq!(LockHolder::parse(&serve.line()), Some(serve));
        assert_eq!(LockHolder::parse(""), None);
        assert_eq!(LockHolder::parse("x 1"), None);
        // A control character in the name is not echoed into a message.
        assert_eq!(LockHolder::parse("5 a\u{1b}[2J").unwrap().command, None);
    }

    #[test]
    fn contention_from_another_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.lock");
        let held = SessionLock::try_acquire(&path).unwrap();
        let p = path.clone();
        let r = std::thread::spawn(move || SessionLock::try_acquire(&p).map(|_| ()))
            .join()
            .unwrap();
        assert!(matches!(r, Err(StoreError::InUse { .. })));
        drop(held);
        let p = path.clone();
        std::thread::spawn(move || SessionLock::try_acquire(&p).map(|_| ()))
            .join()
            .unwrap()
            .unwrap();
    }

    #[test]
    fn lock_held_by_another_process_is_released_by_kill_9() {
        // flock(1) from util-linux takes the same flock(2) lock; skip where it is absent.
        // `-o` closes the locked descriptor in the command it runs, so the lock is owned by
        // the flock process alone and SIGKILLing it must release the lock.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.lock");
        std::fs::write(&path, b"").unwrap();
        let ready = tmp.path().join("ready");
        let child = std::process::Command::new("flock")
            .arg("-x")
            .arg("-o")
            .arg(&path)
            .args(["sh", "-c", "echo $$ > \"$0\"; exec sleep 30"])
            .arg(&ready)
            .spawn();
        let Ok(mut child) = child else { return };
        let mut sleeper = String::new();
        for _ in 0..500 {
            sleeper = std::fs::read_to_string(&ready).unwrap_or_default();
            if sleeper.ends_with('\n') {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(sleeper.ends_with('\n'), "child never took the lock");
        let err = SessionLock::try_acquire(&path).unwrap_err();
        assert!(matches!(err, StoreError::InUse { .. }), "{err}");

        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acquired = SessionLock::try_acquire(&path);
        // Clean up the orphaned `sleep` (it never held the lock).
        let _ = std::process::Command::new("kill")
            .args(["-9", sleeper.trim()])
            .status();
        acquired.expect("lock not released after kill -9");
    }

    #[test]
    fn shared_store_locks_coexist_and_exclusive_waits() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store.lock");
        let s1 = StoreLock::shared(&path).unwrap();
        let s2 = StoreLock::shared(&path).unwrap();
        assert_eq!(s1.mode(), LockMode::Shared);
        assert!(matches!(
            StoreLock::try_exclusive(&path),
            Err(StoreError::InUse { .. })
        ));

        let got = Arc::new(AtomicBool::new(false));
        let (p, g) = (path.clone(), got.clone());
        let waiter = std::thread::spawn(move || {
            let l = StoreLock::exclusive(&p).unwrap();
            g.store(true, Ordering::SeqCst);
            assert_eq!(l.mode(), LockMode::Exclusive);
            std::thread::sleep(Duration::from_millis(100));
        });
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            !got.load(Ordering::SeqCst),
            "exclusive granted while shared held"
        );
        drop(s1);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!got.load(Ordering::SeqCst));
        drop(s2);
        waiter.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
        // Released on the waiter's drop.
        StoreLock::try_exclusive(&path).unwrap();
    }
}
