//! The per-section tensor layout of a llama.cpp KV state blob, and kvrun's own stable encoding of it.
//!
//! Everything llama.cpp checks on restore besides the cells themselves (V transposition, layer count,
//! Hadamard rotation sizes, and per layer the K/V type and row size, or element size and width when V
//! is transposed) lives here. Two sections whose layouts compare equal can exchange page rows; the
//! session manifest stores [`SectionLayout::to_bytes`] to make that check across runs.

use super::BlobError;

/// K of one layer: one row of `row_size` bytes per cell (`ggml_row_size(type, n_embd_k_gqa)`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct KLayer {
    /// `ggml_type` of the K tensor.
    pub type_id: i32,
    /// Bytes per cell; need not be even (q8_0 rows are 34-byte blocks).
    pub row_size: u64,
}

/// V of one layer that has V (llama.cpp skips layers without a V tensor).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum VLayer {
    /// `v_trans == 0` (flash attention): one row per cell, like K.
    Plain { type_id: i32, row_size: u64 },
    /// `v_trans == 1`: the blob stores element `j` of every cell together, for `j in 0..n_embd`.
    Transposed {
        type_id: i32,
        /// `ggml_type_size(type)`, bytes per element.
        el_size: u32,
        /// `n_embd_v_gqa` of the layer: elements per cell.
        n_embd: u32,
    },
}

impl VLayer {
    /// Bytes this layer holds per cell (saturating; [`SectionLayout::validate`] rules out overflow).
    pub fn bytes_per_cell(&self) -> u64 {
        match *self {
            VLayer::Plain { row_size, .. } => row_size,
            VLayer::Transposed {
                el_size, n_embd, ..
            } => u64::from(el_size) * u64::from(n_embd),
        }
    }

    /// The `ggml_type` of the V tensor.
    pub fn type_id(&self) -> i32 {
        match *self {
            VLayer::Plain { type_id, .. } | VLayer::Transposed { type_id, .. } => type_id,
        }
    }
}

/// What one section's data header says, in blob order: `k.len() == n_layer`, `v` holds only the
/// layers that have V, all `Plain` or all `Transposed` according to `v_trans`.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct SectionLayout {
    pub v_trans: bool,
    pub n_layer: u32,
    pub n_rot_k: u32,
    pub n_rot_v: u32,
    pub k: Vec<KLayer>,
    pub v: Vec<VLayer>,
}

/// Leading bytes of [`SectionLayout::to_bytes`]; the trailing digit is the encoding version.
const LAYOUT_MAGIC: [u8; 4] = *b"KVL1";
const TAG_PLAIN: u8 = 0;
const TAG_TRANSPOSED: u8 = 1;

impl SectionLayout {
    /// Bytes one cell occupies in a page row encoding (all K rows plus all V rows of the cell).
    /// Saturates instead of overflowing; a validated layout never gets near `u64::MAX`.
    pub fn bytes_per_cell(&self) -> u64 {
        let k = self
            .k
            .iter()
            .fold(0u64, |a, l| a.saturating_add(l.row_size));
        self.v
            .iter()
            .fold(k, |a, l| a.saturating_add(l.bytes_per_cell()))
    }

    /// Checks the invariants the codec relies on: K for every layer, no more V layers than layers,
    /// V variants matching `v_trans`, no zero sizes (a zero-byte cell could not be counted from a
    /// chunk's length) and a per-cell size that fits in `usize`.
    pub fn validate(&self) -> Result<(), BlobError> {
        let bad = |why| Err(BlobError::InvalidLayout(why));
        if self.n_layer == 0 {
            return bad("zero layers");
        }
        if self.k.len() as u64 != u64::from(self.n_layer) {
            return bad("K layer count differs from n_layer");
        }
        if self.v.len() > self.k.len() {
            return bad("more V layers than layers");
        }
        let mut total: u64 = 0;
        for k in &self.k {
            if k.row_size == 0 {
                return bad("K row size is zero");
            }
            total = match total.checked_add(k.row_size) {
                Some(t) => t,
                None => return bad("bytes per cell overflow"),
            };
        }
        for v in &self.v {
            let per_cell = match *v {
                VLayer::Plain { row_size, .. } if !self.v_trans => row_size,
                VLayer::Transposed { .. } if self.v_trans => v.bytes_per_cell(),
                _ => return bad("V layer kind does not match v_trans"),
            };
            if per_cell == 0 {
                return bad("V bytes per cell is zero");
            }
            total = match total.checked_add(per_cell) {
                Some(t) => t,
                None => return bad("bytes per cell overflow"),
            };
        }
        if usize::try_from(total).is_err() {
            return bad("bytes per cell exceed the address space");
        }
        Ok(())
    }

    /// Compact, stable, little-endian encoding:
    /// `"KVL1" u8 v_trans, u32 n_layer, n_rot_k, n_rot_v, u32 n_k, n_k x (i32 type, u64 row_size),
    /// u32 n_v, n_v x (u8 tag, i32 type, then u64 row_size for tag 0 | u32 el_size, u32 n_embd for tag 1)`.
    /// Equal layouts encode to equal bytes, so the manifest may compare or hash the encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(25 + self.k.len() * 12 + self.v.len() * 13);
        out.extend_from_slice(&LAYOUT_MAGIC);
        out.push(u8::from(self.v_trans));
        for x in [
            self.n_layer,
            self.n_rot_k,
            self.n_rot_v,
            self.k.len() as u32,
        ] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for k in &self.k {
            out.extend_from_slice(&k.type_id.to_le_bytes());
            out.extend_from_slice(&k.row_size.to_le_bytes());
        }
        out.extend_from_slice(&(self.v.len() as u32).to_le_bytes());
        for v in &self.v {
            match *v {
                VLayer::Plain { type_id, row_size } => {
                    out.push(TAG_PLAIN);
                    out.extend_from_slice(&type_id.to_le_bytes());
                    out.extend_from_slice(&row_size.to_le_bytes());
                }
                VLayer::Transposed {
                    type_id,
                    el_size,
                    n_embd,
                } => {
                    out.push(TAG_TRANSPOSED);
                    out.extend_from_slice(&type_id.to_le_bytes());
                    out.extend_from_slice(&el_size.to_le_bytes());
                    out.extend_from_slice(&n_embd.to_le_bytes());
                }
            }
        }
        out
    }

    /// Decodes [`Self::to_bytes`] output; rejects bad magic, truncation, unknown tags, trailing
    /// bytes and anything [`Self::validate`] rejects. Counts are checked against the remaining
    /// bytes before anything is allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BlobError> {
        let mut r = Cursor { b: bytes, pos: 0 };
        if r.take(4, "magic")? != LAYOUT_MAGIC {
            return Err(r.err(0, "magic", "not a kvrun layout (expected \"KVL1\")"));
        }
        let v_trans = match r.take(1, "v_trans")?[0] {
            0 => false,
            1 => true,
            _ => return Err(r.err(4, "v_trans", "must be 0 or 1")),
        };
        let n_layer = r.u32("n_layer")?;
        let n_rot_k = r.u32("n_rot_k")?;
        let n_rot_v = r.u32("n_rot_v")?;
        let at = r.pos;
        let n_k = r.u32("K layer count")? as usize;
        if n_k > r.left() / 12 {
            return Err(r.err(at, "K layer count", "larger than the bytes that follow"));
        }
        let mut k = Vec::with_capacity(n_k);
        for _ in 0..n_k {
            let type_id = r.i32("K type")?;
            let row_size = r.u64("K row_size")?;
            k.push(KLayer { type_id, row_size });
        }
        let at = r.pos;
        let n_v = r.u32("V layer count")? as usize;
        if n_v > r.left() / 13 {
            return Err(r.err(at, "V layer count", "larger than the bytes that follow"));
        }
        let mut v = Vec::with_capacity(n_v);
        for _ in 0..n_v {
            let at = r.pos;
            let tag = r.take(1, "V tag")?[0];
            let type_id = r.i32("V type")?;
            v.push(match tag {
                TAG_PLAIN => VLayer::Plain {
                    type_id,
                    row_size: r.u64("V row_size")?,
                },
                TAG_TRANSPOSED => VLayer::Transposed {
                    type_id,
                    el_size: r.u32("V el_size")?,
                    n_embd: r.u32("V n_embd")?,
                },
                _ => return Err(r.err(at, "V tag", "unknown V layer tag")),
            });
        }
        if r.left() != 0 {
            return Err(r.err(r.pos, "end", "trailing bytes"));
        }
        let layout = SectionLayout {
            v_trans,
            n_layer,
            n_rot_k,
            n_rot_v,
            k,
            v,
        };
        layout.validate()?;
        Ok(layout)
    }
}

/// Minimal bounds-checked reader for the layout encoding.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.pos
    }

    fn err(&self, offset: usize, field: &'static str, why: &'static str) -> BlobError {
        BlobError::LayoutEncoding { offset, field, why }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BlobError> {
        if n > self.left() {
            return Err(self.err(self.pos, field, "truncated"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, BlobError> {
        let s = self.take(4, field)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, BlobError> {
        self.u32(field).map(|x| x as i32)
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, BlobError> {
        let s = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
}
