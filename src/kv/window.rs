//! Where a sliding-window cache's cells lie, so that a restored window sits in the cells an
//! uninterrupted run had.
//!
//! llama.cpp keeps a sliding window in a ring of cells and CPU attention sums over cells in
//! slot order (flash attention's single-token path even splits the slots between threads),
//! so two caches holding the same rows in other slots give other roundings. The ring's size
//! also depends on the context (`n_swa * n_seq_max + n_ubatch`): a plain `run` and a session
//! engine with a scratch sequence wrap at different points. kvrun therefore lays every
//! sequence's window out afresh at fixed positions ([`settles_at`]: a page boundary once the
//! window and a page have been filled), by reading the window out and loading it back,
//! which llama.cpp places in the lowest free cells, in position order. Between two such
//! points a sequence only appends, so no ring wraps: its cells hold the positions
//! [`cells_start`]`..len` in order from slot 0, in every context. A restore lays out exactly
//! that (the cells before the window as zero rows: attention skips them, and llama.cpp keeps
//! them until they are overwritten, as a live ring does).

use super::blob::{assemble_section, parse_attention, BlobError, BlobShape, CellMeta};

/// Whether a sequence whose window is `n_swa` tokens is laid out afresh before the batch
/// that starts at `pos` (batches never cross a page boundary).
pub fn settles_at(pos: usize, n_swa: usize, page: usize) -> bool {
    n_swa > 0 && page > 0 && pos.is_multiple_of(page) && pos >= n_swa + page
}

/// The first position a sliding-window cache holds after `len` tokens were decoded in the
/// canonical schedule (one-page batches, laid out afresh where [`settles_at`] says): the
/// window of the last settle point before `len`, or 0 before the first one.
pub fn cells_start(len: usize, n_swa: usize, page: usize) -> usize {
    if n_swa == 0 || page == 0 || len == 0 {
        return 0;
    }
    let last = (len - 1) / page * page;
    match settles_at(last, n_swa, page) {
        true => last - n_swa,
        false => 0,
    }
}

/// `blob` (a state whose last attention section is the window's, as `shape` says, and
/// whatever trailer follows, such as a hybrid's recurrent part) with its window section
/// begun at position `first`: the positions between `first` and its first cell come first,
/// as zero rows. The sections before it are copied as they are. `None` when the window
/// already begins there (or holds nothing), or its cells carry an ext, which zero rows
/// could not give.
pub fn begin_window_at(
    blob: &[u8],
    shape: &BlobShape,
    first: usize,
) -> Result<Option<Vec<u8>>, BlobError> {
    let lead_end = match shape.sections {
        0 | 1 => BLOB_HEADER,
        _ => match parse_attention(blob, shape) {
            Ok((state, _)) => state.sections.last().map_or(BLOB_HEADER, |s| s.span.start),
            // A hybrid whose attention layers all keep the window writes a full-attention
            // section of cells and no layers, which the parser refuses as damaged.
            Err(e) => skip_layerless_section(blob, BLOB_HEADER, shape.cell_ext_bytes)
                .filter(|_| shape.sections == 2)
                .ok_or(e)?,
        },
    };
    // The window section alone, behind the blob's header.
    let mut alone = blob[..BLOB_HEADER.min(blob.len())].to_vec();
    alone.extend_from_slice(&blob[lead_end..]);
    let one = BlobShape {
        sections: 1,
        v_layers_per_section: None,
        ..shape.clone()
    };
    let (state, end) = parse_attention(&alone, &one)?;
    let window = &state.sections[0];
    let (Some(layout), Some(start)) = (&window.layout, window.cells.first()) else {
        return Ok(None);
    };
    let first = i32::try_from(first).map_err(|_| BlobError::Assemble("position overflows"))?;
    if start.pos <= first || window.cells.iter().any(|c| c.ext.is_some()) {
        return Ok(None);
    }
    let cells: Vec<CellMeta> = (first..start.pos)
        .map(|pos| CellMeta {
            pos,
            seq_id: state.seq_id,
            ext: None,
        })
        .chain(window.cells.iter().copied())
        .collect();
    let zeros = vec![0u8; (start.pos - first) as usize * layout.bytes_per_cell() as usize];
    let rows = window.rows_for_cells(0..window.cells.len())?;
    let mut out = blob[..lead_end].to_vec();
    assemble_section(
        layout,
        window.n_stream,
        window.stream,
        &cells,
        &[&zeros, &rows],
        &mut out,
    )?;
    out.extend_from_slice(&alone[end..]);
    Ok(Some(out))
}

/// Bytes of a blob's magic and sequence id.
const BLOB_HEADER: usize = 8;

/// Where a section of cells and no layers, starting at `at`, ends (`None`: it is not one).
fn skip_layerless_section(blob: &[u8], at: usize, ext_bytes: u32) -> Option<usize> {
    let u32_at = |o: usize| {
        let b = blob.get(o..o.checked_add(4)?)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    };
    let n_stream = u32_at(at)?;
    let mut o = at + 4;
    for _ in 0..n_stream.min(super::blob::MAX_STREAMS) {
        let n_cells = u32_at(o)? as usize;
        o += 4;
        if n_cells == 0 {
            continue;
        }
        // pos, n_seq_id (1), ext, seq_id; then v_trans, n_layer, n_rot_k, n_rot_v.
        o = o.checked_add(n_cells.checked_mul(12 + ext_bytes as usize)?)?;
        if u32_at(o + 4)? != 0 {
            return None;
        }
        o += 16;
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::blob::fake_cache::plain_layout;
    use crate::kv::blob::{assemble_blob, SectionParts};

    #[test]
    fn a_window_is_laid_out_afresh_at_page_boundaries_past_the_first_ring() {
        // Gemma 3: a 512-token window, 256-token pages (a ring of 768 cells in a plain run).
        let cases = [
            (0, false),
            (256, false),
            (512, false),
            (767, false),
            (768, true),
            (769, false),
            (1024, true),
        ];
        for (pos, want) in cases {
            assert_eq!(settles_at(pos, 512, 256), want, "pos {pos}");
        }
        // A 128-token window settles from the first boundary past 384.
        assert!(!settles_at(256, 128, 256));
        assert!(settles_at(512, 128, 256));
        assert!(!settles_at(512, 0, 256), "no window, nothing to lay out");
    }

    #[test]
    fn the_cells_start_at_the_last_settle_points_window() {
        let cases = [
            (0, 0),
            (300, 0),
            (768, 0),
            (769, 256),
            (782, 256),
            (1024, 256),
            (1025, 512),
            (1300, 768),
            (2021, 1792 - 512),
            (4000, 3840 - 512),
        ];
        for (len, want) in cases {
            assert_eq!(cells_start(len, 512, 256), want, "len {len}");
            // Never more cells than the smallest ring (window plus one page) holds.
            assert!(len - want <= 768, "len {len}");
        }
        assert_eq!(cells_start(400, 128, 256), 0);
        assert_eq!(cells_start(513, 128, 256), 384);
        assert_eq!(cells_start(5000, 0, 256), 0);
    }

    fn cells(positions: std::ops::Range<i32>) -> Vec<CellMeta> {
        positions
            .map(|pos| CellMeta {
                pos,
                seq_id: 3,
                ext: None,
            })
            .collect()
    }

    #[test]
    fn a_window_begun_earlier_gets_zero_rows_and_keeps_the_rest() {
        let (base, window) = (plain_layout(1, 4, 4), plain_layout(2, 2, 2));
        let base_cells = cells(0..6);
        let window_cells = cells(4..6);
        let base_rows: Vec<u8> = (0..6 * 8).map(|i| i as u8 + 1).collect();
        let window_rows: Vec<u8> = (0..2 * 8).map(|i| i as u8 + 100).collect();
        let part = |l, c, r| SectionParts {
            layout: Some(l),
            n_stream: 1,
            stream: Some(0),
            cells: c,
            row_chunks: r,
        };
        let mut blob = assemble_blob(
            3,
            &[
                part(&base, &base_cells, &[&base_rows]),
                part(&window, &window_cells, &[&window_rows]),
            ],
        )
        .unwrap();
        let trailer = [9u8, 8, 7];
        blob.extend_from_slice(&trailer);
        let shape = BlobShape {
            cell_ext_bytes: 0,
            sections: 2,
            v_layers_per_section: None,
        };
        let out = begin_window_at(&blob, &shape, 1).unwrap().unwrap();
        let (state, end) = parse_attention(&out, &shape).unwrap();
        assert_eq!(&out[end..], &trailer);
        assert_eq!(state.sections[0].cells, base_cells);
        assert_eq!(
            state.sections[0].rows_for_cells(0..6).unwrap(),
            base_rows,
            "the other sections are as they were"
        );
        assert_eq!(state.sections[1].cells, cells(1..6));
        // Rows are stored a layer's tensor at a time, so the new cells are read apart.
        assert_eq!(
            state.sections[1].rows_for_cells(0..3).unwrap(),
            vec![0u8; 3 * 8]
        );
        assert_eq!(state.sections[1].rows_for_cells(3..5).unwrap(), window_rows);
        // Already begun there (or earlier): nothing to do.
        assert!(begin_window_at(&blob, &shape, 4).unwrap().is_none());
        assert!(begin_window_at(&blob, &shape, 5).unwrap().is_none());
    }
}
