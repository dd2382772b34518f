//! A restore's fast path: the plan's pages and tail read straight into their places in the
//! blob handed to llama.cpp, in chunks through a few reused buffers, each chunk loaded while
//! the next ones are read.

use super::buffers::{keep_or_free, kept_buffer_for};
use super::chunk_read::ChunkReader;
use super::chunk_stream::{stream_chunks, StreamEnd};
use super::page_read::readers;
use super::restore_plan::RestorePlan;
use super::restore_recurrent::RecurrentSource;
use super::{LiveSession, RestoreReport};
use crate::kv::blob::CellExts;
use crate::kv::layout::BASE;
use crate::kv::KvLayout;
use crate::llama::Context;
use crate::session::capture::{self, RestorePhases};
use crate::session::kv_error::LiveResult as Result;
use crate::session::manifest::KvSnapshot;

/// Bytes per chunk of a chunked restore, at least a page. Every chunk after a reader's
/// first two reuses a buffer whose memory is already mapped (as do those two after an
/// earlier restore in the process, up to a bound), and mapping fresh memory costs about as
/// much as reading it from disk, so chunks are small: a page or two restored faster than
/// large chunks of fresh memory, while llama.cpp's cost per loaded chunk stays small.
const CHUNK_BYTES: usize = 16 << 20;

/// The chunk buffers a restore reads into at once (each stream has two) stay within this
/// when chunks allow two streams: an 8B model's 32 MiB pages read on two streams.
const IN_FLIGHT_BYTES: usize = 128 << 20;

/// Pages per chunk for pages of `page_bytes`: [`CHUNK_BYTES`] of them, at least one; or
/// `KVRUN_RESTORE_CHUNK_BYTES` of them (tests use it to restore small sessions a page at a
/// time).
fn pages_per_chunk(page_bytes: usize) -> usize {
    let bytes = std::env::var("KVRUN_RESTORE_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(CHUNK_BYTES);
    (bytes / page_bytes).max(1)
}

impl LiveSession<'_> {
    /// Reads the plan's pages and tail straight into their places in the blob handed to
    /// llama.cpp, and loads it. A unified cache is loaded in chunks of
    /// about [`CHUNK_BYTES`] through a few reused buffers, as llama.cpp's own `load_file`
    /// reads through one: a blob of the whole session would be as large as its KV (4 GiB for
    /// 32k tokens of an 8B model), and writing that much fresh memory costs more here than
    /// reading it from disk. The chunks are pipelined ([`stream_chunks`]): while llama.cpp
    /// copies one chunk into the cache on this thread, the readers read (and verify) the
    /// next ones.
    ///
    /// A hybrid's chunks carry an empty recurrent part, and its checkpoint (`recurrent`),
    /// read on a thread of its own meanwhile, is loaded after the last chunk
    /// ([`capture::load_recurrent`]). `None` when a read failed (nothing usable is loaded
    /// then), or the layout cannot be filled in place.
    pub(super) fn load_in_place(
        &mut self,
        ctx: &mut Context<'_>,
        (snap, exts): (&KvSnapshot, CellExts<'_>),
        layout: &KvLayout,
        (plan, recurrent): (&RestorePlan, Option<RecurrentSource>),
        report: &mut RestoreReport,
    ) -> Option<Result<()>> {
        let p = self.page_tokens;
        let page_bytes = (p * layout.bytes_per_token(BASE)).max(1);
        // A sliding-window section is loaded with the last chunk's state only, so iSWA
        // caches (small pages, a fixed window) keep one chunk.
        let per_chunk = match layout.is_iswa() {
            true => plan.pages.max(1),
            false => pages_per_chunk(page_bytes),
        };
        let mut starts: Vec<usize> = (0..plan.pages.max(1)).step_by(per_chunk).collect();
        // A unified cache's tail is a chunk of its own, read beside the last pages, so no
        // chunk outgrows the buffers an earlier restore left.
        if plan.tail_cells > 0 && plan.pages > 0 && !layout.is_iswa() {
            starts.push(plan.pages);
        }
        // The chunks are read by this many threads at once (one per core, at least two, and
        // no more than [`IN_FLIGHT_BYTES`] allow), and each chunk's pages by as many again,
        // a page each: small pages are bound by each file's first read, so a page per
        // thread beats a chunk's pages read one after the other.
        let chunk_bytes = per_chunk * page_bytes;
        let by_memory = (IN_FLIGHT_BYTES / (2 * chunk_bytes).max(1)).max(2);
        let streams = readers().min(by_memory).min(starts.len());
        tracing::debug!(
            "session '{}': restoring {} tokens in {} chunks{}",
            self.name,
            plan.end,
            starts.len(),
            match recurrent {
                Some(r) => format!(", then the recurrent state at {}", r.kv_len),
                None => String::new(),
            }
        );
        let chunk_plan = |n: usize| {
            let first = starts[n];
            let pages = first..(first + per_chunk).min(plan.pages);
            let last = n + 1 == starts.len();
            RestorePlan {
                end: if last { plan.end } else { pages.end * p },
                pages: pages.len(),
                tail_cells: if last { plan.tail_cells } else { 0 },
                window: if last { plan.window.clone() } else { None },
            }
        };
        let slot = self.slot;
        let trailer = match recurrent {
            Some(_) => capture::empty_recurrent_part(ctx, slot).ok()?,
            None => Vec::new(),
        };
        let (store, warm) = (self.catalog.store(), self.warm.as_deref());
        let reader = ChunkReader {
            store,
            warm,
            snap,
            layout,
            trailer: &trailer,
            exts,
            page_tokens: p,
            seq: slot.seq,
            threads: readers(),
        };
        let read = |n: usize, buffer: Vec<u8>, phases: &mut RestorePhases| {
            reader.read(&chunk_plan(n), starts[n], buffer, phases)
        };
        std::thread::scope(|outer| {
            let checkpoint = recurrent.map(|r| {
                // Taken here, before the chunks take theirs: the kept buffer that fits it.
                let buffer = kept_buffer_for(r.payload_len);
                outer.spawn(move || {
                    let mut phases = RestorePhases::default();
                    (r.read(store, warm, buffer, &mut phases), phases)
                })
            });
            let load = |n: usize, blob: &[u8], phases: &mut RestorePhases| match n {
                0 => capture::load_blob(ctx, slot, blob, phases),
                // A later chunk goes through the scratch sequence, and a hybrid's `seq_cp`
                // copies the scratch's (empty) recurrent state along with the range:
                // harmless, the checkpoint is loaded after the last chunk.
                _ => {
                    capture::append_blob(ctx, slot, blob, starts[n] * p..chunk_plan(n).end, phases)
                }
            };
            match stream_chunks(starts.len(), streams, read, load, &mut report.phases) {
                StreamEnd::Loaded => {}
                StreamEnd::LoadFailed(e) => return Some(Err(e)),
                StreamEnd::ReadFailed { loaded } => {
                    // The chunks loaded so far go too: the fallback starts from an empty slot.
                    if loaded > 0 {
                        capture::empty(ctx, slot);
                    }
                    return None;
                }
            }
            let Some(checkpoint) = checkpoint else {
                return Some(Ok(()));
            };
            let (blob, phases) = checkpoint.join().unwrap_or_default();
            report.phases.add(&phases);
            let Some(blob) = blob else {
                capture::empty(ctx, slot);
                return None;
            };
            let loaded = capture::load_recurrent(ctx, slot, &blob, &mut report.phases);
            keep_or_free(vec![blob]);
            Some(loaded)
        })
    }
}
