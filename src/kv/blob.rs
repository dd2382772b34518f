//! Codec for llama.cpp's per-sequence KV state blob (`llama_state_seq_get_data_ext` output).
//!
//! kvrun pages a sequence's KV cache to disk in fixed-size token pages. [`parse`] splits a blob into
//! cell metadata and per-layer row data without copying; [`Section::write_rows`] turns a run of cells
//! into kvrun's page row encoding, which depends only on those cells; [`assemble_section`] and
//! [`assemble_blob`] rebuild the exact bytes llama.cpp's writer would have produced, for
//! `llama_state_seq_set_data_ext`.
//!
//! Blob layout (little-endian), as written by the pinned llama.cpp (`llama-context.cpp`
//! `state_seq_get_data`, `llama-kv-cache.cpp` `state_write*`, `llama-kv-cache-iswa.cpp`):
//! ```text
//! u32 magic 0xaf143cd8, i32 seq_id, then per section (1 unified; iSWA: base then SWA; PARTIAL_ONLY: SWA):
//!   u32 n_stream; per stream: u32 cell_count; if cell_count > 0:
//!     cell_count x { i32 pos, u32 n_seq_id (1), [12-byte ext], i32 seq_id }
//!     u32 v_trans, u32 n_layer, u32 n_rot_k, u32 n_rot_v
//!     per layer: i32 K type, u64 row_size, cell_count rows
//!     per layer with V: v_trans 0: i32 type, u64 row_size, cell_count rows
//!                       v_trans 1: i32 type, u32 el_size, u32 n_embd, n_embd x (cell_count elements)
//! ```
//! The blob does not say whether cells carry the ext, how many sections follow, or how many layers
//! have V: those come from the model, via [`BlobShape`].
//!
//! Every count is checked against the bytes that remain before it is used or allocated for, and all
//! size arithmetic is checked, so a corrupt or hostile blob yields a [`BlobError`], never a panic.

mod error;
mod frame;
mod layout;
mod rows;

#[cfg(test)]
pub(crate) mod fake_cache;
#[cfg(test)]
mod tests;

use std::ops::Range;

pub use self::error::{BlobError, Field};
pub use self::frame::{fill_chunk, BlobFrame, CellExts, ChunkAreas, FrameSection};
pub use self::layout::{KLayer, SectionLayout, VLayer};
pub use self::rows::{
    assemble_blob, assemble_section, write_blob_header, write_empty_section, SectionParts,
};

/// `io_magic` in `llama-context.cpp`: first four bytes of every per-sequence state blob.
pub const SEQ_STATE_MAGIC: u32 = 0xaf14_3cd8;
/// Bytes of the blob header: the magic and the `seq_id` ([`write_blob_header`]).
pub const SEQ_HEADER_BYTES: usize = 8;
/// `LLAMA_MAX_SEQ` of the pinned llama.cpp: `n_stream` is 1 or `n_seq_max`, never more.
pub const MAX_STREAMS: u32 = 256;
/// Bytes of `llama_kv_cell_ext` (`i32 x, i32 y, i32 tok`) for M-RoPE / PLE models.
pub const CELL_EXT_BYTES: u32 = 12;
/// More sections than any memory kind writes; guards against a nonsense [`BlobShape`].
const MAX_SECTIONS: u32 = 16;

/// What the model (not the blob) decides about the blob's structure.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct BlobShape {
    /// 0, or [`CELL_EXT_BYTES`] when the cache keeps a cell ext (M-RoPE or PLE models).
    pub cell_ext_bytes: u32,
    /// 1 for a unified cache or a `PARTIAL_ONLY` (SWA-only) blob, 2 for iSWA (base, then SWA).
    pub sections: u32,
    /// Per section, how many layers have a V tensor; `None`: every layer does.
    pub v_layers_per_section: Option<Vec<u32>>,
}

impl BlobShape {
    /// A one-section shape where every layer has V.
    pub fn unified(cell_ext: bool) -> Self {
        let cell_ext_bytes = if cell_ext { CELL_EXT_BYTES } else { 0 };
        BlobShape {
            cell_ext_bytes,
            sections: 1,
            v_layers_per_section: None,
        }
    }

    fn validate(&self) -> Result<(), BlobError> {
        if self.cell_ext_bytes != 0 && self.cell_ext_bytes != CELL_EXT_BYTES {
            return Err(BlobError::Shape("cell_ext_bytes must be 0 or 12"));
        }
        if self.sections > MAX_SECTIONS {
            return Err(BlobError::Shape("more than 16 sections"));
        }
        match &self.v_layers_per_section {
            Some(v) if v.len() as u64 != u64::from(self.sections) => Err(BlobError::Shape(
                "v_layers_per_section length differs from sections",
            )),
            _ => Ok(()),
        }
    }
}

/// One cell's metadata, in blob (cell index) order.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct CellMeta {
    pub pos: i32,
    /// Always the blob's `seq_id` after [`parse`]; written back as given by assembly.
    pub seq_id: i32,
    /// `llama_kv_cell_ext` bytes as stored, present exactly when the shape says so.
    pub ext: Option<[u8; 12]>,
}

/// A parsed blob, borrowing row data from the input.
#[derive(Clone, Debug)]
pub struct SeqState<'a> {
    pub seq_id: i32,
    pub sections: Vec<Section<'a>>,
}

/// One memory's part of the blob (a whole unified cache, or the base or SWA half of an iSWA cache).
#[derive(Clone, Debug)]
pub struct Section<'a> {
    /// Stream count of the writing context (1 with a unified KV, else `n_seq_max`); restore demands
    /// the same count.
    pub n_stream: u32,
    /// The stream that holds this sequence's cells; `None` when the section is empty.
    pub stream: Option<u32>,
    pub cells: Vec<CellMeta>,
    /// `None` only for an empty section: llama.cpp writes no data header without cells.
    pub layout: Option<SectionLayout>,
    /// Where this section lies in the blob.
    pub span: Range<usize>,
    /// Per K layer, `cells.len() * row_size` bytes.
    k_data: Vec<&'a [u8]>,
    /// Per V layer: rows (plain) or `n_embd` runs of `cells.len()` elements (transposed).
    v_data: Vec<&'a [u8]>,
}

impl<'a> Section<'a> {
    /// Per K layer, its rows as they lie in the blob.
    pub fn k_data(&self) -> &[&'a [u8]] {
        &self.k_data
    }

    /// Per layer that has V, its data as it lies in the blob (transposed when `v_trans`).
    pub fn v_data(&self) -> &[&'a [u8]] {
        &self.v_data
    }
}

/// Parses a per-sequence state blob. Zero-copy: sections borrow their row data from `blob`.
///
/// Rejects bad magic, `n_seq_id != 1`, cells of another sequence, more than one non-empty stream,
/// zero or more than [`MAX_STREAMS`] streams, `v_trans` other than 0/1, zero layers or sizes, more V
/// layers than layers, sizes that overflow, truncation and trailing bytes.
pub fn parse<'a>(blob: &'a [u8], shape: &BlobShape) -> Result<SeqState<'a>, BlobError> {
    let (state, end) = parse_attention(blob, shape)?;
    if end != blob.len() {
        return Err(BlobError::TrailingBytes {
            offset: end,
            left: blob.len() - end,
        });
    }
    Ok(state)
}

/// [`parse`] of a hybrid memory's blob: the attention sections, then llama.cpp's recurrent
/// part, which kvrun keeps whole (a checkpoint) and does not parse. Returns the sections
/// and where the attention part ends.
pub fn parse_attention<'a>(
    blob: &'a [u8],
    shape: &BlobShape,
) -> Result<(SeqState<'a>, usize), BlobError> {
    shape.validate()?;
    let mut r = Reader { b: blob, pos: 0 };
    let top = |name| Field {
        name,
        section: None,
        layer: None,
    };
    let magic = r.u32(top("magic"))?;
    if magic != SEQ_STATE_MAGIC {
        return Err(BlobError::BadMagic { found: magic });
    }
    let seq_id = r.i32(top("seq_id"))?;
    let mut sections = Vec::new();
    for si in 0..shape.sections {
        let n_v = shape.v_layers_per_section.as_ref().map(|v| v[si as usize]);
        sections.push(parse_section(
            &mut r,
            si,
            seq_id,
            shape.cell_ext_bytes != 0,
            n_v,
        )?);
    }
    Ok((SeqState { seq_id, sections }, r.pos))
}

fn parse_section<'a>(
    r: &mut Reader<'a>,
    si: u32,
    seq_id: i32,
    has_ext: bool,
    n_v: Option<u32>,
) -> Result<Section<'a>, BlobError> {
    let start = r.pos;
    let f = |name| Field {
        name,
        section: Some(si),
        layer: None,
    };
    let at = r.pos;
    let n_stream = r.u32(f("n_stream"))?;
    if n_stream == 0 || n_stream > MAX_STREAMS {
        return Err(bad(at, f("n_stream"), n_stream, "must be 1..=256"));
    }
    let mut sec = Section {
        n_stream,
        stream: None,
        cells: Vec::new(),
        layout: None,
        span: start..start,
        k_data: Vec::new(),
        v_data: Vec::new(),
    };
    for s in 0..n_stream {
        let at = r.pos;
        let cell_count = r.u32(f("cell_count"))?;
        if cell_count == 0 {
            continue;
        }
        if sec.stream.is_some() {
            return Err(bad(
                at,
                f("cell_count"),
                cell_count,
                "second non-empty stream in a one-sequence blob",
            ));
        }
        sec.stream = Some(s);
        parse_stream(r, si, seq_id, has_ext, n_v, cell_count, &mut sec)?;
    }
    sec.span = start..r.pos;
    Ok(sec)
}

fn parse_stream<'a>(
    r: &mut Reader<'a>,
    si: u32,
    seq_id: i32,
    has_ext: bool,
    n_v: Option<u32>,
    cell_count: u32,
    sec: &mut Section<'a>,
) -> Result<(), BlobError> {
    let f = |name| Field {
        name,
        section: Some(si),
        layer: None,
    };
    let meta_size = if has_ext {
        12 + u64::from(CELL_EXT_BYTES)
    } else {
        12
    };
    let need = u64::from(cell_count) * meta_size;
    if need > r.left() as u64 {
        return Err(BlobError::Truncated {
            offset: r.pos,
            field: f("cell metadata"),
            need,
            left: r.left(),
        });
    }
    let mut cells = Vec::with_capacity(cell_count as usize);
    for _ in 0..cell_count {
        let pos = r.i32(f("cell pos"))?;
        let at = r.pos;
        let n_seq_id = r.u32(f("cell n_seq_id"))?;
        if n_seq_id != 1 {
            return Err(bad(
                at,
                f("cell n_seq_id"),
                n_seq_id,
                "must be 1 in a one-sequence blob",
            ));
        }
        let ext = if has_ext {
            let mut e = [0u8; 12];
            e.copy_from_slice(r.take(12, f("cell ext"))?);
            Some(e)
        } else {
            None
        };
        let at = r.pos;
        let cell_seq = r.i32(f("cell seq_id"))?;
        if cell_seq != seq_id {
            return Err(bad(
                at,
                f("cell seq_id"),
                cell_seq,
                "differs from the blob's seq_id",
            ));
        }
        cells.push(CellMeta {
            pos,
            seq_id: cell_seq,
            ext,
        });
    }

    let at = r.pos;
    let v_trans = match r.u32(f("v_trans"))? {
        0 => false,
        1 => true,
        x => return Err(bad(at, f("v_trans"), x, "must be 0 or 1")),
    };
    let at = r.pos;
    let n_layer = r.u32(f("n_layer"))?;
    if n_layer == 0 || u64::from(n_layer) > r.left() as u64 / 12 {
        return Err(bad(
            at,
            f("n_layer"),
            n_layer,
            "zero or more layers than the bytes could hold",
        ));
    }
    let n_v = n_v.unwrap_or(n_layer);
    if n_v > n_layer {
        return Err(bad(
            at,
            f("n_layer"),
            n_layer,
            "fewer layers than the shape's V layers",
        ));
    }
    let n_rot_k = r.u32(f("n_rot_k"))?;
    let n_rot_v = r.u32(f("n_rot_v"))?;

    let cc = u64::from(cell_count);
    let mut k = Vec::with_capacity(n_layer as usize);
    let mut k_data = Vec::with_capacity(n_layer as usize);
    for l in 0..n_layer {
        let f = |name| Field {
            name,
            section: Some(si),
            layer: Some(l),
        };
        let type_id = r.i32(f("K type"))?;
        let row_size = r.nonzero_u64(f("K row_size"))?;
        k_data.push(r.rows(cc, row_size, f("K rows"))?);
        k.push(KLayer { type_id, row_size });
    }
    let mut v = Vec::with_capacity(n_v as usize);
    let mut v_data = Vec::with_capacity(n_v as usize);
    for l in 0..n_v {
        let f = |name| Field {
            name,
            section: Some(si),
            layer: Some(l),
        };
        let type_id = r.i32(f("V type"))?;
        if v_trans {
            let at = r.pos;
            let el_size = r.u32(f("V el_size"))?;
            if el_size == 0 {
                return Err(bad(at, f("V el_size"), 0, "must not be zero"));
            }
            let at = r.pos;
            let n_embd = r.u32(f("V n_embd"))?;
            if n_embd == 0 {
                return Err(bad(at, f("V n_embd"), 0, "must not be zero"));
            }
            let per_cell = u64::from(el_size) * u64::from(n_embd);
            v_data.push(r.rows(cc, per_cell, f("V elements"))?);
            v.push(VLayer::Transposed {
                type_id,
                el_size,
                n_embd,
            });
        } else {
            let row_size = r.nonzero_u64(f("V row_size"))?;
            v_data.push(r.rows(cc, row_size, f("V rows"))?);
            v.push(VLayer::Plain { type_id, row_size });
        }
    }
    let layout = SectionLayout {
        v_trans,
        n_layer,
        n_rot_k,
        n_rot_v,
        k,
        v,
    };
    // Every row is in the blob, so the per-cell size is bounded by its length; this cannot fail
    // for a parsed layout but keeps `validate` the single statement of the invariants.
    layout.validate()?;
    sec.cells = cells;
    sec.layout = Some(layout);
    sec.k_data = k_data;
    sec.v_data = v_data;
    Ok(())
}

fn bad(offset: usize, field: Field, value: impl Into<i128>, why: &'static str) -> BlobError {
    BlobError::BadValue {
        offset,
        field,
        value: value.into(),
        why,
    }
}

/// Bounds-checked little-endian reader over the blob.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.pos
    }

    fn take(&mut self, n: u64, field: Field) -> Result<&'a [u8], BlobError> {
        if n > self.left() as u64 {
            return Err(BlobError::Truncated {
                offset: self.pos,
                field,
                need: n,
                left: self.left(),
            });
        }
        let s = &self.b[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn u32(&mut self, field: Field) -> Result<u32, BlobError> {
        let s = self.take(4, field)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn i32(&mut self, field: Field) -> Result<i32, BlobError> {
        self.u32(field).map(|x| x as i32)
    }

    fn nonzero_u64(&mut self, field: Field) -> Result<u64, BlobError> {
        let at = self.pos;
        let s = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        match u64::from_le_bytes(a) {
            0 => Err(bad(at, field, 0, "must not be zero")),
            x => Ok(x),
        }
    }

    /// `cells * per_cell` bytes of row data, refusing sizes that overflow.
    fn rows(&mut self, cells: u64, per_cell: u64, field: Field) -> Result<&'a [u8], BlobError> {
        match cells.checked_mul(per_cell) {
            Some(n) => self.take(n, field),
            None => Err(bad(self.pos, field, per_cell, "row data size overflows")),
        }
    }
}
