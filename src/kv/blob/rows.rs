//! Page rows out of a parsed section, and llama.cpp section bytes back out of page rows.
//!
//! Page row encoding of `n` consecutive cells (kvrun's own, independent of the rest of the blob):
//! for each K layer the `n` rows back to back, then for each V layer the `n` rows back to back; a
//! transposed V layer is un-transposed into per-cell rows of `n_embd * el_size` bytes. Its length is
//! `n * layout.bytes_per_cell()`, so a chunk's cell count follows from its length.
//!
//! Row copies are contiguous `memcpy`s; the transposed V path goes through a cache-blocked
//! transpose specialised for the common element sizes.

use std::ops::Range;

use super::{
    BlobError, CellMeta, KLayer, Section, SectionLayout, VLayer, MAX_STREAMS, SEQ_STATE_MAGIC,
};

impl Section<'_> {
    /// The page row encoding of `cells` (indices into [`Section::cells`], blob order).
    pub fn rows_for_cells(&self, cells: Range<usize>) -> Result<Vec<u8>, BlobError> {
        let mut out = Vec::new();
        self.write_rows(cells, &mut out)?;
        Ok(out)
    }

    /// Appends the page row encoding of `cells` to `out`.
    pub fn write_rows(&self, cells: Range<usize>, out: &mut Vec<u8>) -> Result<(), BlobError> {
        let (start, end, len) = (cells.start, cells.end, self.cells.len());
        if start > end || end > len {
            return Err(BlobError::CellRange { start, end, len });
        }
        let Some(layout) = &self.layout else {
            return match len {
                0 => Ok(()), // empty section, empty range
                _ => Err(BlobError::Tampered),
            };
        };
        self.check_consistent(layout)?;
        let n = end - start;
        // Bounded by the blob's own length, so none of these products overflow.
        out.reserve(n * layout.bytes_per_cell() as usize);
        for (k, data) in layout.k.iter().zip(&self.k_data) {
            let rs = k.row_size as usize;
            out.extend_from_slice(&data[start * rs..end * rs]);
        }
        for (v, data) in layout.v.iter().zip(&self.v_data) {
            match *v {
                VLayer::Plain { row_size, .. } => {
                    let rs = row_size as usize;
                    out.extend_from_slice(&data[start * rs..end * rs]);
                }
                VLayer::Transposed {
                    el_size, n_embd, ..
                } => {
                    let (el, n_embd) = (el_size as usize, n_embd as usize);
                    let base = out.len();
                    out.resize(base + n * n_embd * el, 0);
                    // Blob element (j, cell) sits at (j * len + cell) * el; row of cell c gets it at j * el.
                    let src = &data[start * el..];
                    transpose(src, len * el, &mut out[base..], n_embd * el, n_embd, n, el);
                }
            }
        }
        Ok(())
    }

    /// `cells` and `layout` are public, so re-check that they still describe the borrowed data
    /// (O(layers)); this keeps every slice in [`Self::write_rows`] in bounds.
    fn check_consistent(&self, layout: &SectionLayout) -> Result<(), BlobError> {
        let len = self.cells.len() as u64;
        let fits =
            |data: &[u8], per_cell: u64| len.checked_mul(per_cell) == Some(data.len() as u64);
        let ok = layout.k.len() == self.k_data.len()
            && layout.v.len() == self.v_data.len()
            && layout
                .k
                .iter()
                .zip(&self.k_data)
                .all(|(k, d)| fits(d, k.row_size))
            && layout
                .v
                .iter()
                .zip(&self.v_data)
                .all(|(v, d)| fits(d, v.bytes_per_cell()));
        if ok {
            Ok(())
        } else {
            Err(BlobError::Tampered)
        }
    }
}

/// One section's inputs for [`assemble_blob`].
#[derive(Clone, Copy, Debug)]
pub struct SectionParts<'a> {
    /// May be `None` only when `cells` is empty.
    pub layout: Option<&'a SectionLayout>,
    pub n_stream: u32,
    /// The non-empty stream; ignored (but range-checked) when `cells` is empty.
    pub stream: Option<u32>,
    pub cells: &'a [CellMeta],
    /// Page row encodings of consecutive runs of `cells`, in order.
    pub row_chunks: &'a [&'a [u8]],
}

/// Builds a whole blob: header, then each section in order. `seq_id` is informational for
/// llama.cpp (restore reads and ignores it), but [`super::parse`] expects it to equal every cell's.
pub fn assemble_blob(seq_id: i32, sections: &[SectionParts<'_>]) -> Result<Vec<u8>, BlobError> {
    // Reserve the exact size up front: growing a ~100 MB buffer mid-way would copy it.
    let mut size: usize = 8;
    for s in sections {
        let rows = s
            .row_chunks
            .iter()
            .try_fold(0usize, |a, c| a.checked_add(c.len()));
        let has_ext = s.cells.first().is_some_and(|c| c.ext.is_some());
        size = rows
            .and_then(|rows| section_size(s.layout, s.n_stream, s.cells.len(), has_ext, rows))
            .and_then(|x| size.checked_add(x))
            .ok_or(BlobError::Assemble("blob size overflows"))?;
    }
    let mut out = Vec::with_capacity(size);
    write_blob_header(seq_id, &mut out);
    for s in sections {
        match s.layout {
            Some(layout) => assemble_section(
                layout,
                s.n_stream,
                s.stream,
                s.cells,
                s.row_chunks,
                &mut out,
            )?,
            None if s.cells.is_empty() && s.row_chunks.iter().all(|c| c.is_empty()) => {
                write_empty_section(s.n_stream, &mut out)?
            }
            None => return Err(BlobError::Assemble("a section with cells needs a layout")),
        }
    }
    Ok(out)
}

/// Appends the blob header: magic and the (ignored on restore) source seq_id.
pub fn write_blob_header(seq_id: i32, out: &mut Vec<u8>) {
    out.extend_from_slice(&SEQ_STATE_MAGIC.to_le_bytes());
    out.extend_from_slice(&seq_id.to_le_bytes());
}

/// Appends a section holding no cells: `n_stream`, then a zero cell count per stream. This is what
/// llama.cpp writes for a sequence with nothing in that cache, whatever its layout.
pub fn write_empty_section(n_stream: u32, out: &mut Vec<u8>) -> Result<(), BlobError> {
    check_n_stream(n_stream)?;
    out.extend_from_slice(&n_stream.to_le_bytes());
    for _ in 0..n_stream {
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    Ok(())
}

/// Exact bytes of a section holding `cells` cells and `rows` bytes of row data; `None` on overflow.
pub(super) fn section_size(
    layout: Option<&SectionLayout>,
    n_stream: u32,
    cells: usize,
    has_ext: bool,
    rows: usize,
) -> Option<usize> {
    let streams = 4 + 4 * n_stream.min(MAX_STREAMS) as usize;
    let (Some(layout), true) = (layout, cells > 0) else {
        return Some(streams);
    };
    let meta = cells.checked_mul(if has_ext { 24 } else { 12 })?;
    // Every layer header is 12 bytes: i32 type + u64 row_size, or i32 type + u32 el_size + u32 n_embd.
    let headers = 16 + (layout.k.len().checked_add(layout.v.len())?).checked_mul(12)?;
    streams
        .checked_add(meta)?
        .checked_add(headers)?
        .checked_add(rows)
}

fn check_n_stream(n_stream: u32) -> Result<(), BlobError> {
    if n_stream == 0 || n_stream > MAX_STREAMS {
        return Err(BlobError::Assemble("n_stream must be 1..=256"));
    }
    Ok(())
}

/// Appends one section exactly as llama.cpp's `state_write` would: the cells of `stream` (in the
/// order given) and their rows, taken from `row_chunks` (page row encodings of consecutive runs of
/// `cells`, each chunk's cell count being its length / `layout.bytes_per_cell()`). With no cells it
/// writes an empty section. On error `out` may hold a partial section.
pub fn assemble_section(
    layout: &SectionLayout,
    n_stream: u32,
    stream: Option<u32>,
    cells: &[CellMeta],
    row_chunks: &[&[u8]],
    out: &mut Vec<u8>,
) -> Result<(), BlobError> {
    check_n_stream(n_stream)?;
    if let Some(s) = stream {
        if s >= n_stream {
            return Err(BlobError::Mismatch {
                what: "stream < n_stream",
                expected: n_stream.into(),
                got: s.into(),
            });
        }
    }
    if cells.is_empty() {
        if row_chunks.iter().any(|c| !c.is_empty()) {
            return Err(BlobError::Assemble(
                "row data given for a section without cells",
            ));
        }
        return write_empty_section(n_stream, out);
    }
    let Some(stream) = stream else {
        return Err(BlobError::Assemble("a section with cells needs its stream"));
    };
    let cell_count =
        u32::try_from(cells.len()).map_err(|_| BlobError::Assemble("more than u32::MAX cells"))?;
    layout.validate()?;
    let bpc = layout.bytes_per_cell() as usize; // validate: non-zero, fits usize
    let mut counts = Vec::with_capacity(row_chunks.len());
    let mut total = 0usize;
    for c in row_chunks {
        if c.len() % bpc != 0 {
            return Err(BlobError::Mismatch {
                what: "row chunk length, a multiple of bytes per cell",
                expected: bpc as u64,
                got: c.len() as u64,
            });
        }
        counts.push(c.len() / bpc);
        total += c.len() / bpc; // the chunks are in memory: no overflow
    }
    if total != cells.len() {
        return Err(BlobError::Mismatch {
            what: "cells in row chunks",
            expected: cells.len() as u64,
            got: total as u64,
        });
    }
    let has_ext = cells[0].ext.is_some();
    if cells.iter().any(|c| c.ext.is_some() != has_ext) {
        return Err(BlobError::Assemble(
            "some cells have an ext and some do not",
        ));
    }

    // The chunks and cells are in memory, so the size fits; `reserve` is only a hint anyway.
    out.reserve(
        section_size(Some(layout), n_stream, cells.len(), has_ext, total * bpc).unwrap_or(0),
    );
    out.extend_from_slice(&n_stream.to_le_bytes());
    for s in 0..n_stream {
        if s != stream {
            out.extend_from_slice(&0u32.to_le_bytes());
            continue;
        }
        write_cells_and_dims(cell_count, cells, layout, out);
        // Byte offset, per cell, of the current layer inside a cell's share of a chunk.
        let mut prefix = 0usize;
        for k in &layout.k {
            out.extend_from_slice(&k_header(k));
            let rs = k.row_size as usize;
            copy_rows(row_chunks, &counts, prefix, rs, out);
            prefix += rs;
        }
        for v in &layout.v {
            out.extend_from_slice(&v_header(v));
            match *v {
                VLayer::Plain { row_size, .. } => {
                    let rs = row_size as usize;
                    copy_rows(row_chunks, &counts, prefix, rs, out);
                    prefix += rs;
                }
                VLayer::Transposed {
                    el_size, n_embd, ..
                } => {
                    let (el, n_embd) = (el_size as usize, n_embd as usize);
                    let rs = el * n_embd;
                    let base = out.len();
                    out.resize(base + total * rs, 0);
                    let dst = &mut out[base..];
                    let mut first = 0usize; // first cell of the current chunk
                    for (chunk, &m) in row_chunks.iter().zip(&counts) {
                        let src = &chunk[m * prefix..m * (prefix + rs)];
                        // Cell c's element j goes to (j * total + first + c) * el.
                        transpose(src, rs, &mut dst[first * el..], total * el, m, n_embd, el);
                        first += m;
                    }
                    prefix += rs;
                }
            }
        }
    }
    Ok(())
}

/// Appends a stream's cell count, its cells' metadata and the section's data header (V
/// transposition, layer count, rotation sizes), as llama.cpp's `state_write` does.
pub(super) fn write_cells_and_dims(
    cell_count: u32,
    cells: &[CellMeta],
    layout: &SectionLayout,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&cell_count.to_le_bytes());
    for c in cells {
        out.extend_from_slice(&c.pos.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        if let Some(e) = &c.ext {
            out.extend_from_slice(e);
        }
        out.extend_from_slice(&c.seq_id.to_le_bytes());
    }
    for x in [
        u32::from(layout.v_trans),
        layout.n_layer,
        layout.n_rot_k,
        layout.n_rot_v,
    ] {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// A K layer's header in the blob: type, then row size.
pub(super) fn k_header(k: &KLayer) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[..4].copy_from_slice(&k.type_id.to_le_bytes());
    h[4..].copy_from_slice(&k.row_size.to_le_bytes());
    h
}

/// A V layer's header in the blob: type, then row size, or element size and width.
pub(super) fn v_header(v: &VLayer) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[..4].copy_from_slice(&v.type_id().to_le_bytes());
    match *v {
        VLayer::Plain { row_size, .. } => h[4..].copy_from_slice(&row_size.to_le_bytes()),
        VLayer::Transposed {
            el_size, n_embd, ..
        } => {
            h[4..8].copy_from_slice(&el_size.to_le_bytes());
            h[8..].copy_from_slice(&n_embd.to_le_bytes());
        }
    }
    h
}

/// Appends, chunk by chunk, the `rs`-byte rows of one layer, which start at `m * prefix` in a
/// chunk of `m` cells.
fn copy_rows(chunks: &[&[u8]], counts: &[usize], prefix: usize, rs: usize, out: &mut Vec<u8>) {
    for (chunk, &m) in chunks.iter().zip(counts) {
        out.extend_from_slice(&chunk[m * prefix..m * (prefix + rs)]);
    }
}

/// Copies element `(r, c)` of a `rows x cols` matrix of `el`-byte elements from
/// `src[r * src_stride + c * el]` to `dst[c * dst_stride + r * el]`.
fn transpose(
    src: &[u8],
    src_stride: usize,
    dst: &mut [u8],
    dst_stride: usize,
    rows: usize,
    cols: usize,
    el: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    // Slice once to the exact extents so the kernels' indexing stays in provably small ranges.
    let src = &src[..(rows - 1) * src_stride + cols * el];
    let dst = &mut dst[..(cols - 1) * dst_stride + rows * el];
    match el {
        1 => transpose_el::<1>(src, src_stride, dst, dst_stride, rows, cols),
        2 => transpose_el::<2>(src, src_stride, dst, dst_stride, rows, cols),
        4 => transpose_el::<4>(src, src_stride, dst, dst_stride, rows, cols),
        8 => transpose_el::<8>(src, src_stride, dst, dst_stride, rows, cols),
        _ => transpose_any(src, src_stride, dst, dst_stride, rows, cols, el),
    }
}

/// Tile edge, in elements: a 32 x 32 tile of f16 spans 32 cache lines on each side.
const TILE: usize = 64;

fn transpose_el<const E: usize>(
    src: &[u8],
    src_stride: usize,
    dst: &mut [u8],
    dst_stride: usize,
    rows: usize,
    cols: usize,
) {
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for c in c0..c1 {
                let d = &mut dst[c * dst_stride + r0 * E..c * dst_stride + r1 * E];
                let mut s = r0 * src_stride + c * E;
                for out in d.chunks_exact_mut(E) {
                    out.copy_from_slice(&src[s..s + E]);
                    s += src_stride;
                }
            }
        }
    }
}

fn transpose_any(
    src: &[u8],
    src_stride: usize,
    dst: &mut [u8],
    dst_stride: usize,
    rows: usize,
    cols: usize,
    el: usize,
) {
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c in 0..cols {
            let d = &mut dst[c * dst_stride + r0 * el..c * dst_stride + r1 * el];
            let mut s = r0 * src_stride + c * el;
            for out in d.chunks_exact_mut(el) {
                out.copy_from_slice(&src[s..s + el]);
                s += src_stride;
            }
        }
    }
}
