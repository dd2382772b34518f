//! A state blob laid out before its rows exist: headers and cell metadata written, each
//! layer's row area left to be filled in place. A restore reads every page's rows straight
//! from disk into their areas, so the bytes handed to llama.cpp are written once, with no
//! per-page buffers and no assembly copy. The result is byte for byte what
//! [`super::assemble_blob`] builds from the same rows.
//!
//! Only plain (flash-attention) V layers can be filled this way: a transposed V layer
//! interleaves the cells of every page, so a page has no area of its own there.

use super::rows::{k_header, section_size, v_header, write_blob_header, write_cells_and_dims};
use super::{BlobError, CellMeta, SectionLayout};
use crate::kv::CellExt;

/// Where a laid-out blob's cells get their ext (`llama_kv_cell_ext`): nowhere when the
/// cache keeps none, else from the text token at each cell's position in `tokens` (the
/// token log), as llama.cpp computed it ([`CellExt::of_text`]).
#[derive(Clone, Copy, Debug)]
pub struct CellExts<'a> {
    pub kind: CellExt,
    pub tokens: &'a [i32],
}

impl CellExts<'_> {
    /// Cells without an ext.
    pub const NONE: CellExts<'static> = CellExts {
        kind: CellExt::None,
        tokens: &[],
    };

    /// The ext of the cell at `pos`; an error where the log has no token there.
    pub fn at(&self, pos: usize) -> Result<Option<[u8; 12]>, BlobError> {
        if self.kind == CellExt::None {
            return Ok(None);
        }
        let token = self.tokens.get(pos).ok_or(BlobError::Assemble(
            "a cell's ext needs a token the log lacks",
        ))?;
        Ok(self.kind.of_text(pos as i32, *token))
    }

    /// The cells of consecutive positions from `first`, tagged `seq_id`.
    pub fn cells(
        &self,
        seq_id: i32,
        first: usize,
        count: usize,
    ) -> Result<Vec<CellMeta>, BlobError> {
        (first..first + count)
            .map(|pos| {
                Ok(CellMeta {
                    pos: pos as i32,
                    seq_id,
                    ext: self.at(pos)?,
                })
            })
            .collect()
    }
}

/// One section of a frame: consecutive positions from `first_pos`, filled by chunks of
/// consecutive cells (a page, part of a page, a tail) of `chunk_cells` cells each.
pub struct FrameSection<'a> {
    pub layout: &'a SectionLayout,
    pub first_pos: usize,
    pub chunk_cells: Vec<usize>,
}

/// Per chunk, its destination per layer block (K layers, then V), in page-row order.
pub type ChunkAreas<'b> = Vec<Vec<&'b mut [u8]>>;

pub struct BlobFrame {
    bytes: Vec<u8>,
    /// Where the trailer starts: it runs to the end.
    trailer_at: usize,
    /// Per section: per layer block, where its rows start and its bytes per cell.
    blocks: Vec<Vec<(usize, usize)>>,
    chunk_cells: Vec<Vec<usize>>,
    /// Its memory is newly mapped, not yet touched (the buffer given was too small).
    fresh: bool,
}

impl BlobFrame {
    /// Lays out a one-stream blob of `seq_id` holding `sections` (every cell tagged
    /// `seq_id`, no cell ext). The row areas are zero until filled.
    pub fn new(seq_id: i32, sections: &[FrameSection<'_>]) -> Result<Self, BlobError> {
        Self::new_in(Vec::new(), (seq_id, CellExts::NONE), sections, 0)
    }

    /// [`Self::new`] in a buffer of an earlier frame (a restore in chunks reuses one, so
    /// its memory is touched fresh only once). Where the buffer is large enough it is not
    /// zeroed: the row areas hold stale bytes until they are filled, and a frame whose
    /// fill failed must not be loaded (as with any failed fill). `trailer_len` bytes follow
    /// the sections, to be filled like the rows ([`Self::areas`]): a hybrid memory's
    /// recurrent part, which llama.cpp reads after the attention cells. Every cell is
    /// tagged `seq_id` and gets its ext from `exts`.
    pub fn new_in(
        mut bytes: Vec<u8>,
        (seq_id, exts): (i32, CellExts<'_>),
        sections: &[FrameSection<'_>],
        trailer_len: usize,
    ) -> Result<Self, BlobError> {
        let mut preludes = Vec::with_capacity(sections.len());
        let mut size = 8usize;
        for s in sections {
            let layout = s.layout;
            if layout.v_trans {
                return Err(BlobError::Assemble(
                    "a transposed V cache cannot be filled in place",
                ));
            }
            layout.validate()?;
            let count: usize = s.chunk_cells.iter().sum();
            let cell_count = u32::try_from(count)
                .map_err(|_| BlobError::Assemble("more than u32::MAX cells"))?;
            if count == 0 {
                return Err(BlobError::Assemble("a frame section needs cells"));
            }
            let cells = exts.cells(seq_id, s.first_pos, count)?;
            let mut prelude = 1u32.to_le_bytes().to_vec();
            write_cells_and_dims(cell_count, &cells, layout, &mut prelude);
            let rows = count
                .checked_mul(layout.bytes_per_cell() as usize)
                .ok_or(BlobError::Assemble("blob size overflows"))?;
            let has_ext = exts.kind != CellExt::None;
            size = section_size(Some(layout), 1, count, has_ext, rows)
                .and_then(|x| size.checked_add(x))
                .ok_or(BlobError::Assemble("blob size overflows"))?;
            preludes.push((prelude, count));
        }
        let trailer_at = size;
        size = size
            .checked_add(trailer_len)
            .ok_or(BlobError::Assemble("blob size overflows"))?;
        // New bytes are zeroed by the allocator (fresh pages), not by a pass over the
        // buffer: the reads that fill the rows are the first to touch most of it.
        let fresh = bytes.capacity() < size;
        if fresh {
            bytes = vec![0u8; size];
        } else {
            // (Zeroes only what lies past the buffer's old length.)
            bytes.resize(size, 0);
        }
        let mut head = Vec::with_capacity(8);
        write_blob_header(seq_id, &mut head);
        let mut at = put(&mut bytes, 0, &head);
        let mut blocks = Vec::with_capacity(sections.len());
        for (s, (prelude, count)) in sections.iter().zip(&preludes) {
            at = put(&mut bytes, at, prelude);
            let headers = s.layout.k.iter().map(k_header);
            let widths = s.layout.k.iter().map(|k| k.row_size as usize);
            let v_headers = s.layout.v.iter().map(v_header);
            let v_widths = s.layout.v.iter().map(|v| v.bytes_per_cell() as usize);
            let mut section_blocks = Vec::new();
            for (header, width) in headers.chain(v_headers).zip(widths.chain(v_widths)) {
                at = put(&mut bytes, at, &header);
                section_blocks.push((at, width));
                at += count * width;
            }
            blocks.push(section_blocks);
        }
        debug_assert_eq!(at, trailer_at);
        Ok(Self {
            bytes,
            trailer_at,
            blocks,
            chunk_cells: sections.iter().map(|s| s.chunk_cells.clone()).collect(),
            fresh,
        })
    }

    /// Whether the frame's memory is newly mapped: its first touch faults it in, which its
    /// fillers do best in one call per area ([`crate::llama::prefault`]). A reused buffer's
    /// memory was touched by the frame before it, or zeroed here.
    pub fn fresh(&self) -> bool {
        self.fresh
    }

    /// Every chunk's row areas, by section then chunk: disjoint slices of the frame.
    pub fn chunk_areas(&mut self) -> Vec<ChunkAreas<'_>> {
        self.areas().0
    }

    /// Every chunk's row areas (as [`Self::chunk_areas`]) and the trailer's.
    pub fn areas(&mut self) -> (Vec<ChunkAreas<'_>>, &mut [u8]) {
        let (rows, trailer) = self.bytes.split_at_mut(self.trailer_at);
        let mut out: Vec<ChunkAreas<'_>> = self
            .chunk_cells
            .iter()
            .map(|chunks| chunks.iter().map(|_| Vec::new()).collect())
            .collect();
        let mut rest: &mut [u8] = rows;
        let mut at = 0;
        for (si, blocks) in self.blocks.iter().enumerate() {
            for &(start, width) in blocks {
                rest = &mut std::mem::take(&mut rest)[start - at..];
                at = start;
                for (ci, &cells) in self.chunk_cells[si].iter().enumerate() {
                    let (area, tail) = std::mem::take(&mut rest).split_at_mut(cells * width);
                    out[si][ci].push(area);
                    rest = tail;
                    at += cells * width;
                }
            }
        }
        (out, trailer)
    }

    /// The finished blob.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Writes `piece` at `at`; returns the offset after it.
fn put(bytes: &mut [u8], at: usize, piece: &[u8]) -> usize {
    bytes[at..at + piece.len()].copy_from_slice(piece);
    at + piece.len()
}

/// Copies a page-row encoding of `cells` cells (all layer blocks of `layout`) into a
/// chunk's areas, starting at cell `from` of the encoding.
pub fn fill_chunk(
    layout: &SectionLayout,
    rows: &[u8],
    cells: usize,
    from: usize,
    areas: &mut [&mut [u8]],
) -> Result<(), BlobError> {
    let widths = crate::kv::layout::layer_widths(layout);
    let mut offset = 0;
    if widths.len() != areas.len() || rows.len() != cells * widths.iter().sum::<usize>() {
        return Err(BlobError::Assemble("rows do not match the chunk's areas"));
    }
    for (w, area) in widths.into_iter().zip(areas.iter_mut()) {
        let src = &rows[offset + from * w..offset + cells * w];
        if src.len() != area.len() {
            return Err(BlobError::Assemble("rows do not match the chunk's areas"));
        }
        area.copy_from_slice(src);
        offset += cells * w;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fake_cache::{plain_layout as layout, Rng};
    use super::super::{assemble_blob, SectionParts, VLayer};
    use super::*;

    #[test]
    fn a_filled_frame_is_the_assembled_blob() {
        let mut rng = Rng(13);
        let (base, swa) = (layout(3, 6, 10), layout(2, 4, 4));
        // Base: two pages of 5 cells and a 3-cell tail; window: part of a page, then the tail.
        let base_chunks = [5usize, 5, 3];
        let swa_chunks = [2usize, 3];
        let rows =
            |l: &SectionLayout, n: usize, rng: &mut Rng| rng.bytes(n * l.bytes_per_cell() as usize);
        let base_rows: Vec<Vec<u8>> = base_chunks
            .iter()
            .map(|&n| rows(&base, n, &mut rng))
            .collect();
        // The window's first chunk comes from the last 2 cells of a 5-cell page.
        let swa_page = rows(&swa, 5, &mut rng);
        let swa_tail = rows(&swa, 3, &mut rng);
        let swa_first = crate::kv::layout::slice_cells(&swa, &swa_page, 5, 3..5);

        let mut frame = BlobFrame::new(
            4,
            &[
                FrameSection {
                    layout: &base,
                    first_pos: 0,
                    chunk_cells: base_chunks.to_vec(),
                },
                FrameSection {
                    layout: &swa,
                    first_pos: 8,
                    chunk_cells: swa_chunks.to_vec(),
                },
            ],
        )
        .unwrap();
        let mut areas = frame.chunk_areas();
        for (k, r) in base_rows.iter().enumerate() {
            fill_chunk(&base, r, base_chunks[k], 0, &mut areas[0][k]).unwrap();
        }
        fill_chunk(&swa, &swa_page, 5, 3, &mut areas[1][0]).unwrap();
        fill_chunk(&swa, &swa_tail, 3, 0, &mut areas[1][1]).unwrap();
        assert!(fill_chunk(&swa, &swa_tail, 3, 1, &mut areas[1][1]).is_err());
        drop(areas);

        let metas = |first: i32, n: usize| -> Vec<CellMeta> {
            (first..first + n as i32)
                .map(|pos| CellMeta {
                    pos,
                    seq_id: 4,
                    ext: None,
                })
                .collect()
        };
        let (base_cells, swa_cells) = (metas(0, 13), metas(8, 5));
        let base_refs: Vec<&[u8]> = base_rows.iter().map(Vec::as_slice).collect();
        let swa_refs: Vec<&[u8]> = vec![&swa_first, &swa_tail];
        let want = assemble_blob(
            4,
            &[
                SectionParts {
                    layout: Some(&base),
                    n_stream: 1,
                    stream: Some(0),
                    cells: &base_cells,
                    row_chunks: &base_refs,
                },
                SectionParts {
                    layout: Some(&swa),
                    n_stream: 1,
                    stream: Some(0),
                    cells: &swa_cells,
                    row_chunks: &swa_refs,
                },
            ],
        )
        .unwrap();
        assert_eq!(frame.into_bytes(), want);
    }

    #[test]
    fn a_trailer_follows_the_sections_and_parses_as_the_rest() {
        let mut rng = Rng(5);
        let l = layout(2, 4, 6);
        let rows = rng.bytes(3 * l.bytes_per_cell() as usize);
        let trailer = rng.bytes(37);
        let section = [FrameSection {
            layout: &l,
            first_pos: 0,
            chunk_cells: vec![3],
        }];
        let mut frame =
            BlobFrame::new_in(Vec::new(), (2, CellExts::NONE), &section, trailer.len()).unwrap();
        let (mut areas, trailer_area) = frame.areas();
        fill_chunk(&l, &rows, 3, 0, &mut areas[0][0]).unwrap();
        trailer_area.copy_from_slice(&trailer);
        drop(areas);
        let bytes = frame.into_bytes();
        let mut plain = BlobFrame::new(2, &section).unwrap();
        fill_chunk(&l, &rows, 3, 0, &mut plain.chunk_areas()[0][0]).unwrap();
        let plain = plain.into_bytes();
        assert_eq!(bytes[..plain.len()], plain[..]);
        assert_eq!(bytes[plain.len()..], trailer[..]);
        let shape = crate::kv::blob::BlobShape::unified(false);
        assert!(crate::kv::blob::parse(&bytes, &shape).is_err());
        let (state, end) = crate::kv::blob::parse_attention(&bytes, &shape).unwrap();
        assert_eq!((end, state.sections[0].cells.len()), (plain.len(), 3));
    }

    #[test]
    fn a_frame_in_a_reused_buffer_fills_as_a_fresh_one() {
        let mut rng = Rng(9);
        let l = layout(2, 4, 6);
        let rows = rng.bytes(3 * l.bytes_per_cell() as usize);
        let section = [FrameSection {
            layout: &l,
            first_pos: 0,
            chunk_cells: vec![3],
        }];
        let mut plain = BlobFrame::new(2, &section).unwrap();
        fill_chunk(&l, &rows, 3, 0, &mut plain.chunk_areas()[0][0]).unwrap();
        let plain = plain.into_bytes();
        let n = plain.len();
        // Stale bytes longer than the frame, a short buffer with room, and an empty one.
        let mut short = vec![0xAA; 10];
        short.reserve(n);
        for buffer in [vec![0xAA; n + 50], short, Vec::with_capacity(n + 7)] {
            let mut frame = BlobFrame::new_in(buffer, (2, CellExts::NONE), &section, 0).unwrap();
            // Its memory was touched before, or zeroed by the frame: no filler faults it in.
            assert!(!frame.fresh());
            fill_chunk(&l, &rows, 3, 0, &mut frame.chunk_areas()[0][0]).unwrap();
            assert_eq!(frame.into_bytes(), plain);
        }
        // A buffer without the room is replaced by fresh memory, which its fillers fault in.
        let small = BlobFrame::new_in(vec![0xAA; n - 1], (2, CellExts::NONE), &section, 0);
        assert!(small.unwrap().fresh());
        assert!(BlobFrame::new(2, &section).unwrap().fresh());
    }

    #[test]
    fn transposed_v_and_empty_sections_are_refused() {
        let mut transposed = layout(1, 4, 4);
        transposed.v_trans = true;
        transposed.v = vec![VLayer::Transposed {
            type_id: 1,
            el_size: 2,
            n_embd: 2,
        }];
        let section = |l, cells: Vec<usize>| FrameSection {
            layout: l,
            first_pos: 0,
            chunk_cells: cells,
        };
        assert!(BlobFrame::new(0, &[section(&transposed, vec![2])]).is_err());
        assert!(BlobFrame::new(0, &[section(&layout(1, 4, 4), vec![])]).is_err());
    }
}
