//! Leases: objects a live process has written (or counted on) and will name in a manifest
//! it has not committed yet. gc keeps them.
//!
//! # Why leases
//!
//! A session's background writer stores each page as it fills, long before the save whose
//! manifest names it (a long prefill takes minutes). The store lock alone cannot cover that
//! window: a saver holding it shared from the first page to the manifest would keep every
//! gc (`kvrun gc`, another server's cold budget) waiting for as long as a conversation
//! lasts. So the page writer records each page in its lease *before* it stores it, and gc
//! adds every leased object to the manifests' live set.
//!
//! # Design
//!
//! One file per holder, `leases/<pid>-<random>.lease` under the store root, listing object
//! ids (hex, one a line). The holder keeps it open with an exclusive `flock` (fs4) for as
//! long as it lives; the kernel drops that lock when the process dies, `kill -9` included.
//! gc tells a live holder from a dead one by trying the lock: a lease it can lock belongs to
//! no one and is deleted, so a crashed holder never pins objects past the next gc. (A pid
//! check would be fooled by pid reuse; a grace period by a prefill longer than it, and by
//! pages already present, whose `put` leaves an old mtime.)
//!
//! # Consistency
//!
//! Lease files change only under the store lock held *shared* (creation, each `add`
//! together with the object's `put`), and gc reads them only under the store lock held
//! *exclusive*. So gc never sees a lease half rewritten, nor one created and not yet
//! locked, nor an object stored but not yet leased. That is also why the file is rewritten
//! in place rather than replaced by a rename: the lock is on the inode, and a reader is
//! already kept out by the store lock. No fsync either: a lease protects only while its
//! holder lives, and a machine crash ends the holder too.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use super::fsutil::{
    check_regular, create_private_dir_all, explain_link, io_err, no_follow, FILE_MODE,
};
use super::{ObjectId, ObjectStore, Result, StoreError};

/// Folder of lease files under the store root (not a fan-out name, so walks skip it).
pub const LEASE_DIR: &str = "leases";
const LEASE_SUFFIX: &str = ".lease";
/// Most a lease file is read (a million ids); past that the rest is not protected.
const LEASE_MAX_BYTES: u64 = 65 << 20;

/// Objects this process will name in a manifest it has not committed yet; see the module
/// docs. Dropping it deletes the file (the protection ends with the holder).
#[derive(Debug)]
pub struct Lease {
    file: File,
    path: PathBuf,
    ids: HashSet<ObjectId>,
}

impl ObjectStore {
    pub fn lease_dir(&self) -> PathBuf {
        self.root().join(LEASE_DIR)
    }

    /// A new, empty lease of this process. The caller holds the store lock shared, so that
    /// no gc sees the file before it is locked (and takes it for a dead holder's).
    pub fn take_lease(&self) -> Result<Lease> {
        let dir = self.lease_dir();
        create_private_dir_all(&dir)?;
        let meta = fs::symlink_metadata(&dir).map_err(|e| io_err(&dir, e))?;
        if !meta.is_dir() {
            return Err(io_err(
                &dir,
                io::Error::other("it is not a folder (a symbolic link?); kvrun keeps leases there"),
            ));
        }
        // tempfile makes the unique name (O_EXCL, mode 0600); `keep` makes it permanent.
        let (file, path) = tempfile::Builder::new()
            .prefix(&format!("{}-", std::process::id()))
            .suffix(LEASE_SUFFIX)
            .permissions(fs::Permissions::from_mode(FILE_MODE))
            .tempfile_in(&dir)
            .and_then(|t| t.keep().map_err(|e| e.error))
            .map_err(|e| io_err(&dir, e))?;
        if !FileExt::try_lock_exclusive(&file).map_err(|e| io_err(&path, e))? {
            return Err(StoreError::InUse {
                what: format!("lease {}", path.display()),
            });
        }
        let mut lease = Lease {
            file,
            path,
            ids: HashSet::new(),
        };
        lease.rewrite()?;
        Ok(lease)
    }

    /// Every object a live holder's lease lists. Leases of dead holders are deleted. The
    /// caller holds the store lock exclusive (see the module docs).
    pub fn leased_objects(&self) -> Result<HashSet<ObjectId>> {
        let dir = self.lease_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
            Err(e) => return Err(io_err(&dir, e)),
        };
        let mut leased = HashSet::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let path = entry.path();
            if !entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.ends_with(LEASE_SUFFIX))
            {
                continue;
            }
            let file = match no_follow(fs::OpenOptions::new().read(true)).open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&path, explain_link(e))),
            };
            if check_regular(&file).is_err() {
                tracing::warn!(
                    "{} is not a lease file kvrun wrote; ignored",
                    path.display()
                );
                continue;
            }
            if FileExt::try_lock_exclusive(&file).map_err(|e| io_err(&path, e))? {
                // No one holds it: its process is gone, and so is the save it protected.
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_err(&path, e)),
                }
                continue;
            }
            let mut text = String::new();
            (&file)
                .take(LEASE_MAX_BYTES)
                .read_to_string(&mut text)
                .map_err(|e| io_err(&path, e))?;
            leased.extend(
                text.lines()
                    .filter_map(|l| ObjectId::from_hex(l.trim()).ok()),
            );
        }
        Ok(leased)
    }
}

impl Lease {
    /// Lists `id` (before the caller stores or counts on it). The caller holds the store
    /// lock shared.
    pub fn add(&mut self, id: ObjectId) -> Result<()> {
        if !self.ids.insert(id) {
            return Ok(());
        }
        let line = format!("{}\n", id.to_hex());
        // Appends: the file is at its end since the last write.
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            self.ids.remove(&id);
            return Err(io_err(&self.path, e));
        }
        Ok(())
    }

    /// Lists nothing any more: a committed manifest names what the holder needs. The
    /// caller holds the store lock shared.
    pub fn clear(&mut self) -> Result<()> {
        if self.ids.is_empty() {
            return Ok(());
        }
        self.ids.clear();
        self.rewrite()
    }

    pub fn contains(&self, id: &ObjectId) -> bool {
        self.ids.contains(id)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file as the set says, from its start (a comment line for whoever looks).
    fn rewrite(&mut self) -> Result<()> {
        let mut text = format!("# kvrun lease of pid {}\n", std::process::id());
        for id in &self.ids {
            text.push_str(&id.to_hex());
            text.push('\n');
        }
        self.file
            .set_len(0)
            .and_then(|()| self.file.rewind())
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .map_err(|e| io_err(&self.path, e))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Unlinked first: a gc that opened it meanwhile finds it unlocked once it is
        // closed, and deletes a file that is gone already.
        let _ = fs::remove_file(&self.path);
        let _ = FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests;
