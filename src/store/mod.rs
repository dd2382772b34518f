//! On-disk storage primitives for kvrun: a content-addressed object store for KV pages,
//! crash-safe file replacement, advisory locks, and private file permissions.
//!
//! # Layout
//!
//! Objects live under a root such as `<data>/kv/objects`, fanned out by the first byte of
//! their id: `objects/ab/cdef…` (2 + 62 hex characters). Each file is a 64-byte header
//! followed by the payload; see [`object`] for the exact format. Objects are immutable:
//! writing an id that is already present is a no-op.
//!
//! # Crash safety
//!
//! Every file is written with [`write_atomic`]: temp file in the same directory, write,
//! fsync, rename over the target, fsync the directory. A reader (or a process restarted
//! after a crash) sees either the old file or the complete new one, never a prefix. A stray
//! temp file can survive a crash; [`ObjectStore::gc`] removes those once they are a minute
//! old.
//!
//! # Reference counting: derived, not persisted
//!
//! The store keeps no reference counts. The caller derives the live set from the session
//! manifests and hands it to [`ObjectStore::gc`]. A persisted counter would be a second
//! source of truth that has to change in the same atomic step as the manifest that adds or
//! drops the reference; a filesystem offers no such step across two files, so a crash
//! between the two writes either leaks an object (harmless) or frees one that a manifest
//! still names (a dangling reference, i.e. data loss), and fixing that needs a journal.
//! Deriving the set from the manifests has only the harmless failure mode, provided that
//!
//! 1. a saver writes (and so fsyncs) all objects *before* the manifest that names them, and
//! 2. savers hold the [`StoreLock`] shared while gc holds it exclusive, across the whole
//!    "read all manifests, build the live set, delete" sequence.
//!
//! After a crash the worst case is an unreferenced object, which the next gc removes.
//!
//! Objects written *long* before their manifest (a session's pages, stored as the prefill
//! fills them) are protected in between by the writer's [`Lease`] instead of a lock held for
//! minutes: gc keeps every object a live process's lease lists; see [`lease`].
//!
//! # Locks
//!
//! [`SessionLock`] keeps two kvrun processes from driving one session at once;
//! [`StoreLock`] serialises gc against savers. Both are `flock(2)` advisory locks (via
//! `fs4`), owned by an open file description: the kernel drops them when the guard's file
//! is closed, including when the process dies, `kill -9` too. Two handles opened separately
//! in one process conflict with each other just as two processes do.
//!
//! # Permissions
//!
//! Everything created here is private to the user: directories `0700`, files `0600`, set
//! through the `mode` at creation (see [`fsutil`]) so there is no window with wider
//! permissions.

pub mod atomic;
mod batch;
mod checksum;
mod error;
pub mod fsutil;
pub mod id;
pub mod lease;
pub mod lock;
pub mod object;
mod payload;
mod walk;

pub use self::atomic::{write_atomic, write_atomic_with, TEMP_PREFIX};
pub use self::batch::{BatchTimings, Payload, PutJob};
pub use self::error::{Result, StoreError};
pub use self::fsutil::{create_private_dir_all, fsync_dir, private_file_options};
pub use self::id::{IdChain, ObjectId};
pub use self::lease::Lease;
pub use self::lock::{LockMode, SessionLock, StoreLock};
pub use self::object::{GcReport, ObjectKind, ObjectStore, PutOutcome, UnverifiedPayload};
pub use self::payload::{PayloadPart, PayloadReader};
