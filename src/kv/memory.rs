//! What a sequence's state is made of in llama.cpp's memory, and so what kvrun may do with
//! it. Every part of kvrun that pages, shares, cuts or restores a sequence asks this one
//! type; none guesses from the blob.
//!
//! The pinned llama.cpp has four memory kinds (`llama-memory-*.cpp`, `llama-kv-cache*.cpp`):
//! - a unified attention cache: one K/V row per token per layer;
//! - iSWA: a full-attention cache plus a sliding-window cache (a ring of the last `n_swa`
//!   positions);
//! - recurrent (Mamba, Mamba2, RWKV): one fixed-size state per sequence, holding every
//!   token seen so far and no earlier point;
//! - hybrid (Granite 4, LFM2, Qwen3.5, Falcon-H1, Nemotron-H, Jamba): an attention cache
//!   beside a recurrent state.
//!
//! Per-token pages describe attention rows only. A recurrent state cannot be cut at a
//! token (llama.cpp's `seq_rm` refuses), copying a range of it copies all of it, and its
//! bytes at token k are gone once token k+1 is decoded. So for the last two kinds kvrun
//! keeps the token log (the truth), the recurrent state at the log's end and at page
//! boundaries as checkpoints ([`crate::sequence::Checkpoints`],
//! `session::live::checkpoints`), and a hybrid's attention rows in pages like any
//! attention cache: a conversation is reused as it stands where its log is extended, else
//! from the last checkpoint before the prompt parts from it (with the pages before it), in
//! memory or stored, and the rest is recomputed. A hybrid's sliding-window attention is not
//! paged: its state at the log's end is kept whole, as one object (`session::live::state`).
//!
//! Cells may carry an ext (`llama_kv_cell_ext`: M-RoPE's 2-D position and the token), which
//! pages do not store: for a text token it follows from its position and the token log
//! ([`CellExt::of_text`]), so a restore writes it from the log and a capture checks that
//! every cell's ext is that one.

/// The kind of memory a model's sequences live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Attention only: a unified cache (`n_swa == 0`) or iSWA (`n_swa > 0`), whose cells
    /// carry `cell_ext`.
    Attention { n_swa: u32, cell_ext: CellExt },
    /// A recurrent state per sequence and no attention cache.
    Recurrent,
    /// Attention layers (a unified cache; `n_swa` and `cell_ext` as for
    /// [`MemoryKind::Attention`]) and recurrent layers.
    Hybrid { n_swa: u32, cell_ext: CellExt },
}

/// What each cache cell carries beside its position: llama.cpp writes a 12-byte
/// `llama_kv_cell_ext` (`i32 x, i32 y, i32 tok`) per cell of a model with M-RoPE or PLE
/// heads (`llama_kv_cache::has_cell_ext`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CellExt {
    #[default]
    None,
    /// PLE heads: the token (`x`, `y` zero).
    Token,
    /// M-RoPE (`LLAMA_ROPE_TYPE_MROPE`/`IMROPE`): the 2-D position and the token.
    Position2d,
}

impl CellExt {
    /// The ext llama.cpp keeps for text token `token` at `pos` (`None`: cells carry none).
    /// A text token's M-RoPE position is `[p, p, p, 0]` (`llama-batch.cpp`), and
    /// `apply_ubatch` takes `x` from its third component and `y` from its second.
    pub fn of_text(self, pos: i32, token: i32) -> Option<[u8; 12]> {
        let (x, y) = match self {
            CellExt::None => return None,
            CellExt::Token => (0, 0),
            CellExt::Position2d => (pos, pos),
        };
        let mut ext = [0u8; 12];
        ext[..4].copy_from_slice(&x.to_le_bytes());
        ext[4..8].copy_from_slice(&y.to_le_bytes());
        ext[8..].copy_from_slice(&token.to_le_bytes());
        Some(ext)
    }
}

/// What llama.cpp says about a loaded model, and what its metadata adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryFacts {
    /// `llama_model_is_recurrent`.
    pub recurrent: bool,
    /// `llama_model_is_hybrid`.
    pub hybrid: bool,
    /// The sliding window of the SWA layers (0 for none).
    pub n_swa: u32,
    /// What the cache keeps per cell: M-RoPE models each cell's 2-D position and token,
    /// models with PLE heads its token.
    pub cell_ext: CellExt,
}

impl MemoryKind {
    pub fn of(facts: MemoryFacts) -> Self {
        if facts.hybrid {
            MemoryKind::Hybrid {
                n_swa: facts.n_swa,
                cell_ext: facts.cell_ext,
            }
        } else if facts.recurrent {
            MemoryKind::Recurrent
        } else {
            MemoryKind::Attention {
                n_swa: facts.n_swa,
                cell_ext: facts.cell_ext,
            }
        }
    }

    /// Whether a sequence's attention rows are cut into pages, stored and reassembled (a
    /// hybrid's beside its recurrent state, [`Self::recurrent`]). Not yet for a hybrid's
    /// sliding window: pages of a window are kept in a section of their own, which
    /// llama.cpp's hybrid memory does not write.
    pub fn pages(self) -> bool {
        matches!(
            self,
            MemoryKind::Attention { .. } | MemoryKind::Hybrid { n_swa: 0, .. }
        )
    }

    /// What the attention cells carry beside their position.
    pub fn cell_ext(self) -> CellExt {
        match self {
            MemoryKind::Attention { cell_ext, .. } | MemoryKind::Hybrid { cell_ext, .. } => {
                cell_ext
            }
            MemoryKind::Recurrent => CellExt::None,
        }
    }

    /// Whether a sequence's state has a part that is not per token (recurrent and hybrid
    /// memory): kept at the log's end and at page boundaries, never cut or shared by range.
    pub fn recurrent(self) -> bool {
        matches!(self, MemoryKind::Recurrent | MemoryKind::Hybrid { .. })
    }

    /// Whether a sequence can be cut back to any earlier token (llama.cpp's `seq_rm` with a
    /// start position). A recurrent state can only be dropped whole.
    pub fn cuts(self) -> bool {
        matches!(self, MemoryKind::Attention { .. })
    }

    /// Whether prompt batches may span several pages ([`crate::llama::batch_span`]): only
    /// a unified attention cache, where every page boundary can be cut to and recomputed
    /// from a batch start. Recurrent and hybrid memory checkpoint at each page boundary.
    /// On a sliding-window cache, two-page batches were tried on the default model: a
    /// restored session's next turn then differed from the uninterrupted run from its
    /// first token, so iSWA keeps one-page batches (which it measured no faster without).
    pub fn wide_batches(self) -> bool {
        matches!(self, MemoryKind::Attention { n_swa: 0, .. })
    }

    /// Whether another sequence's first tokens can be copied into a sequence (`seq_cp` of a
    /// range). A recurrent `seq_cp` ignores the range and copies the whole state.
    pub fn shares_ranges(self) -> bool {
        self.cuts()
    }

    /// The sliding window of the attention cache (0 for none, and for kinds kvrun does not
    /// page).
    pub fn n_swa(self) -> u32 {
        match self {
            MemoryKind::Attention { n_swa, .. } => n_swa,
            _ => 0,
        }
    }

    /// A short name for logs, `kvrun models --json` and messages.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Attention { n_swa: 0, .. } => "attention",
            MemoryKind::Attention { .. } => "sliding-window",
            MemoryKind::Recurrent => "recurrent",
            MemoryKind::Hybrid { .. } => "hybrid",
        }
    }

    /// Why a conversation of this model is not paged, for the one log line that says so.
    pub fn unpaged_reason(self) -> Option<&'static str> {
        match self {
            MemoryKind::Attention { .. } | MemoryKind::Hybrid { n_swa: 0, .. } => None,
            MemoryKind::Recurrent => Some(
                "its recurrent state cannot be cut into token pages: sessions keep the token \
                 log, the whole state at its end and checkpoints at page boundaries; a prompt \
                 that parts from a log starts from the last checkpoint before it",
            ),
            MemoryKind::Hybrid { .. } => Some(
                "its attention keeps a sliding window, which kvrun's pages do not hold for a \
                 hybrid yet: sessions keep the token log, the whole state at its end and \
                 checkpoints at page boundaries; a prompt that parts from a log starts from \
                 the last checkpoint before it",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: CellExt = CellExt::Position2d;

    fn facts(recurrent: bool, hybrid: bool, n_swa: u32, cell_ext: CellExt) -> MemoryFacts {
        MemoryFacts {
            recurrent,
            hybrid,
            n_swa,
            cell_ext,
        }
    }

    #[test]
    fn attention_caches_are_paged_cut_and_shared() {
        for kind in [
            MemoryKind::of(facts(false, false, 0, CellExt::None)),
            MemoryKind::of(facts(false, false, 512, CellExt::None)),
            MemoryKind::of(facts(false, false, 0, M)),
        ] {
            assert!(
                kind.pages() && kind.cuts() && kind.shares_ranges() && !kind.recurrent(),
                "{kind:?}"
            );
            assert!(kind.unpaged_reason().is_none());
        }
        assert_eq!(MemoryKind::of(facts(false, false, 512, M)).n_swa(), 512);
        assert_eq!(MemoryKind::of(facts(false, false, 0, M)).cell_ext(), M);
    }

    #[test]
    fn recurrent_and_hybrid_memory_is_never_cut_or_shared_and_only_hybrid_attention_paged() {
        let hybrid = |n_swa, cell_ext| MemoryKind::Hybrid { n_swa, cell_ext };
        // llama.cpp reports a hybrid model as not recurrent; either flag alone is enough.
        // (facts, kind, paged)
        for (f, want, paged) in [
            (
                facts(true, false, 0, CellExt::None),
                MemoryKind::Recurrent,
                false,
            ),
            (
                facts(false, true, 0, CellExt::None),
                hybrid(0, CellExt::None),
                true,
            ),
            (facts(false, true, 0, M), hybrid(0, M), true),
            (
                facts(true, true, 4096, CellExt::None),
                hybrid(4096, CellExt::None),
                false,
            ),
        ] {
            let kind = MemoryKind::of(f);
            assert_eq!(kind, want);
            assert!(kind.recurrent() && !kind.cuts() && !kind.shares_ranges());
            assert_eq!(kind.pages(), paged, "{kind:?}");
            assert_eq!(kind.n_swa(), 0);
            assert_eq!(kind.unpaged_reason().is_none(), paged, "{kind:?}");
        }
    }

    #[test]
    fn a_text_cells_ext_is_its_position_twice_and_its_token() {
        assert_eq!(CellExt::None.of_text(7, 3), None);
        let ext = M.of_text(7, 300).unwrap();
        let word = |i: usize| i32::from_le_bytes(ext[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!((word(0), word(1), word(2)), (7, 7, 300));
        let ext = CellExt::Token.of_text(7, 300).unwrap();
        assert_eq!(ext[..8], [0; 8]);
    }
}
