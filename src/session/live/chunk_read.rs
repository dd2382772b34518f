//! Reading one chunk of a restore: the pages of a page range (and, for the last chunk, the
//! plan's window pieces and tail) straight into their places in a state blob laid out in a
//! reused buffer. It needs no context, so a chunked restore reads the next chunk on a thread
//! of its own while the engine thread hands the previous one to llama.cpp. A restore's two
//! buffers are kept for the next restore in the process ([`keep_or_free`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::page_read::{read_placed, PlacedRead};
use super::restore_plan::RestorePlan;
use super::tail_read::PendingTail;
use crate::kv::blob::{fill_chunk, BlobFrame, CellExts, FrameSection};
use crate::kv::layout::{layer_widths, BASE, SWA};
use crate::kv::KvLayout;
use crate::session::capture::RestorePhases;
use crate::session::manifest::KvSnapshot;
use crate::store::{ObjectId, ObjectStore};
use crate::tiers::WarmPool;

/// What every chunk of one restore reads from: plain shared references, so a reader
/// thread can hold it while the engine thread loads.
pub(super) struct ChunkReader<'a> {
    pub store: &'a ObjectStore,
    pub warm: Option<&'a WarmPool>,
    pub snap: &'a KvSnapshot,
    pub layout: &'a KvLayout,
    /// The tail record, read beside the first chunk ([`PendingTail`]).
    pub tail: Option<&'a PendingTail<'a>>,
    /// Bytes every chunk's blob carries after its attention sections: a hybrid memory's
    /// empty recurrent part (its state is loaded after the last chunk), else none.
    pub trailer: &'a [u8],
    /// Where the cells' ext comes from.
    pub exts: CellExts<'a>,
    pub page_tokens: usize,
    pub seq: i32,
}

impl ChunkReader<'_> {
    /// Reads the pages `first..first + plan.pages` of the snapshot (and the plan's window
    /// and tail) into a frame laid out in `buffer`, adding the time spent to `phases`.
    /// `None` when a read failed, or the layout cannot be filled in place.
    pub fn read(
        &self,
        plan: &RestorePlan,
        first: usize,
        buffer: Vec<u8>,
        phases: &mut RestorePhases,
    ) -> Option<Vec<u8>> {
        let started = Instant::now();
        let p = self.page_tokens;
        let layout = self.layout;
        let with_tail = |mut chunks: Vec<usize>| {
            if plan.tail_cells > 0 {
                chunks.push(plan.tail_cells);
            }
            chunks
        };
        let mut sections = vec![FrameSection {
            layout: &layout.sections[BASE],
            first_pos: first * p,
            chunk_cells: with_tail(vec![p; plan.pages]),
        }];
        if let Some(w) = &plan.window {
            sections.push(FrameSection {
                layout: layout.sections.get(SWA)?,
                first_pos: w.start,
                chunk_cells: with_tail(w.pieces.iter().map(|(_, skip)| p - skip).collect()),
            });
        }
        let widths: Vec<Vec<usize>> = sections.iter().map(|s| layer_widths(s.layout)).collect();
        let mut frame =
            BlobFrame::new_in(buffer, (self.seq, self.exts), &sections, self.trailer.len()).ok()?;
        let ids = &self.snap.pages[first..first + plan.pages];
        let (mut areas, trailer) = frame.areas();
        trailer.copy_from_slice(self.trailer);
        // The tail's areas (the last chunk of each section) are filled on this thread while
        // the readers fill the pages'.
        let mut tail_areas = Vec::new();
        if plan.tail_cells > 0 {
            for chunks in &mut areas {
                tail_areas.push(chunks.pop()?);
            }
        }
        phases.assemble_ms += started.elapsed().as_secs_f64() * 1e3;

        let mut areas = areas.into_iter();
        let mut reads: Vec<PlacedRead<'_>> = ids
            .iter()
            .zip(areas.next()?)
            .map(|(id, areas)| PlacedRead {
                id: *id,
                cells: p,
                skip_cells: 0,
                widths: &widths[BASE],
                areas,
            })
            .collect();
        if let Some(w) = &plan.window {
            let ids: BTreeMap<usize, ObjectId> = self.snap.swa_pages.iter().copied().collect();
            for (&(k, skip), areas) in w.pieces.iter().zip(areas.next()?) {
                reads.push(PlacedRead {
                    id: *ids.get(&k)?,
                    cells: p,
                    skip_cells: skip,
                    widths: &widths[SWA],
                    areas,
                });
            }
        }
        let (done, tail) = std::thread::scope(|scope| {
            let reading = scope.spawn(|| read_placed(self.store, self.warm, reads));
            // Waiting for the tail record's read is not assembly: it overlaps the pages'.
            if let Some(t) = self.tail.filter(|_| plan.tail_cells > 0) {
                t.get();
            }
            let started = Instant::now();
            let tail = self.fill_tail(&sections, plan.tail_cells, tail_areas);
            let tail_ms = started.elapsed().as_secs_f64() * 1e3;
            // A reader only panics on a bug; its chunk then reads as unusable.
            (reading.join().ok(), tail.map(|()| tail_ms))
        });
        let (done, tail_ms) = (done?, tail?);
        phases.assemble_ms += tail_ms;
        phases.read_ms += done.read_ms;
        phases.verify_ms += done.verify_ms;
        if done.results.iter().any(Result::is_err) {
            return None;
        }
        Some(frame.into_bytes())
    }

    /// Copies the tail record's rows into the tail's areas (one per section). `None` when
    /// there is no tail record or its rows do not fit.
    fn fill_tail(
        &self,
        sections: &[FrameSection<'_>],
        cells: usize,
        mut areas: Vec<Vec<&mut [u8]>>,
    ) -> Option<()> {
        if cells == 0 {
            return Some(());
        }
        // A record that failed its read or holds another count of cells fails the chunk.
        let t = self.tail?.get().as_ref().ok()?;
        if t.n_cells as usize != cells {
            return None;
        }
        for ((section, rows), areas) in sections.iter().zip([&t.base, &t.swa]).zip(&mut areas) {
            for area in areas.iter_mut() {
                crate::llama::prefault(area);
            }
            fill_chunk(section.layout, rows, cells, 0, areas).ok()?;
        }
        Some(())
    }
}

/// The most bytes of chunk buffers a finished restore leaves for the next one in this
/// process (two buffers at most, one restore's worth): a server restores session after
/// session, and faulting in fresh memory costs about as much as reading it from disk here
/// (0.35-0.5 ms per MB). The allocator keeps buffers below 32 MiB on its own heap, but an
/// 8B model's chunks are 64 MiB, mapped and unmapped by every restore.
const KEPT_BYTES: usize = 256 << 20;

static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A chunk buffer an earlier restore left (its memory already faulted in), or an empty one.
pub(super) fn kept_buffer() -> Vec<u8> {
    KEPT.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop()
        .unwrap_or_default()
}

/// Keeps a finished restore's buffers for the next one, up to [`KEPT_BYTES`] in two
/// buffers, and frees the rest on a thread of its own: unmapping tens of megabytes takes
/// about a millisecond per 10 MB here, and the session is ready once they are loaded.
pub(super) fn keep_or_free(buffers: Vec<Vec<u8>>) {
    let rest = {
        let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
        keep(&mut kept, buffers)
    };
    free_later(rest);
}

/// Moves the largest of `buffers` that fit [`KEPT_BYTES`] and two buffers into `kept`;
/// returns the others.
fn keep(kept: &mut Vec<Vec<u8>>, mut buffers: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    buffers.sort_by_key(|b| std::cmp::Reverse(b.capacity()));
    let mut held: usize = kept.iter().map(Vec::capacity).sum();
    let mut rest = Vec::new();
    for b in buffers {
        let fits = held + b.capacity() <= KEPT_BYTES && kept.len() < 2;
        if b.capacity() > 0 && fits {
            held += b.capacity();
            kept.push(b);
        } else {
            rest.push(b);
        }
    }
    rest
}

/// Frees buffers on a thread of its own.
pub(super) fn free_later(buffers: Vec<Vec<u8>>) {
    if buffers.iter().all(|b| b.capacity() == 0) {
        return;
    }
    // Without a thread (the system refuses one) they are freed here, as usual.
    let _ = std::thread::Builder::new()
        .name("kvrun-free".into())
        .spawn(move || drop(buffers));
}

#[cfg(test)]
mod tests {
    use super::{keep, KEPT_BYTES};

    /// Buffers of these capacities (reserved, never touched).
    fn buffers(mib: &[usize]) -> Vec<Vec<u8>> {
        mib.iter().map(|&m| Vec::with_capacity(m << 20)).collect()
    }

    fn mib(buffers: &[Vec<u8>]) -> Vec<usize> {
        buffers.iter().map(|b| b.capacity() >> 20).collect()
    }

    #[test]
    fn a_restore_keeps_at_most_two_buffers_within_the_budget() {
        let mut kept = Vec::new();
        let rest = keep(&mut kept, buffers(&[24, 64, 0, 64]));
        assert_eq!((mib(&kept), mib(&rest)), (vec![64, 64], vec![24, 0]));
        // Nothing more while two are kept; a restore takes them before it gives any back.
        assert_eq!(mib(&keep(&mut kept, buffers(&[16]))), vec![16]);
        kept.clear();
        let over = (KEPT_BYTES >> 20) + 1;
        let rest = keep(&mut kept, buffers(&[over, 200, 100]));
        assert_eq!((mib(&kept), mib(&rest)), (vec![200], vec![over, 100]));
    }
}
