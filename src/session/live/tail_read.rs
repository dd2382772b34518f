//! A restore's tail record, read whole when a path needs it so. The plan needs the tail's
//! cell count before any page is read, but the manifest already says what it must be (the
//! log's length past the last full page), so the restore plans with that count, and its
//! last chunk reads the record's rows straight into their places ([`super::chunk_read`]),
//! as it reads a page's. Reading the record into a buffer of its own on another thread
//! and copying its rows in cost an 8B-shaped restore a page's worth of memory traffic
//! (32 MiB) and a third reader at its start. A record that is damaged or does not match
//! fails that chunk, and the restore falls back to the careful path, which reads it here
//! and plans again from what it really holds.

use std::cell::OnceCell;

use super::buffers::kept_buffer;
use super::page_read::{read_object, PageRequest};
use crate::kv::layout::{BASE, SWA};
use crate::kv::{KvLayout, TailRecord};
use crate::session::capture::RestorePhases;
use crate::session::kv_error::LiveResult as Result;
use crate::store::{ObjectId, ObjectStore};
use crate::tiers::WarmPool;

/// A tail record, read on first use and kept for the rest of the restore.
pub(super) struct PendingTail<'a> {
    pub id: ObjectId,
    store: &'a ObjectStore,
    warm: Option<&'a WarmPool>,
    layout: &'a KvLayout,
    read: OnceCell<(Result<TailRecord>, RestorePhases)>,
}

impl<'a> PendingTail<'a> {
    pub fn new(
        id: ObjectId,
        store: &'a ObjectStore,
        warm: Option<&'a WarmPool>,
        layout: &'a KvLayout,
    ) -> Self {
        Self {
            id,
            store,
            warm,
            layout,
            read: OnceCell::new(),
        }
    }

    /// The record, read and decoded.
    pub fn get(&self) -> &Result<TailRecord> {
        &self.resolved().0
    }

    /// The time its read took, once it is read.
    pub fn phases(&self) -> RestorePhases {
        self.read
            .get()
            .map(|(_, phases)| *phases)
            .unwrap_or_default()
    }

    /// The buffer the record was read into, for the next restore.
    pub fn into_buffer(self) -> Option<Vec<u8>> {
        match self.read.into_inner() {
            Some((Ok(record), _)) => Some(record.into_bytes()),
            _ => None,
        }
    }

    fn resolved(&self) -> &(Result<TailRecord>, RestorePhases) {
        self.read.get_or_init(|| {
            let mut phases = RestorePhases::default();
            let record = read_tail(self.store, self.warm, self.id, self.layout, &mut phases);
            (record, phases)
        })
    }
}

/// Reads and decodes the tail record `id` of a cache laid out as `layout`.
fn read_tail(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    id: ObjectId,
    layout: &KvLayout,
    phases: &mut RestorePhases,
) -> Result<TailRecord> {
    let request = PageRequest {
        id,
        expected_len: None,
    };
    // A buffer an earlier restore left: a tail holds up to a page of rows, as large as a
    // chunk, and fresh memory costs about as much here as reading it.
    let bytes = read_object(store, warm, request, kept_buffer(), phases)?;
    let swa_per_cell = match layout.is_iswa() {
        true => layout.bytes_per_token(SWA),
        false => 0,
    };
    Ok(TailRecord::decode(
        bytes,
        layout.bytes_per_token(BASE),
        swa_per_cell,
    )?)
}
