//! A synthetic KV cache whose writer mirrors llama.cpp's `llama_kv_cache::state_write` loop (cell
//! ranges, per-range tensor reads, transposed V reads at `(range.first + j * kv_size) * el_size`)
//! line for line, so the codec is tested against what llama.cpp would emit, not against itself.

use std::ops::Range;

use super::rows::{assemble_blob, write_blob_header, SectionParts};
use super::{BlobShape, KLayer, SectionLayout, SeqState, VLayer, CELL_EXT_BYTES};

/// A section of `n_layer` f16 layers whose K and V rows (plain, not transposed) are
/// `k_row` and `v_row` bytes.
pub(crate) fn plain_layout(n_layer: u32, k_row: u64, v_row: u64) -> SectionLayout {
    SectionLayout {
        v_trans: false,
        n_layer,
        n_rot_k: 0,
        n_rot_v: 0,
        k: (0..n_layer)
            .map(|_| KLayer {
                type_id: 1,
                row_size: k_row,
            })
            .collect(),
        v: (0..n_layer)
            .map(|_| VLayer::Plain {
                type_id: 1,
                row_size: v_row,
            })
            .collect(),
    }
}

/// splitmix64: deterministic, dependency-free randomness (also drives the parsers'
/// property tests in `store` and `session`).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub(super) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// A random mutation of `bytes`: bit flips, a byte overwritten, a cut, an insertion,
    /// a range zeroed or duplicated. Never the identity (`bytes` non-empty).
    pub(crate) fn mutate(&mut self, bytes: &[u8]) -> Vec<u8> {
        loop {
            let mut out = bytes.to_vec();
            let at = self.below(out.len() as u64 + 1) as usize;
            match self.below(6) {
                0 if at < out.len() => out[at] ^= 1 << self.below(8),
                1 if at < out.len() => out[at] = self.next() as u8,
                2 => out.truncate(at),
                3 => {
                    let n = 1 + self.below(16) as usize;
                    let junk: Vec<u8> = (0..n).map(|_| self.next() as u8).collect();
                    out.splice(at..at, junk);
                }
                4 => {
                    let end = (at + 1 + self.below(64) as usize).min(out.len());
                    out[at.min(end)..end].fill(0);
                }
                _ => {
                    let end = (at + 1 + self.below(64) as usize).min(out.len());
                    let copy = out[at.min(end)..end].to_vec();
                    out.splice(at..at, copy);
                }
            }
            if out != bytes {
                return out;
            }
        }
    }
}

/// Runs `case` with a fresh seed until `budget` has passed (at least 100 times): the
/// property tests' time bound, so they cost the same on any machine.
pub(crate) fn for_a_while(budget: std::time::Duration, mut case: impl FnMut(&mut Rng)) {
    let started = std::time::Instant::now();
    let mut rng = Rng(0x5eed);
    let mut runs = 0;
    while runs < 100 || started.elapsed() < budget {
        case(&mut rng);
        runs += 1;
    }
}

pub(super) const F32: i32 = 0;
pub(super) const F16: i32 = 1;
pub(super) const Q8_0: i32 = 8;

/// `(ggml_type_size, ggml_row_size(type, n))` for the types the tests use.
pub(super) fn type_sizes(t: i32, n: u32) -> (u32, u64) {
    match t {
        F32 => (4, 4 * u64::from(n)),
        F16 => (2, 2 * u64::from(n)),
        Q8_0 => (34, 34 * u64::from(n) / 32),
        _ => unreachable!(),
    }
}

pub(super) struct LayerSpec {
    pub(super) k_type: i32,
    pub(super) n_embd_k: u32,
    pub(super) v: Option<(i32, u32)>, // (type, n_embd_v_gqa); None: the layer has no V tensor
}

pub(super) struct Cell {
    pub(super) pos: i32,
    pub(super) seqs: Vec<i32>,
    pub(super) ext: [u8; 12],
}

/// A fake `llama_kv_cache`: cells per stream and one K (and maybe V) tensor per layer and stream.
pub(super) struct Cache {
    pub(super) n_stream: u32,
    pub(super) kv_size: usize,
    pub(super) v_trans: bool,
    pub(super) n_rot_k: u32,
    pub(super) n_rot_v: u32,
    pub(super) has_ext: bool,
    pub(super) layers: Vec<LayerSpec>,
    pub(super) cells: Vec<Vec<Option<Cell>>>,
    pub(super) k: Vec<Vec<Vec<u8>>>, // [layer][stream]: kv_size rows
    pub(super) v: Vec<Vec<Vec<u8>>>, // [layer][stream]: kv_size rows, or n_embd x kv_size elements
}

impl Cache {
    pub(super) fn random(rng: &mut Rng, has_ext: bool, v_trans: bool) -> Cache {
        let n_stream = [1, 1, 1, 3][rng.below(4) as usize];
        let kv_size = 1 + rng.below(40) as usize;
        let n_layer = 1 + rng.below(4) as usize;
        let layers: Vec<LayerSpec> = (0..n_layer)
            .map(|_| {
                let t = [F16, F32, Q8_0][rng.below(3) as usize];
                let n = [32, 64, 96][rng.below(3) as usize];
                let v = (!rng.chance(25)).then(|| {
                    (
                        [F16, F32, Q8_0][rng.below(3) as usize],
                        [32, 64][rng.below(2) as usize],
                    )
                });
                LayerSpec {
                    k_type: t,
                    n_embd_k: n,
                    v,
                }
            })
            .collect();
        let fill = if rng.chance(10) {
            0
        } else {
            30 + rng.below(71)
        };
        let cells = (0..n_stream)
            .map(|s| {
                (0..kv_size)
                    .map(|_| {
                        if !rng.chance(fill) {
                            return None;
                        }
                        // With several streams a sequence lives in its own stream (seq_to_stream).
                        let seqs: Vec<i32> = if n_stream > 1 {
                            vec![s as i32]
                        } else {
                            (0..4).filter(|_| rng.chance(60)).collect()
                        };
                        let ext: [u8; 12] = rng.bytes(12).try_into().unwrap();
                        Some(Cell {
                            pos: rng.next() as i32,
                            seqs,
                            ext,
                        })
                    })
                    .collect()
            })
            .collect();
        let mut k = Vec::new();
        let mut v = Vec::new();
        for l in &layers {
            let row = type_sizes(l.k_type, l.n_embd_k).1 as usize;
            k.push((0..n_stream).map(|_| rng.bytes(kv_size * row)).collect());
            let vsz = l.v.map_or(0, |(t, n)| {
                let (el, row) = type_sizes(t, n);
                if v_trans {
                    n as usize * kv_size * el as usize
                } else {
                    kv_size * row as usize
                }
            });
            v.push((0..n_stream).map(|_| rng.bytes(vsz)).collect());
        }
        Cache {
            n_stream,
            kv_size,
            v_trans,
            n_rot_k: rng.below(2) as u32 * 64,
            n_rot_v: 0,
            has_ext,
            layers,
            cells,
            k,
            v,
        }
    }

    pub(super) fn v_layers(&self) -> u32 {
        self.layers.iter().filter(|l| l.v.is_some()).count() as u32
    }

    /// Mirrors `state_write` + `state_write_meta` + `state_write_data` for one sequence.
    /// Returns the cache indices of the written cells, in blob order, and records header-field
    /// offsets (offset, width) in `marks` for the fuzz tests.
    pub(super) fn write(
        &self,
        seq_id: i32,
        out: &mut Vec<u8>,
        marks: &mut Vec<(usize, usize)>,
    ) -> Vec<(u32, usize)> {
        let mut put = |out: &mut Vec<u8>, b: &[u8], mark: bool| {
            if mark {
                marks.push((out.len(), b.len()));
            }
            out.extend_from_slice(b);
        };
        let mut written = Vec::new();
        put(out, &self.n_stream.to_le_bytes(), true);
        for s in 0..self.n_stream as usize {
            let cells = &self.cells[s];
            let has = |i: usize| cells[i].as_ref().is_some_and(|c| c.seqs.contains(&seq_id));
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            let mut begin = cells.len();
            let mut cell_count = 0u32;
            for i in 0..cells.len() {
                if has(i) {
                    cell_count += 1;
                    if begin == cells.len() {
                        begin = i;
                    }
                } else if begin != cells.len() {
                    ranges.push((begin, i));
                    begin = cells.len();
                }
            }
            if begin != cells.len() {
                ranges.push((begin, cells.len()));
            }
            put(out, &cell_count.to_le_bytes(), true);
            if cell_count == 0 {
                continue;
            }
            for &(a, b) in &ranges {
                for (i, c) in cells.iter().enumerate().take(b).skip(a) {
                    let c = c.as_ref().unwrap();
                    put(out, &c.pos.to_le_bytes(), false);
                    put(out, &1u32.to_le_bytes(), true);
                    if self.has_ext {
                        put(out, &c.ext, false);
                    }
                    put(out, &seq_id.to_le_bytes(), true);
                    written.push((s as u32, i));
                }
            }
            let n_layer = self.layers.len() as u32;
            for x in [u32::from(self.v_trans), n_layer, self.n_rot_k, self.n_rot_v] {
                put(out, &x.to_le_bytes(), true);
            }
            for (l, spec) in self.layers.iter().enumerate() {
                let row = type_sizes(spec.k_type, spec.n_embd_k).1;
                put(out, &spec.k_type.to_le_bytes(), true);
                put(out, &row.to_le_bytes(), true);
                for &(a, b) in &ranges {
                    let row = row as usize;
                    put(out, &self.k[l][s][a * row..a * row + (b - a) * row], false);
                }
            }
            for (l, spec) in self.layers.iter().enumerate() {
                let Some((t, n_embd)) = spec.v else { continue };
                let (el, row) = type_sizes(t, n_embd);
                put(out, &t.to_le_bytes(), true);
                if !self.v_trans {
                    put(out, &row.to_le_bytes(), true);
                    for &(a, b) in &ranges {
                        let row = row as usize;
                        put(out, &self.v[l][s][a * row..a * row + (b - a) * row], false);
                    }
                } else {
                    put(out, &el.to_le_bytes(), true);
                    put(out, &n_embd.to_le_bytes(), true);
                    let el = el as usize;
                    for j in 0..n_embd as usize {
                        for &(a, b) in &ranges {
                            let src = (a + j * self.kv_size) * el;
                            put(out, &self.v[l][s][src..src + (b - a) * el], false);
                        }
                    }
                }
            }
        }
        written
    }

    /// The page row encoding of one cell, computed straight from the tensors.
    pub(super) fn expected_row(&self, s: usize, i: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for (l, spec) in self.layers.iter().enumerate() {
            let row = type_sizes(spec.k_type, spec.n_embd_k).1 as usize;
            out.extend_from_slice(&self.k[l][s][i * row..(i + 1) * row]);
        }
        for (l, spec) in self.layers.iter().enumerate() {
            let Some((t, n_embd)) = spec.v else { continue };
            let (el, row) = type_sizes(t, n_embd);
            let (el, row) = (el as usize, row as usize);
            if self.v_trans {
                for j in 0..n_embd as usize {
                    let at = (i + j * self.kv_size) * el;
                    out.extend_from_slice(&self.v[l][s][at..at + el]);
                }
            } else {
                out.extend_from_slice(&self.v[l][s][i * row..(i + 1) * row]);
            }
        }
        out
    }
}

/// A whole blob over some caches (unified: one; iSWA: base then SWA) and the model facts for it.
pub(super) struct Fixture {
    pub(super) caches: Vec<Cache>,
    pub(super) blob: Vec<u8>,
    pub(super) marks: Vec<(usize, usize)>,
    pub(super) written: Vec<Vec<(u32, usize)>>,
    pub(super) shape: BlobShape,
}

pub(super) fn fixture(rng: &mut Rng, n_sections: usize) -> Fixture {
    let seq_id = rng.below(3) as i32;
    let has_ext = rng.chance(30);
    let v_trans = rng.chance(50);
    let caches: Vec<Cache> = (0..n_sections)
        .map(|_| Cache::random(rng, has_ext, v_trans))
        .collect();
    // Multi-stream caches hold sequence s in stream s; keep the target inside the stream count.
    let seq_id = caches.iter().fold(seq_id, |s, c| {
        if c.n_stream > 1 {
            s % c.n_stream as i32
        } else {
            s
        }
    });
    let mut blob = Vec::new();
    let mut marks = vec![(0, 4), (4, 4)];
    write_blob_header(seq_id, &mut blob);
    let written = caches
        .iter()
        .map(|c| c.write(seq_id, &mut blob, &mut marks))
        .collect();
    let all_v = caches.iter().all(|c| c.v_layers() == c.layers.len() as u32);
    let shape = BlobShape {
        cell_ext_bytes: if has_ext { CELL_EXT_BYTES } else { 0 },
        sections: n_sections as u32,
        v_layers_per_section: (!all_v || rng.chance(50))
            .then(|| caches.iter().map(Cache::v_layers).collect()),
    };
    Fixture {
        caches,
        blob,
        marks,
        written,
        shape,
    }
}

/// Random cut of `0..n` into consecutive (possibly empty) ranges.
pub(super) fn partition(rng: &mut Rng, n: usize) -> Vec<Range<usize>> {
    let mut cuts = vec![0, n];
    for _ in 0..rng.below(5) {
        cuts.push(rng.below(n as u64 + 1) as usize);
    }
    cuts.sort_unstable();
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// parse -> rows over a random partition -> assemble; returns the reassembled blob.
pub(super) fn reassemble(rng: &mut Rng, state: &SeqState<'_>) -> Vec<u8> {
    let chunks: Vec<Vec<Vec<u8>>> = state
        .sections
        .iter()
        .map(|s| {
            partition(rng, s.cells.len())
                .into_iter()
                .map(|r| s.rows_for_cells(r).unwrap())
                .collect()
        })
        .collect();
    let refs: Vec<Vec<&[u8]>> = chunks
        .iter()
        .map(|c| c.iter().map(Vec::as_slice).collect())
        .collect();
    let parts: Vec<SectionParts<'_>> = state
        .sections
        .iter()
        .zip(&refs)
        .map(|(s, r)| SectionParts {
            layout: s.layout.as_ref(),
            n_stream: s.n_stream,
            stream: s.stream,
            cells: &s.cells,
            row_chunks: r,
        })
        .collect();
    let blob = assemble_blob(state.seq_id, &parts).unwrap();
    assert_eq!(
        blob.capacity(),
        blob.len(),
        "assemble_blob reserves the exact size"
    );
    blob
}
