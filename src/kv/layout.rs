//! The KV layout of one model + context settings: how many cache sections a sequence's blob
//! has (one for a unified cache; full-attention then sliding-window for iSWA), and each
//! section's per-layer row sizes. Recorded in session manifests and compared before a
//! restore, so pages are only ever reassembled into a context that reads them the same way.

use super::blob::{self, BlobShape, SectionLayout};
use super::{CellExt, KvError};

/// Which section holds the full-attention rows (always first) and the sliding-window rows.
pub const BASE: usize = 0;
pub const SWA: usize = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvLayout {
    /// One entry per section, in blob order.
    pub sections: Vec<SectionLayout>,
    /// Window of the sliding-window layers (0 for a unified cache).
    pub n_swa: u32,
}

impl KvLayout {
    /// The blob shape for a model: iSWA models write two sections, and cells carry an ext
    /// where the cache keeps one.
    pub fn shape_for(n_swa: u32, cell_ext: CellExt) -> BlobShape {
        BlobShape {
            cell_ext_bytes: match cell_ext {
                CellExt::None => 0,
                _ => blob::CELL_EXT_BYTES,
            },
            sections: if n_swa > 0 { 2 } else { 1 },
            v_layers_per_section: None,
        }
    }

    /// Reads the layout off a parsed, non-empty blob.
    pub fn from_state(state: &blob::SeqState<'_>, n_swa: u32) -> Result<Self, KvError> {
        let sections = state
            .sections
            .iter()
            .map(|s| {
                s.layout.clone().ok_or_else(|| {
                    KvError::Layout(
                        "a cache section holds no cells, so its layout is unknown".into(),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { sections, n_swa })
    }

    pub fn is_iswa(&self) -> bool {
        self.sections.len() > 1
    }

    /// Bytes of one token's rows in each section.
    pub fn bytes_per_token(&self, section: usize) -> usize {
        self.sections
            .get(section)
            .map(|s| s.bytes_per_cell() as usize)
            .unwrap_or(0)
    }

    /// A stable text form for manifests: `n_swa:hex(section)[,hex(section)]`.
    pub fn encode(&self) -> String {
        let sections: Vec<String> = self
            .sections
            .iter()
            .map(|s| hex::encode(s.to_bytes()))
            .collect();
        format!("{}:{}", self.n_swa, sections.join(","))
    }

    pub fn decode(text: &str) -> Result<Self, KvError> {
        let bad =
            |detail: &str| KvError::Layout(format!("stored KV layout is malformed: {detail}"));
        let (n_swa, rest) = text.split_once(':').ok_or_else(|| bad("no window"))?;
        let n_swa = n_swa.parse().map_err(|_| bad("window"))?;
        let sections = rest
            .split(',')
            .map(|h| {
                let bytes = hex::decode(h).map_err(|_| bad("hex"))?;
                SectionLayout::from_bytes(&bytes).map_err(KvError::Blob)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if sections.is_empty() || sections.len() > 2 || (sections.len() == 2) != (n_swa > 0) {
            return Err(bad("section count"));
        }
        Ok(Self { sections, n_swa })
    }

    /// Describes the first difference to `other` in words a user can act on.
    pub fn describe_difference(&self, other: &KvLayout) -> Option<String> {
        if self == other {
            return None;
        }
        if self.sections.len() != other.sections.len() || self.n_swa != other.n_swa {
            return Some("the cache structure (sliding-window layers) differs".into());
        }
        for (a, b) in self.sections.iter().zip(&other.sections) {
            if a.v_trans != b.v_trans {
                return Some(
                    "the flash-attention setting differs (V is stored transposed \
                             without flash attention)"
                        .into(),
                );
            }
            if a.k.first().map(|k| k.type_id) != b.k.first().map(|k| k.type_id) {
                return Some("the KV cache type differs".into());
            }
        }
        Some("the per-layer KV row sizes differ (another llama.cpp build?)".into())
    }
}

/// Bytes per cell of each layer block of a page-row encoding, in order (K layers, then V).
pub fn layer_widths(layout: &SectionLayout) -> Vec<usize> {
    layout
        .k
        .iter()
        .map(|k| k.row_size as usize)
        .chain(layout.v.iter().map(|v| v.bytes_per_cell() as usize))
        .collect()
}

/// The rows of cells `range` out of a page-row encoding of `n_cells` cells.
pub fn slice_cells(
    layout: &SectionLayout,
    rows: &[u8],
    n_cells: usize,
    range: std::ops::Range<usize>,
) -> Vec<u8> {
    let widths = layer_widths(layout);
    let mut out = Vec::with_capacity(range.len() * widths.iter().sum::<usize>());
    let mut offset = 0;
    for w in widths {
        let block = &rows[offset..offset + w * n_cells];
        out.extend_from_slice(&block[range.start * w..range.end * w]);
        offset += w * n_cells;
    }
    out
}

/// Joins page-row encodings of consecutive cells into one (layer by layer).
pub fn concat_cells(layout: &SectionLayout, parts: &[(&[u8], usize)]) -> Vec<u8> {
    let widths = layer_widths(layout);
    let total: usize = parts.iter().map(|(_, n)| n).sum();
    let mut out = Vec::with_capacity(total * widths.iter().sum::<usize>());
    let mut offsets = vec![0usize; parts.len()];
    for w in widths {
        for (i, (rows, n)) in parts.iter().enumerate() {
            out.extend_from_slice(&rows[offsets[i]..offsets[i] + w * n]);
            offsets[i] += w * n;
        }
    }
    out
}
