//! Reading one chunk of a restore: the pages of a page range (and, for the last chunk, the
//! plan's window pieces and tail) straight into their places in a state blob laid out in a
//! reused buffer. It needs no context, so a chunked restore reads the next chunk on a thread
//! of its own while the engine thread hands the previous one to llama.cpp. A restore's two
//! buffers are kept for the next restore in the process ([`super::buffers`]).

use std::collections::BTreeMap;
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
    /// Threads that read one chunk's pages, at most one per page (the chunks themselves are
    /// read several at once, [`super::chunk_stream`]).
    pub threads: usize,
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
            let reading = scope.spawn(|| read_placed(self.store, self.warm, reads, self.threads));
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
        for ((section, rows), areas) in sections.iter().zip([t.base(), t.swa()]).zip(&mut areas) {
            for area in areas.iter_mut() {
                crate::llama::prefault(area);
            }
            fill_chunk(section.layout, rows, cells, 0, areas).ok()?;
        }
        Some(())
    }
}
