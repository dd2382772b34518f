//! Reading one chunk of a restore: the pages of a page range (and, for the last chunk, the
//! plan's window pieces and tail) straight into their places in a state blob laid out in a
//! reused buffer. It needs no context, so a chunked restore reads the next chunk on a thread
//! of its own while the engine thread hands the previous one to llama.cpp.

use std::collections::BTreeMap;
use std::time::Instant;

use super::page_read::{read_placed, PlacedRead};
use super::restore_plan::RestorePlan;
use crate::kv::blob::{fill_chunk, BlobFrame, FrameSection};
use crate::kv::layout::{layer_widths, BASE, SWA};
use crate::kv::{KvLayout, TailRecord};
use crate::session::capture::RestorePhases;
use crate::session::manifest::KvSnapshot;
use crate::store::{ObjectId, ObjectStore};
use crate::tiers::WarmPool;

/// Pages hinted to the kernel before a fresh buffer's memory is prefaulted.
const PREFAULT_READ_AHEAD: usize = 16;

/// What every chunk of one restore reads from: plain shared references, so a reader
/// thread can hold it while the engine thread loads.
pub(super) struct ChunkReader<'a> {
    pub store: &'a ObjectStore,
    pub warm: Option<&'a WarmPool>,
    pub snap: &'a KvSnapshot,
    pub layout: &'a KvLayout,
    pub tail: Option<&'a TailRecord>,
    pub page_tokens: usize,
    pub seq: i32,
}

impl ChunkReader<'_> {
    /// Hints the page files of `pages` to the kernel, so the disk starts on them before
    /// their turn.
    pub fn read_ahead(&self, pages: std::ops::Range<usize>) {
        for id in &self.snap.pages[pages] {
            self.store.read_ahead(id);
        }
    }

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
        let fresh = buffer.is_empty();
        let mut frame = BlobFrame::new_in(buffer, self.seq, &sections).ok()?;
        let ids = &self.snap.pages[first..first + plan.pages];
        if fresh {
            // The disk starts on the first pages while the buffer's fresh memory is
            // faulted in in one pass, cheaper than a fault per 4 KiB page as reads land.
            for id in ids.iter().take(PREFAULT_READ_AHEAD) {
                self.store.read_ahead(id);
            }
            crate::llama::prefault(frame.memory());
        }
        let mut areas = frame.chunk_areas();
        if plan.tail_cells > 0 {
            let t = self.tail?;
            for ((section, rows), chunks) in sections.iter().zip([&t.base, &t.swa]).zip(&mut areas)
            {
                let last = chunks.last_mut()?;
                fill_chunk(section.layout, rows, plan.tail_cells, 0, last).ok()?;
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
        let done = read_placed(self.store, self.warm, reads);
        phases.read_ms += done.read_ms;
        phases.verify_ms += done.verify_ms;
        if done.results.iter().any(Result::is_err) {
            return None;
        }
        Some(frame.into_bytes())
    }
}
