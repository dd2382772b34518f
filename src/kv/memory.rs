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
//! memory or stored, and the rest is recomputed. Where the pages cannot hold the attention
//! cells (cells with an ext, a hybrid's sliding window), the state at the log's end is kept
//! whole, as one object (`session::live::state`).

/// The kind of memory a model's sequences live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Attention only: a unified cache (`n_swa == 0`) or iSWA (`n_swa > 0`). `cell_ext`:
    /// each cell carries 12 bytes more (`llama_kv_cell_ext`: M-RoPE's 2-D position, or the
    /// token PLE heads hash).
    Attention { n_swa: u32, cell_ext: bool },
    /// A recurrent state per sequence and no attention cache.
    Recurrent,
    /// Attention layers (a unified cache; `n_swa` and `cell_ext` as for
    /// [`MemoryKind::Attention`]) and recurrent layers.
    Hybrid { n_swa: u32, cell_ext: bool },
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
    /// The model ropes with M-RoPE (`LLAMA_ROPE_TYPE_MROPE`/`IMROPE`: the cache keeps each
    /// cell's 2-D position) or has PLE heads (the cache keeps each cell's token).
    pub cell_ext: bool,
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
    /// hybrid's beside its recurrent state, [`Self::recurrent`]). Not yet for cells with an
    /// ext: the pages do not carry it, so such a model's sessions keep their whole state
    /// instead. Nor for a hybrid's sliding window: pages of a window are kept in a section
    /// of their own, which llama.cpp's hybrid memory does not write.
    pub fn pages(self) -> bool {
        matches!(
            self,
            MemoryKind::Attention {
                cell_ext: false,
                ..
            } | MemoryKind::Hybrid {
                n_swa: 0,
                cell_ext: false,
            }
        )
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
            MemoryKind::Attention {
                cell_ext: false, ..
            } => None,
            MemoryKind::Attention { .. } => Some(
                "its cache cells carry M-RoPE positions, which kvrun's pages do not hold yet: \
                 sessions keep the token log and the whole state at its end, cut back where \
                 a prompt parts from the log",
            ),
            MemoryKind::Recurrent => Some(
                "its recurrent state cannot be cut into token pages: sessions keep the token \
                 log, the whole state at its end and checkpoints at page boundaries; a prompt \
                 that parts from a log starts from the last checkpoint before it",
            ),
            MemoryKind::Hybrid {
                n_swa: 0,
                cell_ext: false,
            } => None,
            MemoryKind::Hybrid { .. } => Some(
                "its attention cells carry M-RoPE positions or a sliding window, which \
                 kvrun's pages do not hold yet: sessions keep the token log, the whole state \
                 at its end and checkpoints at page boundaries; a prompt that parts from a \
                 log starts from the last checkpoint before it",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(recurrent: bool, hybrid: bool, n_swa: u32, cell_ext: bool) -> MemoryFacts {
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
            MemoryKind::of(facts(false, false, 0, false)),
            MemoryKind::of(facts(false, false, 512, false)),
        ] {
            assert!(
                kind.pages() && kind.cuts() && kind.shares_ranges() && !kind.recurrent(),
                "{kind:?}"
            );
            assert!(kind.unpaged_reason().is_none());
        }
        assert_eq!(MemoryKind::of(facts(false, false, 512, false)).n_swa(), 512);
    }

    #[test]
    fn cells_with_an_ext_are_cut_and_shared_in_memory_but_not_paged() {
        let kind = MemoryKind::of(facts(false, false, 0, true));
        assert!(kind.cuts() && kind.shares_ranges());
        assert!(!kind.pages() && kind.unpaged_reason().is_some());
    }

    #[test]
    fn recurrent_and_hybrid_memory_is_never_cut_or_shared_and_only_hybrid_attention_paged() {
        let hybrid = |n_swa, cell_ext| MemoryKind::Hybrid { n_swa, cell_ext };
        // llama.cpp reports a hybrid model as not recurrent; either flag alone is enough.
        // (facts, kind, paged)
        for (f, want, paged) in [
            (facts(true, false, 0, false), MemoryKind::Recurrent, false),
            (facts(false, true, 0, false), hybrid(0, false), true),
            (facts(false, true, 0, true), hybrid(0, true), false),
            (facts(true, true, 4096, false), hybrid(4096, false), false),
        ] {
            let kind = MemoryKind::of(f);
            assert_eq!(kind, want);
            assert!(kind.recurrent() && !kind.cuts() && !kind.shares_ranges());
            assert_eq!(kind.pages(), paged, "{kind:?}");
            assert_eq!(kind.n_swa(), 0);
            assert_eq!(kind.unpaged_reason().is_none(), paged, "{kind:?}");
        }
    }
}
