//! Reading page rows out of a live context, and putting assembled pages back.
//!
//! Rows are read through a scratch sequence: the page range is shared into it (in a
//! unified cache that only tags cells, no KV bytes move) and that sequence's state is read,
//! which serializes just those cells. This keeps a save O(new tokens), not O(context).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use crate::kv::blob::{self, CellExts, CellMeta, Section, SectionParts};
use crate::kv::layout::{concat_cells, layer_widths};
use crate::kv::{KvLayout, MemoryKind};
use crate::llama::{Context, KvCapture, TokenId};
use crate::sequence::MAIN_SEQ;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::store::Payload;

/// Where a session lives in a context: its sequence, the scratch sequence used to read page
/// ranges, and whether it has the context to itself. A session alone in the context is
/// restored into an emptied cache, so its cells land in the slots an uninterrupted run used
/// (that is what makes restores bit-exact); in a shared pool they land wherever cells are free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub seq: i32,
    pub scratch: i32,
    pub exclusive: bool,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            seq: MAIN_SEQ,
            scratch: 1,
            exclusive: true,
        }
    }
}

/// One section's rows for a contiguous run of positions, in position order: per layer (K
/// layers, then V), a block of `count` rows of that layer's width, at `starts[layer]` in
/// `data`.
pub struct SectionRows {
    pub layout: blob::SectionLayout,
    pub first_pos: usize,
    pub count: usize,
    /// llama.cpp's state itself when its cells already lie in position order with plain V
    /// rows (the usual case: a capture is not copied before its pages are sliced, which at
    /// a gigabyte of KV was seconds of first-touch page faults), else the rows copied into
    /// position order. Shared by the sections of one capture.
    data: Arc<Vec<u8>>,
    starts: Vec<usize>,
}

impl SectionRows {
    /// Rows of `range`, if this capture holds all of them.
    pub fn slice(&self, range: Range<usize>) -> Option<Vec<u8>> {
        self.gather(range).map(Payload::into_vec)
    }

    /// Rows of `range` as a payload that the store's writer threads copy out of this
    /// capture, if it holds all of them.
    pub fn gather(&self, range: Range<usize>) -> Option<Payload> {
        if range.start < self.first_pos || range.end > self.first_pos + self.count {
            return None;
        }
        let (a, b) = (range.start - self.first_pos, range.end - self.first_pos);
        let ranges = layer_widths(&self.layout)
            .into_iter()
            .zip(&self.starts)
            .map(|(w, start)| start + a * w..start + b * w)
            .collect();
        Payload::gathered(Arc::clone(&self.data), ranges)
    }
}

/// Rows read from the context: the full-attention section and, for iSWA models, the
/// sliding-window section.
pub struct CapturedRows {
    pub base: Option<SectionRows>,
    pub swa: Option<SectionRows>,
    /// llama.cpp's `state_seq_get_data` (with the buffer it fills), in milliseconds.
    pub state_get_ms: f64,
    /// Parsing the state, and copying its rows into position order where they are not in
    /// order already (a wrapped sliding-window ring, transposed V), in milliseconds.
    pub parse_ms: f64,
    /// A hybrid memory's recurrent state at the capture, as a checkpoint blob (the
    /// capture's blob header, then the recurrent part llama.cpp wrote after the attention
    /// cells): the save keeps it as the state at the log's end without reading it again.
    /// The header names the scratch sequence, which no reader uses.
    pub recurrent: Option<Payload>,
}

/// Reads the rows of `positions` of the main sequence, whose token log is `tokens`. With
/// `swa_only`, only the sliding window section is read (the cheap per-page capture during
/// prefill). Where cells carry an ext, each must be the one its text token has: pages do
/// not store it, a restore writes it from the log.
pub fn capture(
    ctx: &mut Context<'_>,
    slot: Slot,
    (memory, tokens): (MemoryKind, &[TokenId]),
    positions: Range<usize>,
    swa_only: bool,
) -> Result<CapturedRows> {
    let started = Instant::now();
    ctx.share_range(slot.seq, slot.scratch, positions.start, positions.end);
    let what = if swa_only {
        KvCapture::SlidingWindowOnly
    } else {
        KvCapture::Full
    };
    let bytes = ctx.state_get(slot.scratch, what);
    ctx.release_seq(slot.scratch);
    let bytes = bytes?;
    let parse_started = Instant::now();
    let state_get_ms = (parse_started - started).as_secs_f64() * 1e3;
    let mut shape = KvLayout::shape_for(memory.n_swa(), memory.cell_ext());
    if swa_only {
        shape.sections = 1;
    }
    let bytes = Arc::new(bytes);
    let (state, attention_end) = parse_attention(&bytes, &shape, memory)?;
    let recurrent = match memory.recurrent() && !swa_only {
        true => {
            let header = 0..blob::SEQ_HEADER_BYTES;
            Payload::gathered(Arc::clone(&bytes), vec![header, attention_end..bytes.len()])
        }
        false => None,
    };
    let mut rows = Vec::new();
    for section in &state.sections {
        let layout = section.layout.clone().ok_or_else(|| {
            LiveError::internal(format!(
                "llama.cpp returned no cells for positions {positions:?}"
            ))
        })?;
        let exts = CellExts {
            kind: memory.cell_ext(),
            tokens,
        };
        check_exts(section, exts)?;
        rows.push(rows_in_position_order(section, layout, &bytes)?);
    }
    drop(state);
    let mut rows = rows.into_iter();
    let parse_ms = parse_started.elapsed().as_secs_f64() * 1e3;
    Ok(if swa_only {
        CapturedRows {
            base: None,
            swa: rows.next(),
            state_get_ms,
            parse_ms,
            recurrent,
        }
    } else {
        CapturedRows {
            base: rows.next(),
            swa: rows.next(),
            state_get_ms,
            parse_ms,
            recurrent,
        }
    })
}

/// Checks that every cell's ext is the one [`CellExts`] gives its position (the cell of a
/// text token of the log): else a restore from pages would not be this state.
fn check_exts(section: &Section<'_>, exts: CellExts<'_>) -> Result<()> {
    for cell in &section.cells {
        let want = exts
            .at(cell.pos.max(0) as usize)
            .map_err(LiveError::blob("reading llama.cpp's KV state"))?;
        if cell.ext != want {
            return Err(LiveError::internal(format!(
                "the cache cell at position {} carries another ext than its text token's",
                cell.pos
            )));
        }
    }
    Ok(())
}

/// The section's rows ordered by position (cells come in cache-slot order, and a
/// sliding-window cache is a ring). Positions must be contiguous. `state` is the buffer the
/// section was parsed from: where the rows already lie in order, they are used in place.
fn rows_in_position_order(
    section: &Section<'_>,
    layout: blob::SectionLayout,
    state: &Arc<Vec<u8>>,
) -> Result<SectionRows> {
    let mut order: Vec<usize> = (0..section.cells.len()).collect();
    order.sort_by_key(|&i| section.cells[i].pos);
    let Some(&first) = order.first() else {
        return Ok(SectionRows {
            starts: vec![0; layer_widths(&layout).len()],
            layout,
            first_pos: 0,
            count: 0,
            data: Arc::default(),
        });
    };
    let first_pos = section.cells[first].pos;
    for (k, &i) in order.iter().enumerate() {
        if section.cells[i].pos != first_pos + k as i32 {
            return Err(LiveError::internal(
                "the KV cells of the sequence are not contiguous in position",
            ));
        }
    }
    let count = order.len();
    let first_pos = first_pos.max(0) as usize;
    if let Some(starts) = rows_in_place(section, &layout, &order, state) {
        return Ok(SectionRows {
            layout,
            first_pos,
            count,
            data: Arc::clone(state),
            starts,
        });
    }
    // Runs of consecutive slots holding consecutive positions.
    let mut parts: Vec<(Vec<u8>, usize)> = Vec::new();
    let mut run_start = 0;
    for k in 1..=order.len() {
        if k == order.len() || order[k] != order[k - 1] + 1 {
            let cells = order[run_start]..order[k - 1] + 1;
            let rows = section
                .rows_for_cells(cells.clone())
                .map_err(LiveError::blob("reading llama.cpp's KV state"))?;
            parts.push((rows, cells.len()));
            run_start = k;
        }
    }
    let rows = if parts.len() == 1 {
        parts.pop().map(|(rows, _)| rows).unwrap_or_default()
    } else {
        let refs: Vec<(&[u8], usize)> = parts.iter().map(|(r, n)| (r.as_slice(), *n)).collect();
        concat_cells(&layout, &refs)
    };
    let starts = layer_widths(&layout)
        .iter()
        .scan(0, |offset, w| {
            let start = *offset;
            *offset += w * count;
            Some(start)
        })
        .collect();
    Ok(SectionRows {
        layout,
        first_pos,
        count,
        data: Arc::new(rows),
        starts,
    })
}

/// Where each layer's block of rows starts in `state`, when the cells of `order` are the
/// section's own cells in blob order (one run, no ring wrap) and every layer stores whole
/// rows per cell (V transposed, without flash attention, does not).
fn rows_in_place(
    section: &Section<'_>,
    layout: &blob::SectionLayout,
    order: &[usize],
    state: &[u8],
) -> Option<Vec<usize>> {
    let in_order = order.iter().enumerate().all(|(k, &i)| k == i);
    let plain_v = layout
        .v
        .iter()
        .all(|v| matches!(v, blob::VLayer::Plain { .. }));
    if !in_order || !plain_v {
        return None;
    }
    let widths = layer_widths(layout);
    let blocks: Vec<&[u8]> = section
        .k_data()
        .iter()
        .chain(section.v_data())
        .copied()
        .collect();
    if blocks.len() != widths.len() {
        return None;
    }
    let base = state.as_ptr() as usize;
    blocks
        .iter()
        .zip(widths)
        .map(|(block, w)| {
            // The parsed blocks borrow `state`: their offsets in it, checked.
            let start = (block.as_ptr() as usize).checked_sub(base)?;
            let whole = block.len() == w * order.len() && start + block.len() <= state.len();
            whole.then_some(start)
        })
        .collect()
}

/// One section to restore: the positions it holds and their rows, as consecutive chunks.
pub struct RestoreSection<'a> {
    pub first_pos: usize,
    pub count: usize,
    pub chunks: Vec<&'a [u8]>,
}

/// The stages of a restore, in milliseconds. Pages are read on several threads at once, so
/// `read_ms` is the wall time of reading *and* verifying them, and `verify_ms` the checksum
/// time summed over those threads (it can exceed the wall time it overlaps).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct RestorePhases {
    pub read_ms: f64,
    pub verify_ms: f64,
    /// Copying page rows into the state blob handed to llama.cpp.
    pub assemble_ms: f64,
    /// Emptying the cache and llama.cpp's `llama_state_seq_set_data` of that blob.
    pub load_ms: f64,
}

impl RestorePhases {
    /// Adds another restore's phases (a snapshot restore followed by a prefix reuse).
    pub fn add(&mut self, other: &RestorePhases) {
        self.read_ms += other.read_ms;
        self.verify_ms += other.verify_ms;
        self.assemble_ms += other.assemble_ms;
        self.load_ms += other.load_ms;
    }
}

/// Assembles a blob from validated pages (its cells' ext from `exts`, and `recurrent`, a
/// hybrid memory's recurrent part, after them) and loads it into the slot's (empty)
/// sequence, adding the time of both steps to `phases`.
pub fn restore_into(
    ctx: &mut Context<'_>,
    slot: Slot,
    (layout, exts): (&KvLayout, CellExts<'_>),
    sections: &[RestoreSection<'_>],
    recurrent: &[u8],
    phases: &mut RestorePhases,
) -> Result<()> {
    let started = Instant::now();
    if sections.len() != layout.sections.len() {
        return Err(LiveError::internal(
            "restore sections do not match the layout",
        ));
    }
    let metas = sections
        .iter()
        .map(|s| exts.cells(slot.seq, s.first_pos, s.count))
        .collect::<std::result::Result<Vec<Vec<CellMeta>>, _>>()
        .map_err(LiveError::blob("assembling the KV state"))?;
    let parts: Vec<SectionParts<'_>> = sections
        .iter()
        .zip(&metas)
        .zip(&layout.sections)
        .map(|((s, cells), l)| SectionParts {
            layout: Some(l),
            n_stream: 1,
            stream: Some(0),
            cells,
            row_chunks: &s.chunks,
        })
        .collect();
    let blob = blob::assemble_blob(slot.seq, &parts)
        .map(|mut blob| {
            blob.extend_from_slice(recurrent);
            blob
        })
        .map_err(LiveError::blob("assembling the KV state"));
    phases.assemble_ms += started.elapsed().as_secs_f64() * 1e3;
    load_blob(ctx, slot, &blob?, phases)
}

/// Loads an assembled blob into the slot's (emptied) sequence, adding the time to
/// `phases.load_ms`. A refused blob leaves the sequence empty.
pub fn load_blob(
    ctx: &mut Context<'_>,
    slot: Slot,
    blob: &[u8],
    phases: &mut RestorePhases,
) -> Result<()> {
    empty(ctx, slot);
    set_state(ctx, slot, (blob, KvCapture::Full), phases)
}

/// `state_set` of the slot's sequence; a refused blob empties the slot. The time goes to
/// `phases.load_ms`.
fn set_state(
    ctx: &mut Context<'_>,
    slot: Slot,
    (blob, what): (&[u8], KvCapture),
    phases: &mut RestorePhases,
) -> Result<()> {
    let started = Instant::now();
    let loaded = ctx.state_set(slot.seq, blob, what);
    if loaded.is_err() {
        empty(ctx, slot);
    }
    phases.load_ms += started.elapsed().as_secs_f64() * 1e3;
    Ok(loaded?)
}

/// Loads a blob of the slot's positions `positions` (a later chunk of a restore) next to
/// what the slot's sequence already holds: `state_set` empties the sequence it loads into,
/// so the chunk goes into the scratch sequence, whose cells the slot's sequence then
/// shares (in a unified cache that only tags cells). A refused chunk empties the slot.
pub fn append_blob(
    ctx: &mut Context<'_>,
    slot: Slot,
    blob: &[u8],
    positions: Range<usize>,
    phases: &mut RestorePhases,
) -> Result<()> {
    let started = Instant::now();
    let loaded = ctx.state_set(slot.scratch, blob, KvCapture::Full);
    if loaded.is_ok() {
        ctx.share_range(slot.scratch, slot.seq, positions.start, positions.end);
    }
    ctx.release_seq(slot.scratch);
    if loaded.is_err() {
        empty(ctx, slot);
    }
    phases.load_ms += started.elapsed().as_secs_f64() * 1e3;
    Ok(loaded?)
}

/// A hybrid memory's recurrent part for no cells, as llama.cpp writes it after the attention
/// sections of a blob (its layer headers, no rows): what every chunk of a chunked hybrid
/// restore carries, so that a chunk loads attention cells only. Read from the (empty)
/// scratch sequence, so it always matches this context.
pub fn empty_recurrent_part(ctx: &mut Context<'_>, slot: Slot) -> Result<Vec<u8>> {
    if ctx.seq_len(slot.scratch) != 0 {
        return Err(LiveError::internal("the scratch sequence is not empty"));
    }
    let blob = ctx.state_get(slot.scratch, KvCapture::Checkpoint)?;
    match blob.get(blob::SEQ_HEADER_BYTES..blob::SEQ_HEADER_BYTES + 4) {
        Some(cells) if cells == 0u32.to_le_bytes() => Ok(blob[blob::SEQ_HEADER_BYTES..].to_vec()),
        _ => Err(LiveError::internal(
            "an empty sequence's recurrent state holds cells",
        )),
    }
}

/// Loads a checkpoint (a [`KvCapture::Checkpoint`] blob: the recurrent state alone) into the
/// slot's sequence after its attention cells are in place; llama.cpp's `PARTIAL_ONLY` read
/// replaces the sequence's recurrent state and leaves its attention cells as they are. A
/// refused checkpoint empties the slot. The time goes to `phases.load_ms`.
pub fn load_recurrent(
    ctx: &mut Context<'_>,
    slot: Slot,
    blob: &[u8],
    phases: &mut RestorePhases,
) -> Result<()> {
    set_state(ctx, slot, (blob, KvCapture::Checkpoint), phases)
}

/// Empties the slot's sequence; an exclusive slot empties the whole cache so the next cells
/// land from cache slot 0, as in a fresh context.
pub fn empty(ctx: &mut Context<'_>, slot: Slot) {
    if slot.exclusive {
        ctx.clear_all();
    } else {
        ctx.clear_seq(slot.seq);
    }
}

/// The attention sections of a state read from the context, and where they end. A hybrid
/// memory writes its recurrent part after them (the whole state, whatever range was asked
/// for), which pages do not hold: it is kept as a checkpoint instead.
fn parse_attention<'a>(
    bytes: &'a [u8],
    shape: &blob::BlobShape,
    memory: MemoryKind,
) -> Result<(blob::SeqState<'a>, usize)> {
    let parsed = match memory.recurrent() {
        true => blob::parse_attention(bytes, shape),
        false => blob::parse(bytes, shape).map(|state| (state, bytes.len())),
    };
    parsed.map_err(LiveError::blob("reading llama.cpp's KV state"))
}

/// The current context's KV layout, read by decoding one token into the scratch sequence.
pub fn probe_layout(
    ctx: &mut Context<'_>,
    slot: Slot,
    memory: MemoryKind,
    token: i32,
) -> Result<KvLayout> {
    ctx.decode(slot.scratch, &[token], 0, false, |_| {
        std::ops::ControlFlow::Continue(())
    })?;
    let bytes = ctx.state_get(slot.scratch, KvCapture::Full);
    ctx.clear_seq(slot.scratch);
    if slot.exclusive {
        ctx.clear_all();
    }
    let bytes = bytes?;
    let n_swa = memory.n_swa();
    let shape = KvLayout::shape_for(n_swa, memory.cell_ext());
    let (state, _) = parse_attention(&bytes, &shape, memory)?;
    Ok(KvLayout::from_state(&state, n_swa)?)
}
