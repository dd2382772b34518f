//! Content-addressed object store: immutable blobs (KV pages, tails) named by [`ObjectId`].
//!
//! # File format (version 3)
//!
//! ```text
//! offset  size  field
//!      0     8  magic b"KVROBJ\x00\x03" (last two bytes: format version)
//!      8     1  kind: 0x03 page, 0x05 tail, 0x06 other
//!      9     1  flags: bit 0 reserved for zstd compression; all bits 0 for now
//!     10     6  reserved, zero
//!     16     8  payload length, u64 little-endian
//!     24    32  XXH3-128 of the payload (16 bytes little-endian, then 16 zero bytes)
//!     56     8  reserved, zero
//!     64    32  the object's own id (must equal the id its file is named by)
//!     96     …  payload
//! ```
//!
//! The checksum proves the payload is intact; the id inside proves it is *that* object. A
//! page's id is derived from its tokens (see `kv::page`), so a valid page copied over
//! another page's file, or a file renamed, passes the checksum but not the id check, and a
//! reader asks for an id it has recomputed itself, never one it merely read somewhere.
//!
//! The header is not checksummed itself, yet any single flipped bit in it is caught: magic,
//! flags and reserved bytes must match exactly, the length must match the file size, the
//! checksum must match the payload, the id must match the name, and the kind codes are
//! pairwise two bits apart so one flip cannot turn a valid kind into another. A later format
//! changes the version bytes of the magic rather than reusing reserved bytes silently.
//! Format 2 is format 3 with blake3 as the checksum (see [`super::checksum`] for why it
//! changed); its objects are read as they are. Objects of format 1 (no id inside) read as
//! corrupt: their sessions recompute those pages from the token log and the next save
//! rewrites them.
//!
//! Files are opened without following symbolic links and must be regular files of at most
//! [`MAX_OBJECT_BYTES`].

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::atomic::{write_atomic_unsynced_dir, WriteTimings};
use super::checksum::{checksum, ChecksumKind};
use super::fsutil::{create_private_dir, create_private_dir_all, fsync_dir, io_err, open_regular};
use super::lock::StoreLock;
use super::walk::{Entries, Entry};
use super::{ObjectId, Result, StoreError};

pub const MAGIC: [u8; 8] = *b"KVROBJ\x00\x03";
/// Format 2's magic: its objects carry blake3 and are read as before.
pub const MAGIC_V2: [u8; 8] = *b"KVROBJ\x00\x02";
pub const HEADER_LEN: usize = 96;
/// Largest object file accepted, but for a state: far above any real page (a 256-token
/// page of a 70B model's f16 KV is about 80 MiB), so a corrupt or planted file cannot make a
/// read unbounded.
pub const MAX_OBJECT_BYTES: u64 = 1 << 30;
/// Largest state object accepted. A hybrid model's whole state holds its attention KV for
/// every token: Qwen3.5-27B's is 64 KiB a token plus 150 MiB, so 1.2 GB at 16k tokens and
/// 16.2 GiB at its 262,144-token context.
pub const MAX_STATE_BYTES: u64 = 64 << 30;
/// Reserved: payload is zstd-compressed. Not produced or accepted by this version.
pub const FLAG_ZSTD: u8 = 0x01;
/// Name of the store lock file inside the store root (not an object, skipped by iteration).
pub const STORE_LOCK_FILE: &str = ".lock";
/// Stray temp files younger than this may belong to a writer still running.
const TEMP_GRACE: Duration = Duration::from_secs(60);

/// What an object holds; stored in the header so a misfiled blob is detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectKind {
    /// A full KV page.
    Page = 0x03,
    /// The partial page at the end of a session.
    Tail = 0x05,
    Other = 0x06,
    /// llama.cpp's whole state of a sequence whose memory kvrun does not page (recurrent,
    /// hybrid), at the end of a session's log. (Each kind byte is at least two bit flips
    /// from every other, so one flipped bit never reads as another kind.)
    State = 0x18,
}

impl ObjectKind {
    /// The largest file of this kind that is read (and written).
    pub fn max_file_bytes(self) -> u64 {
        match self {
            ObjectKind::State => MAX_STATE_BYTES,
            _ => MAX_OBJECT_BYTES,
        }
    }

    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0x03 => Some(Self::Page),
            0x05 => Some(Self::Tail),
            0x06 => Some(Self::Other),
            0x18 => Some(Self::State),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutOutcome {
    /// Bytes written to disk (header included); 0 when the object was already present.
    pub written_bytes: u64,
    pub already_present: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Objects deleted because they were not in the live set.
    pub removed: u64,
    /// Objects kept.
    pub kept: u64,
    /// Of those, objects no manifest names yet that a live process's lease protects.
    pub leased: u64,
    /// Stray temp files (older than a minute) deleted.
    pub temp_removed: u64,
    /// Referenced objects deleted because their header is damaged or names another object
    /// (the sessions naming them recompute those pages and their next save rewrites them).
    pub corrupt_removed: u64,
    /// File bytes freed by both kinds of deletion.
    pub bytes_freed: u64,
}

/// Where one object write's time went (a save's phases add these up).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct PutTimings {
    pub(super) hash_ms: f64,
    pub(super) write: WriteTimings,
}

/// A payload read (header, binding and length checked) whose checksum is not checked yet.
/// Nothing may use the bytes before [`Self::verify`] accepts them.
#[must_use = "the payload is unverified until `verify` accepts it"]
#[derive(Debug)]
pub struct UnverifiedPayload {
    id: ObjectId,
    kind: ObjectKind,
    checksum_kind: ChecksumKind,
    checksum: [u8; 32],
}

impl UnverifiedPayload {
    /// Checks `payload` (the bytes the read returned) against the header's checksum.
    pub fn verify(self, payload: &[u8]) -> Result<ObjectKind> {
        if checksum(self.checksum_kind, payload) != self.checksum {
            return Err(StoreError::Corrupt {
                id: self.id,
                detail: "payload checksum mismatch".to_string(),
            });
        }
        Ok(self.kind)
    }
}

pub(super) struct Header {
    pub(super) id: ObjectId,
    pub(super) kind: ObjectKind,
    pub(super) payload_len: u64,
    /// Which checksum `checksum` is: the format's.
    pub(super) checksum_kind: ChecksumKind,
    pub(super) checksum: [u8; 32],
}

impl Header {
    /// The header bytes, in the format of its checksum kind.
    pub(super) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(match self.checksum_kind {
            ChecksumKind::Xxh3 => &MAGIC,
            ChecksumKind::Blake3 => &MAGIC_V2,
        });
        h[8] = self.kind as u8;
        h[16..24].copy_from_slice(&self.payload_len.to_le_bytes());
        h[24..56].copy_from_slice(&self.checksum);
        h[64..96].copy_from_slice(self.id.as_bytes());
        h
    }

    /// Validates everything that can be checked without the payload; the error is the
    /// `detail` of a [`StoreError::Corrupt`].
    fn decode(h: &[u8; HEADER_LEN], file_len: u64, want: &ObjectId) -> Result<Header, String> {
        let checksum_kind = match &h[0..8] {
            m if m == MAGIC => ChecksumKind::Xxh3,
            m if m == MAGIC_V2 => ChecksumKind::Blake3,
            _ => return Err(Self::unreadable_format(h)),
        };
        let kind =
            ObjectKind::from_byte(h[8]).ok_or_else(|| format!("unknown kind 0x{:02x}", h[8]))?;
        if h[9] != 0 {
            return Err(format!(
                "unsupported flags 0x{:02x} (compressed objects need a newer kvrun)",
                h[9]
            ));
        }
        if h[10..16].iter().chain(&h[56..64]).any(|&b| b != 0) {
            return Err("reserved header bytes are not zero".to_string());
        }
        let payload_len = u64::from_le_bytes(h[16..24].try_into().expect("8 bytes"));
        if Some(file_len) != payload_len.checked_add(HEADER_LEN as u64) {
            return Err(format!(
                "header says {payload_len} payload bytes but the file holds {}",
                file_len.saturating_sub(HEADER_LEN as u64)
            ));
        }
        let checksum = h[24..56].try_into().expect("32 bytes");
        let id = ObjectId(h[64..96].try_into().expect("32 bytes"));
        if id != *want {
            return Err(format!(
                "the file holds object {id}, not this one (a misplaced or copied file)"
            ));
        }
        Ok(Header {
            id,
            kind,
            payload_len,
            checksum_kind,
            checksum,
        })
    }

    /// Why a header with a magic other than format 2's or 3's is not read.
    fn unreadable_format(h: &[u8; HEADER_LEN]) -> String {
        if h[0..6] == MAGIC[0..6] && h[6..8] < MAGIC_V2[6..8] {
            format!(
                "written by an older kvrun (object format {}); it is recomputed and rewritten",
                u16::from_be_bytes([h[6], h[7]])
            )
        } else if h[0..6] == MAGIC[0..6] {
            format!("unsupported format version {:02x}{:02x}", h[6], h[7])
        } else {
            "bad magic (not a kvrun object)".to_string()
        }
    }
}

/// Objects under one root directory, fanned out as `root/ab/cdef…`.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    root: PathBuf,
}

impl ObjectStore {
    /// Opens (creating with mode 0700 if needed) the store rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        create_private_dir_all(&root)?;
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn object_path(&self, id: &ObjectId) -> PathBuf {
        let hex = id.to_hex();
        self.root.join(&hex[..2]).join(&hex[2..])
    }

    /// Path of the shared/exclusive lock guarding gc against savers.
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(STORE_LOCK_FILE)
    }

    /// Blocking shared lock, held by savers while they write objects and their manifest.
    pub fn lock_shared(&self) -> Result<StoreLock> {
        StoreLock::shared(self.lock_path())
    }

    /// Blocking exclusive lock, held by gc from computing the live set to the last delete.
    pub fn lock_exclusive(&self) -> Result<StoreLock> {
        StoreLock::exclusive(self.lock_path())
    }

    /// Stores `payload` under `id` unless an object with a valid header is already there
    /// (objects are immutable; a damaged one is replaced). The write is atomic and durable
    /// when this returns, so a manifest naming `id` may be written next.
    pub fn put(&self, id: &ObjectId, kind: ObjectKind, payload: &[u8]) -> Result<PutOutcome> {
        if self.check_header(id).is_ok() {
            return Ok(PutOutcome {
                written_bytes: 0,
                already_present: true,
            });
        }
        self.replace(id, kind, payload)
    }

    /// Writes `payload` under `id` even if a file is there: repairs an object whose payload
    /// a read found damaged (its header may look fine). Atomic like [`Self::put`]; a reader
    /// sees the damaged object or the new one, never a mix.
    pub fn replace(&self, id: &ObjectId, kind: ObjectKind, payload: &[u8]) -> Result<PutOutcome> {
        let (outcome, _) = self.replace_unsynced_dir(id, kind, payload)?;
        fsync_dir(
            self.object_path(id)
                .parent()
                .expect("object path has a fan-out parent"),
        )?;
        Ok(outcome)
    }

    /// [`Self::replace`] but for the fsync of the object's fan-out directory, which the
    /// caller owes before anything names the object; returns whether that directory was
    /// created (then the store root was fsynced too).
    pub(super) fn replace_unsynced_dir(
        &self,
        id: &ObjectId,
        kind: ObjectKind,
        payload: &[u8],
    ) -> Result<(PutOutcome, bool)> {
        self.replace_unsynced_dir_timed(id, kind, payload)
            .map(|(outcome, created, _)| (outcome, created))
    }

    /// [`Self::replace_unsynced_dir`], also saying where its time went.
    pub(super) fn replace_unsynced_dir_timed(
        &self,
        id: &ObjectId,
        kind: ObjectKind,
        payload: &[u8],
    ) -> Result<(PutOutcome, bool, PutTimings)> {
        let path = self.object_path(id);
        // What a read would refuse is not written: the save fails and says so.
        let file_len = (HEADER_LEN + payload.len()) as u64;
        if file_len > kind.max_file_bytes() {
            return Err(StoreError::TooLarge {
                path,
                len: file_len,
                max: kind.max_file_bytes(),
            });
        }
        let dir = path.parent().expect("object path has a fan-out parent");
        let created = create_private_dir(dir)?;
        if created {
            // The new fan-out directory must itself survive a crash.
            fsync_dir(&self.root)?;
        }
        let hash_started = Instant::now();
        let checksum = checksum(ChecksumKind::Xxh3, payload);
        let hash_ms = hash_started.elapsed().as_secs_f64() * 1e3;
        let header = Header {
            id: *id,
            kind,
            payload_len: payload.len() as u64,
            checksum_kind: ChecksumKind::Xxh3,
            checksum,
        }
        .encode();
        let write = write_atomic_unsynced_dir(&path, |w| {
            w.write_all(&header)?;
            w.write_all(payload)
        })?;
        let outcome = PutOutcome {
            written_bytes: (HEADER_LEN + payload.len()) as u64,
            already_present: false,
        };
        Ok((outcome, created, PutTimings { hash_ms, write }))
    }

    /// Opens `id`'s file (no symlinks, regular files of a sane size only) and checks its
    /// header, binding included; the payload is not read. The error is a
    /// [`StoreError::Corrupt`] detail, or the store error itself.
    pub(super) fn open_checked(&self, id: &ObjectId) -> Result<(File, Header)> {
        let path = self.object_path(id);
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        let (mut file, file_len) = match open_regular(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::Missing { id: *id })
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                return Err(corrupt(format!("its file {e}")))
            }
            Err(e) => return Err(io_err(&path, e)),
        };
        let too_large = |max: u64| {
            corrupt(format!(
                "its file is {file_len} bytes, more than the {max} bytes allowed"
            ))
        };
        if file_len > MAX_STATE_BYTES {
            return Err(too_large(MAX_STATE_BYTES));
        }
        let mut h = [0u8; HEADER_LEN];
        match file.read_exact(&mut h) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(corrupt(format!(
                    "truncated header: file is {file_len} bytes, header needs {HEADER_LEN}"
                )))
            }
            Err(e) => return Err(io_err(&path, e)),
        }
        let header = Header::decode(&h, file_len, id).map_err(corrupt)?;
        if file_len > header.kind.max_file_bytes() {
            return Err(too_large(header.kind.max_file_bytes()));
        }
        Ok((file, header))
    }

    /// Whether `id`'s file has a valid header naming `id` (the payload is not verified).
    pub fn check_header(&self, id: &ObjectId) -> Result<()> {
        self.open_checked(id).map(drop)
    }

    /// Reads and verifies an object. See [`Self::read_into`].
    pub fn get(&self, id: &ObjectId) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(id, &mut buf)?;
        Ok(buf)
    }

    /// Reads the payload of `id` into `buf` (cleared first; its allocation is reused) and
    /// returns the object's kind: [`Self::read_unverified_into`], then the checksum.
    pub fn read_into(&self, id: &ObjectId, buf: &mut Vec<u8>) -> Result<ObjectKind> {
        let unverified = self.read_unverified_into(id, buf)?;
        unverified.verify(buf).inspect_err(|_| buf.clear())
    }

    /// Reads the payload of `id` into `buf` (cleared first) after checking the header and
    /// the length, but leaves the checksum to [`UnverifiedPayload::verify`], so a caller
    /// can time it or run it on another thread. The payload arrives in one large `read`
    /// straight into the buffer's spare capacity (no zero-fill).
    pub fn read_unverified_into(
        &self,
        id: &ObjectId,
        buf: &mut Vec<u8>,
    ) -> Result<UnverifiedPayload> {
        buf.clear();
        let path = self.object_path(id);
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        let (mut file, header) = self.open_checked(id)?;
        // The size was checked against the file's length, so this reservation is bounded
        // by real data, never by a corrupt length field.
        let want = usize::try_from(header.payload_len)
            .map_err(|_| corrupt("payload too large for this platform".to_string()))?;
        buf.try_reserve_exact(want)
            .map_err(|_| corrupt(format!("cannot allocate {want} bytes")))?;
        // File::read_to_end sizes its read from the remaining file length: one syscall for
        // the payload plus a tiny EOF probe.
        file.read_to_end(buf).map_err(|e| io_err(&path, e))?;
        if buf.len() != want {
            let got = buf.len();
            buf.clear();
            return Err(corrupt(format!(
                "payload is {got} bytes, header says {want}"
            )));
        }
        Ok(UnverifiedPayload {
            id: header.id,
            kind: header.kind,
            checksum_kind: header.checksum_kind,
            checksum: header.checksum,
        })
    }

    /// Whether a file for `id` exists (its content is not verified).
    pub fn contains(&self, id: &ObjectId) -> Result<bool> {
        let path = self.object_path(id);
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(&path, e)),
        }
    }

    /// Deletes `id`; `Ok(false)` if it was not there. The directory is not fsynced: an
    /// unreferenced object resurrected by a crash is harmless and the next gc takes it.
    pub fn remove(&self, id: &ObjectId) -> Result<bool> {
        let path = self.object_path(id);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(&path, e)),
        }
    }

    /// File size of `id` in bytes, header included.
    pub fn size_on_disk(&self, id: &ObjectId) -> Result<u64> {
        let path = self.object_path(id);
        match fs::metadata(&path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::Missing { id: *id }),
            Err(e) => Err(io_err(&path, e)),
        }
    }

    /// Every stored object id, in directory order. Temp files, the lock file and anything
    /// not named like an object are skipped.
    pub fn iter(&self) -> impl Iterator<Item = Result<ObjectId>> {
        self.entries().filter_map(|e| match e {
            Ok(Entry { id: Some(id), .. }) => Some(Ok(id)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
    }

    /// `(object count, total bytes on disk)`; temp files are not counted.
    pub fn usage(&self) -> Result<(u64, u64)> {
        let (mut count, mut bytes) = (0u64, 0u64);
        for entry in self.entries() {
            let entry = entry?;
            if entry.id.is_none() {
                continue;
            }
            match fs::symlink_metadata(&entry.path) {
                Ok(m) => {
                    count += 1;
                    bytes += m.len();
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&entry.path, e)),
            }
        }
        Ok((count, bytes))
    }

    /// Deletes every object neither in `live` nor leased by a live process (see
    /// [`super::lease`]), objects whose header is damaged, and temp files more than a minute
    /// old.
    ///
    /// The caller must hold the exclusive store lock ([`Self::lock_exclusive`]) from before
    /// it reads the manifests that make up `live` until this returns; otherwise a saver could
    /// publish a manifest naming an object deleted here. Empty fan-out directories are kept
    /// (at most 256), so a concurrent `put` never loses its directory.
    pub fn gc(&self, live: &HashSet<ObjectId>) -> Result<GcReport> {
        let now = SystemTime::now();
        let mut report = GcReport::default();
        let leased = self.leased_objects()?;
        for entry in self.entries() {
            let entry = entry?;
            let mut damaged = false;
            if entry
                .id
                .is_some_and(|id| !live.contains(&id) && leased.contains(&id))
            {
                // Written ahead of a manifest still to come (a prefill's pages).
                report.leased += 1;
                report.kept += 1;
                continue;
            }
            if let Some(id) = entry.id {
                if live.contains(&id) {
                    // A live object whose header is damaged (or names another object) is of
                    // no use to the session naming it, which recomputes it anyway: delete
                    // it rather than keep it forever. A payload-only flip is repaired by the
                    // next save of a session that reads it.
                    match self.check_header(&id) {
                        Err(StoreError::Corrupt { .. }) => damaged = true,
                        _ => {
                            report.kept += 1;
                            continue;
                        }
                    }
                }
            }
            let meta = match fs::symlink_metadata(&entry.path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&entry.path, e)),
            };
            if entry.id.is_none() {
                // A temp file: only strays older than the grace period.
                let age = meta
                    .modified()
                    .ok()
                    .and_then(|m| now.duration_since(m).ok());
                if !meta.is_file() || age.is_none_or(|a| a < TEMP_GRACE) {
                    continue;
                }
            }
            match fs::remove_file(&entry.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&entry.path, e)),
            }
            report.bytes_freed += meta.len();
            if damaged {
                report.corrupt_removed += 1;
            } else if entry.id.is_some() {
                report.removed += 1;
            } else {
                report.temp_removed += 1;
            }
        }
        Ok(report)
    }

    fn entries(&self) -> Entries {
        Entries::new(self.root.clone())
    }
}

#[cfg(test)]
mod tests;
