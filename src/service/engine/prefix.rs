//! Where a request's prompt can start from: the pure decision between a hot sequence (this
//! conversation's own, or another sharing a prefix) and the pages in the warm and cold tiers.

use crate::kv::MemoryKind;
pub use crate::sequence::{common_prefix, keep_is_valid};

/// A hot sequence as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotCandidate {
    /// Which conversation holds it (the caller's index).
    pub index: usize,
    /// The request's own conversation.
    pub own: bool,
    /// Tokens of its log that agree with the prompt.
    pub common: usize,
    /// Tokens of its log in the context.
    pub kv_len: usize,
    /// The lowest position it still holds cells for (llama.cpp's `seq_pos_min`; on a
    /// sliding-window model, cells that left the window are gone).
    pub pos_min: Option<usize>,
    /// For memory that cannot be cut (recurrent, hybrid): the last of its checkpoints at
    /// or before the prompt's usable prefix of it (0: none). See
    /// [`crate::sequence::Checkpoints`].
    pub checkpoint: usize,
}

/// Where the prompt's cached prefix comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixSource {
    /// Keep the first `keep` tokens of the own sequence, drop the rest. On memory that
    /// cannot be cut, `keep` short of the sequence's length is its checkpoint there.
    Own { keep: usize },
    /// Copy the first `keep` tokens' cells from another conversation's sequence; on memory
    /// that cannot be shared by range, with its checkpoint at `keep`.
    Share { from: usize, keep: usize },
    /// Restore whole pages from the warm or cold tier (or nothing: `stored` may be 0).
    Pages,
}

/// The longest usable prefix of a `prompt_len`-token prompt. At least the prompt's last token
/// is always decoded (its logits start the reply). `stored` is what the pages give. Ties go
/// to the hot tier (no I/O), and among hot sequences to the own one (no copy).
///
/// A memory that cannot be cut or shared by range (recurrent, hybrid) is reused as it
/// stands (the own sequence, when the prompt extends all of it) or up to a checkpoint.
pub fn plan(
    prompt_len: usize,
    candidates: &[HotCandidate],
    stored: usize,
    memory: MemoryKind,
) -> (PrefixSource, usize) {
    let limit = prompt_len.saturating_sub(1);
    let mut best: Option<(HotCandidate, usize)> = None;
    for c in candidates {
        let mut keep = c.common.min(c.kv_len).min(limit);
        let whole = c.own && keep == c.kv_len;
        if !memory.cuts() && !whole {
            keep = c.checkpoint.min(keep);
        }
        if keep == 0 || !keep_is_valid(keep, c.pos_min, memory.n_swa()) {
            continue;
        }
        let better = match &best {
            None => true,
            Some((b, k)) => keep > *k || (keep == *k && c.own && !b.own),
        };
        if better {
            best = Some((*c, keep));
        }
    }
    let stored = stored.min(limit);
    match best {
        Some((c, keep)) if keep >= stored => {
            if c.own {
                (PrefixSource::Own { keep }, keep)
            } else {
                (
                    PrefixSource::Share {
                        from: c.index,
                        keep,
                    },
                    keep,
                )
            }
        }
        _ => (PrefixSource::Pages, stored),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ATTENTION: MemoryKind = MemoryKind::Attention {
        n_swa: 0,
        cell_ext: crate::kv::CellExt::None,
    };

    fn swa(n_swa: u32) -> MemoryKind {
        MemoryKind::Attention {
            n_swa,
            cell_ext: crate::kv::CellExt::None,
        }
    }

    fn hot(index: usize, own: bool, common: usize, kv_len: usize, pos_min: usize) -> HotCandidate {
        HotCandidate {
            index,
            own,
            common,
            kv_len,
            pos_min: Some(pos_min),
            checkpoint: 0,
        }
    }

    #[test]
    fn common_prefix_stops_at_the_first_difference() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
    }

    #[test]
    fn the_own_sequence_is_cut_back_to_the_common_prefix() {
        let (src, n) = plan(100, &[hot(0, true, 60, 80, 0)], 0, ATTENTION);
        assert_eq!((src, n), (PrefixSource::Own { keep: 60 }, 60));
    }

    #[test]
    fn the_last_prompt_token_is_always_decoded() {
        let (src, n) = plan(50, &[hot(0, true, 50, 50, 0)], 512, ATTENTION);
        assert_eq!((src, n), (PrefixSource::Own { keep: 49 }, 49));
    }

    #[test]
    fn another_sequence_with_a_longer_prefix_is_shared() {
        let c = [hot(0, true, 10, 80, 0), hot(3, false, 40, 90, 0)];
        assert_eq!(
            plan(100, &c, 0, ATTENTION),
            (PrefixSource::Share { from: 3, keep: 40 }, 40)
        );
    }

    #[test]
    fn ties_prefer_the_own_sequence_then_the_hot_tier() {
        let c = [hot(3, false, 40, 90, 0), hot(0, true, 40, 80, 0)];
        assert_eq!(
            plan(100, &c, 0, ATTENTION),
            (PrefixSource::Own { keep: 40 }, 40)
        );
        assert_eq!(
            plan(100, &c, 40, ATTENTION),
            (PrefixSource::Own { keep: 40 }, 40)
        );
    }

    #[test]
    fn more_stored_pages_beat_a_short_hot_prefix() {
        let c = [hot(0, true, 10, 80, 0)];
        assert_eq!(plan(600, &c, 512, ATTENTION), (PrefixSource::Pages, 512));
    }

    #[test]
    fn nothing_cached_means_pages_with_nothing() {
        assert_eq!(plan(10, &[], 0, ATTENTION), (PrefixSource::Pages, 0));
    }

    #[test]
    fn a_cut_into_the_lost_part_of_a_sliding_window_is_refused() {
        // n_swa 512: the sequence holds cells from 700 on; keeping 1000 needs 488.. .
        let c = [hot(0, true, 1000, 1500, 700)];
        assert_eq!(plan(2000, &c, 768, swa(512)), (PrefixSource::Pages, 768));
        // Keeping 1300 needs cells from 788: they exist.
        let c = [hot(0, true, 1300, 1500, 700)];
        assert_eq!(
            plan(2000, &c, 768, swa(512)),
            (PrefixSource::Own { keep: 1300 }, 1300)
        );
    }

    #[test]
    fn keep_validity_on_sliding_window_models() {
        assert!(keep_is_valid(0, None, 512));
        assert!(keep_is_valid(100, None, 0));
        assert!(keep_is_valid(300, Some(0), 512));
        assert!(!keep_is_valid(300, Some(1), 512));
        assert!(keep_is_valid(1000, Some(488), 512));
        assert!(!keep_is_valid(1000, Some(489), 512));
        assert!(!keep_is_valid(10, None, 512));
    }

    #[test]
    fn recurrent_memory_is_reused_up_to_a_checkpoint_by_any_conversation() {
        for memory in [
            MemoryKind::Recurrent,
            MemoryKind::Hybrid {
                n_swa: 0,
                cell_ext: crate::kv::CellExt::None,
            },
        ] {
            let at = |c: HotCandidate, checkpoint| HotCandidate { checkpoint, ..c };
            // The own sequence parts from the prompt at 600: back to its checkpoint at 512.
            let c = [at(hot(0, true, 600, 800, 0), 512)];
            assert_eq!(
                plan(900, &c, 0, memory),
                (PrefixSource::Own { keep: 512 }, 512)
            );
            // Another conversation's checkpoint beats a shorter one of the own.
            let c = [
                at(hot(0, true, 300, 800, 0), 256),
                at(hot(2, false, 900, 1000, 0), 768),
            ];
            assert_eq!(
                plan(1000, &c, 0, memory),
                (PrefixSource::Share { from: 2, keep: 768 }, 768)
            );
            // More stored than any checkpoint gives: the store.
            assert_eq!(plan(1000, &c, 800, memory), (PrefixSource::Pages, 800));
        }
    }

    #[test]
    fn recurrent_memory_without_checkpoints_is_reused_only_whole_and_only_by_its_own() {
        for memory in [
            MemoryKind::Recurrent,
            MemoryKind::Hybrid {
                n_swa: 0,
                cell_ext: crate::kv::CellExt::None,
            },
        ] {
            // The prompt extends the whole sequence: kept as it stands.
            let c = [hot(0, true, 80, 80, 0)];
            assert_eq!(
                plan(100, &c, 0, memory),
                (PrefixSource::Own { keep: 80 }, 80)
            );
            // It diverges inside, or repeats it (the last token must be decoded again): a
            // cut the state cannot make, so everything is recomputed.
            let c = [hot(0, true, 60, 80, 0)];
            assert_eq!(plan(100, &c, 0, memory), (PrefixSource::Pages, 0));
            let c = [hot(0, true, 80, 80, 0)];
            assert_eq!(plan(80, &c, 0, memory), (PrefixSource::Pages, 0));
            // Another conversation's state is never copied, even whole (no checkpoint).
            let c = [hot(3, false, 80, 80, 0)];
            assert_eq!(plan(100, &c, 0, memory), (PrefixSource::Pages, 0));
        }
    }
}
