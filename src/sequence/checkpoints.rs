//! States of a recurrent or hybrid sequence at page boundaries, kept in RAM while its cells
//! are in the context: the hot tier's counterpart of llama.cpp's `--ctx-checkpoints`.
//!
//! A recurrent state holds every token seen and no earlier point, so such a sequence cannot
//! be cut back (llama.cpp's `seq_rm` refuses) or shared by range (`seq_cp` copies all of
//! it). A checkpoint is llama.cpp's partial state of the sequence right after a page
//! boundary (`LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY`: the recurrent state, plus a hybrid's
//! sliding-window rows; never the full-attention cells, which the sequence keeps). Loading
//! it and cutting the attention cells at the boundary gives exactly the state the
//! uninterrupted run had there. An agent's next turn that parts from the last one inside
//! its log (Claude Code moves a `<system-reminder>`), or a new conversation that shares a
//! system prompt, then starts from the last checkpoint before the parting point instead of
//! from nothing.
//!
//! Checkpoints are taken at page boundaries so that they name the same points as the
//! page store. At most [`MAX_CHECKPOINTS`] are kept per sequence; past that, the one whose
//! removal leaves the smallest gap goes, so the kept points thin out towards the start of
//! the log (agents part near the end; conversations sharing a system prompt part further
//! back).

use std::sync::Arc;

/// Checkpoints kept per sequence. Each is one recurrent state (kilobytes on the tiny test
/// models; tens of megabytes on a 9B hybrid), so this bounds a conversation's extra RAM.
pub const MAX_CHECKPOINTS: usize = 8;

/// llama.cpp's partial state of a sequence after its first `pos` tokens.
#[derive(Clone)]
pub struct Checkpoint {
    pub pos: usize,
    pub bytes: Arc<[u8]>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Checkpoint({} tokens, {} bytes)",
            self.pos,
            self.bytes.len()
        )
    }
}

/// A sequence's checkpoints, in increasing position, all within its cached cells.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    kept: Vec<Checkpoint>,
}

impl Checkpoints {
    /// Keeps the state after the first `pos` tokens (a later one at `pos` replaces it).
    /// Checkpoints past `pos` describe cells that were dropped, so they go.
    pub fn record(&mut self, pos: usize, bytes: impl Into<Arc<[u8]>>) {
        self.truncate(pos.saturating_sub(1));
        self.kept.push(Checkpoint {
            pos,
            bytes: bytes.into(),
        });
        thin(&mut self.kept, |c| c.pos);
    }

    /// The last checkpoint at or before `pos`.
    pub fn at_or_before(&self, pos: usize) -> Option<&Checkpoint> {
        self.kept.iter().rev().find(|c| c.pos <= pos)
    }

    /// Drops the checkpoints past `pos` (the cells after it were dropped, or the log
    /// changed there).
    pub fn truncate(&mut self, pos: usize) {
        self.kept.retain(|c| c.pos <= pos);
    }

    pub fn clear(&mut self) {
        self.kept.clear();
    }

    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.kept.iter().map(|c| c.pos)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Checkpoint> {
        self.kept.iter()
    }

    /// RAM the checkpoints hold.
    pub fn bytes(&self) -> usize {
        self.kept.iter().map(|c| c.bytes.len()).sum()
    }
}

/// Drops checkpoints from `kept` (in increasing `pos`) until at most [`MAX_CHECKPOINTS`]
/// are left: each time the one (never the newest) whose removal leaves the smallest gap
/// between its neighbours (the start of the log counts as one), the older on a tie. The
/// saved checkpoints ([`crate::session::manifest::SessionManifest::checkpoints`]) are
/// thinned the same way.
pub fn thin<T>(kept: &mut Vec<T>, pos: impl Fn(&T) -> usize) {
    while kept.len() > MAX_CHECKPOINTS {
        let gone = (0..kept.len() - 1)
            .min_by_key(|&i| {
                let before = if i == 0 { 0 } else { pos(&kept[i - 1]) };
                pos(&kept[i + 1]) - before
            })
            .unwrap_or(0);
        kept.remove(gone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after_pages(n: usize) -> Checkpoints {
        let mut c = Checkpoints::default();
        for page in 1..=n {
            c.record(page * 256, vec![page as u8]);
        }
        c
    }

    fn pages(c: &Checkpoints) -> Vec<usize> {
        c.positions().map(|p| p / 256).collect()
    }

    #[test]
    fn the_latest_checkpoint_at_or_before_a_position_is_found() {
        let c = after_pages(3);
        assert_eq!(c.at_or_before(255).map(|c| c.pos), None);
        assert_eq!(c.at_or_before(256).map(|c| c.pos), Some(256));
        assert_eq!(c.at_or_before(700).map(|c| c.pos), Some(512));
        assert_eq!(c.at_or_before(10_000).map(|c| c.pos), Some(768));
        assert_eq!(c.bytes(), 3);
    }

    #[test]
    fn past_the_bound_the_kept_points_thin_out_towards_the_start() {
        let c = after_pages(40);
        assert_eq!(c.positions().count(), MAX_CHECKPOINTS);
        let kept = pages(&c);
        // The newest two pages are kept, and the rest spread back towards the start.
        assert_eq!(kept[kept.len() - 2..], [39, 40]);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "{kept:?}");
        assert!(kept[0] <= 10, "{kept:?}");
    }

    #[test]
    fn a_checkpoint_past_a_recorded_point_is_dropped() {
        let mut c = after_pages(4);
        c.record(512, vec![9]);
        assert_eq!(pages(&c), [1, 2]);
        assert_eq!(&*c.at_or_before(600).unwrap().bytes, &[9]);
        c.truncate(300);
        assert_eq!(pages(&c), [1]);
        c.clear();
        assert!(c.at_or_before(usize::MAX).is_none());
    }
}
