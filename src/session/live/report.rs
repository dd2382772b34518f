//! What a save and a restore report: their figures and where the time went.

use super::super::capture::RestorePhases;
use super::restore_choice::RestoreDecision;

/// What a restore did.
#[derive(Debug, Clone, Default)]
pub struct RestoreReport {
    /// Tokens whose KV came back from pages.
    pub restored_tokens: usize,
    /// Of those, tokens taken from pages another session stored (prefix reuse).
    pub reused_tokens: usize,
    pub restore_ms: f64,
    /// Where `restore_ms` went.
    pub phases: RestorePhases,
    /// Problems that made kvrun fall back to prefilling part of the log.
    pub warnings: Vec<String>,
    /// Whether loading or prefilling the snapshot was estimated faster (`None`: nothing
    /// to restore); serializable for `--json`.
    pub decision: Option<RestoreDecision>,
}

/// What a save did.
#[derive(Debug, Clone, Default)]
pub struct SaveReport {
    pub objects_written: usize,
    pub bytes_written: u64,
    pub save_ms: f64,
    /// Where `save_ms` went.
    pub phases: SavePhases,
    /// Objects (and their bytes) the background writer stored since the last save, while
    /// the prefill ran, and the time it spent on them (not part of `save_ms`).
    pub early_objects: usize,
    pub early_bytes: u64,
    pub early_ms: f64,
    /// Objects the manifest names that were missing from the store when it landed (a gc
    /// took them before it named them): the log is saved, those pages are recomputed on
    /// restore until a save writes them again.
    pub missing_objects: usize,
    /// For the user: once per open session, its KV type's precision warning
    /// ([`crate::settings::KvType::precision_warning`]) when the session outgrew it.
    pub warnings: Vec<String>,
}

/// The stages of a save, in milliseconds. Objects are hashed, written and fsynced on a few
/// writer threads, so `hash_ms`, `write_ms` and `fsync_ms` are summed over those threads;
/// `objects_ms` is their wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SavePhases {
    /// The engine thread's whole part (what other conversations' decoding waited for):
    /// the checks, the capture and the slicing.
    pub plan_ms: f64,
    /// The commit waiting behind the session's earlier writes (pages queued during the
    /// prefill, a previous commit).
    pub queue_ms: f64,
    /// llama.cpp's `state_seq_get_data` of the positions to store.
    pub capture_ms: f64,
    /// Parsing that state and copying its rows into position order.
    pub parse_ms: f64,
    /// Slicing page payloads out of the capture.
    pub slice_ms: f64,
    /// Slicing waiting for a writer thread (the writers were the bottleneck).
    pub queue_wait_ms: f64,
    pub hash_ms: f64,
    /// Creating, writing and renaming the objects' files.
    pub write_ms: f64,
    /// The objects' own fsyncs.
    pub fsync_ms: f64,
    /// Wall time of the objects' stage: hashing, writing and fsyncs together.
    pub objects_ms: f64,
    /// The fan-out directories' fsyncs after the renames.
    pub dir_fsync_ms: f64,
    /// Writing the manifest (atomically, with its fsyncs).
    pub manifest_ms: f64,
    /// Deleting objects the new manifest no longer names.
    pub cleanup_ms: f64,
}
