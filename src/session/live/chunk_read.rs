//! Reading one chunk of a restore: the pages of a page range (and, for the last chunk, the
//! plan's window pieces and the tail record's rows) straight into their places in a state
//! blob laid out in a reused buffer. It needs no context, so a chunked restore reads the
//! next chunks on threads of their own while the engine thread hands the previous one to
//! llama.cpp. A restore's buffers are kept for the next restore in the process
//! ([`super::buffers`]).

use std::collections::BTreeMap;
use std::time::Instant;

use super::page_read::{read_placed, PlacedRead};
use super::restore_plan::RestorePlan;
use crate::kv::blob::{BlobFrame, CellExts, FrameSection};
use crate::kv::layout::{layer_widths, BASE, SWA};
use crate::kv::page::TAIL_HEADER;
use crate::kv::{KvLayout, TailRecord};
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
        let stale = plan.window.as_ref().map_or(0, |w| w.stale);
        if let Some(w) = &plan.window {
            // The cells that left the window come first, as a chunk of their own.
            let stale_chunk = (stale > 0).then_some(stale);
            let pieces = w.pieces.iter().map(|(_, skip)| p - skip);
            sections.push(FrameSection {
                layout: layout.sections.get(SWA)?,
                first_pos: w.first_pos(),
                chunk_cells: with_tail(stale_chunk.into_iter().chain(pieces).collect()),
            });
        }
        let widths: Vec<Vec<usize>> = sections.iter().map(|s| layer_widths(s.layout)).collect();
        // A tail record holds its full-attention rows, then its window rows (iSWA), each
        // in page-row order: one read fills the tail's areas of every section.
        let tail_widths = widths.concat();
        let mut tail_header = [0u8; TAIL_HEADER];
        let mut frame =
            BlobFrame::new_in(buffer, (self.seq, self.exts), &sections, self.trailer.len()).ok()?;
        let ids = &self.snap.pages[first..first + plan.pages];
        let prefault = frame.fresh();
        let (mut areas, trailer) = frame.areas();
        trailer.copy_from_slice(self.trailer);
        // The tail's areas: the last chunk of each section.
        let mut tail_areas = Vec::new();
        if plan.tail_cells > 0 {
            for chunks in &mut areas {
                tail_areas.extend(chunks.pop()?);
            }
        }
        phases.assemble_ms += started.elapsed().as_secs_f64() * 1e3;

        let mut areas = areas.into_iter();
        let mut reads: Vec<PlacedRead<'_>> = ids
            .iter()
            .zip(areas.next()?)
            .map(|(id, areas)| PlacedRead {
                id: *id,
                header: None,
                cells: p,
                skip_cells: 0,
                widths: &widths[BASE],
                areas,
                prefault,
            })
            .collect();
        if let Some(w) = &plan.window {
            let ids: BTreeMap<usize, ObjectId> = self.snap.swa_pages.iter().copied().collect();
            let mut chunks = areas.next()?.into_iter();
            if stale > 0 {
                // A reused buffer holds an earlier restore's bytes: zero rows, as planned.
                chunks.next()?.into_iter().for_each(|area| area.fill(0));
            }
            for (&(k, skip), areas) in w.pieces.iter().zip(chunks) {
                reads.push(PlacedRead {
                    id: *ids.get(&k)?,
                    header: None,
                    cells: p,
                    skip_cells: skip,
                    widths: &widths[SWA],
                    areas,
                    prefault,
                });
            }
        }
        if plan.tail_cells > 0 {
            reads.push(PlacedRead {
                id: self.snap.tail?,
                header: Some(&mut tail_header),
                cells: plan.tail_cells,
                skip_cells: 0,
                widths: &tail_widths,
                areas: tail_areas,
                prefault,
            });
        }
        let done = read_placed(self.store, self.warm, reads, self.threads);
        phases.read_ms += done.read_ms;
        phases.verify_ms += done.verify_ms;
        if done.results.iter().any(Result::is_err) {
            return None;
        }
        // A record of another count of cells fails the chunk; the careful path then reads
        // it again, and says what is wrong with it.
        if plan.tail_cells > 0 {
            let base_per_cell = widths[BASE].iter().sum();
            TailRecord::check_header(&tail_header, plan.tail_cells, base_per_cell).ok()?;
        }
        Some(frame.into_bytes())
    }
}
