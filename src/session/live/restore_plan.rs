//! Where a restore can end, decided from what the snapshot holds and what its reads found,
//! with no I/O: the furthest point whose rows are all intact. A unified cache can stop at
//! the snapshot's end (with the tail) or at a page boundary where a recorded decode batch
//! started (the recompute after it then replays the session's batches exactly); an iSWA
//! cache also needs the sliding-window rows of the `n_swa` positions before that point.

use std::collections::BTreeSet;

use crate::sequence::BatchStarts;

/// What the snapshot holds and which of its objects read back intact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInput {
    pub page_tokens: usize,
    /// Full-attention pages the snapshot names.
    pub pages: usize,
    /// Of those, how many from the first read back intact.
    pub intact_pages: usize,
    /// Cells of the tail record, when it read back intact and matches the log.
    pub tail_cells: Option<usize>,
    /// The sliding window (iSWA caches only): its size, and the pages whose window rows
    /// read back intact.
    pub window: Option<(usize, BTreeSet<usize>)>,
    /// Where the snapshot's decode batches started, its end included; empty when unknown
    /// (older manifests, and prefixes shared by content, which are compared to no
    /// recorded run): then every page boundary is a restore point.
    pub replay: BatchStarts,
}

/// Where the restore ends and which rows make it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePlan {
    /// Tokens restored.
    pub end: usize,
    /// Full-attention pages loaded, from the first.
    pub pages: usize,
    /// Cells taken from the tail record after those pages (0: no tail).
    pub tail_cells: usize,
    pub window: Option<WindowPlan>,
}

/// The sliding-window section of an iSWA restore: positions `start..end`, from pages'
/// window rows (each from cell `skip` of its page on) and then the tail's, after `stale`
/// cells of zero rows ([`WindowPlan::lay_out_as_run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowPlan {
    pub start: usize,
    /// `(page, skip)`, in order.
    pub pieces: Vec<(usize, usize)>,
    /// Cells before `start` the section begins with: positions that left the window but
    /// that an uninterrupted run still holds in its first slots.
    pub stale: usize,
}

impl WindowPlan {
    /// Begins the section where an uninterrupted run's cells begin after `keep` tokens
    /// ([`crate::kv::window::cells_start`]), so the window lands in the slots that run had.
    /// Attention skips the cells that left the window, so their rows are zeros. (A window
    /// that already starts before them, widened for a cut, is left as it is.)
    pub fn lay_out_as_run(&mut self, keep: usize, n_swa: usize, page: usize) {
        let first = crate::kv::window::cells_start(keep, n_swa, page);
        self.stale = self.start.saturating_sub(first);
    }

    /// The first position of the section.
    pub fn first_pos(&self) -> usize {
        self.start - self.stale
    }
}

impl RestorePlan {
    /// This plan with its window section begun where the cells of an uninterrupted run of
    /// the first `keep` tokens begin ([`WindowPlan::lay_out_as_run`]): `keep` is where the
    /// caller cuts the sequence after loading (the plan's end when it does not).
    pub fn laid_out_as_run(mut self, keep: usize, n_swa: u32, page: usize) -> Self {
        let keep = keep.min(self.end);
        if let Some(w) = self.window.as_mut() {
            w.lay_out_as_run(keep, n_swa as usize, page);
        }
        self
    }
}

/// Whether a tail record of `n_cells` cells completes a snapshot of `pages` pages to the
/// `kv_len` tokens of its log.
pub fn tail_matches(page_tokens: usize, pages: usize, n_cells: usize, kv_len: usize) -> bool {
    expected_tail_cells(page_tokens, pages, kv_len) == Some(n_cells)
}

/// The cells a tail record must hold to complete `pages` pages to `kv_len` tokens.
pub fn expected_tail_cells(page_tokens: usize, pages: usize, kv_len: usize) -> Option<usize> {
    kv_len.checked_sub(pages * page_tokens)
}

/// The furthest restore point `input` supports, or `None` when no point is usable.
pub fn plan_restore(input: &PlanInput) -> Option<RestorePlan> {
    let p = input.page_tokens;
    let full = input.intact_pages.min(input.pages);
    // The tail only completes an unbroken run of pages.
    let tail = input.tail_cells.filter(|_| full == input.pages);
    let candidates = tail
        .map(|t| full * p + t)
        .into_iter()
        .chain((1..=full).rev().map(|k| k * p))
        .filter(|&end| input.replay.is_empty() || input.replay.is_start(end));
    for end in candidates {
        let pages = (end / p).min(full);
        let tail_cells = end - pages * p;
        let window = match &input.window {
            None => None,
            Some((n_swa, intact)) => {
                let start = end.saturating_sub(*n_swa);
                let pieces: Vec<(usize, usize)> = (start / p..pages)
                    .map(|k| (k, (k * p).max(start) - k * p))
                    .collect();
                if pieces.iter().any(|(k, _)| !intact.contains(k)) {
                    continue;
                }
                Some(WindowPlan {
                    start,
                    pieces,
                    stale: 0,
                })
            }
        };
        return Some(RestorePlan {
            end,
            pages,
            tail_cells,
            window,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: usize = 4;

    fn input(pages: usize, intact: usize, tail: Option<usize>) -> PlanInput {
        PlanInput {
            page_tokens: P,
            pages,
            intact_pages: intact,
            tail_cells: tail,
            window: None,
            replay: BatchStarts::default(),
        }
    }

    fn replaying(mut i: PlanInput, starts: &[usize]) -> PlanInput {
        for &s in starts {
            i.replay.record(s);
        }
        i
    }

    fn windowed(mut i: PlanInput, n_swa: usize, intact: &[usize]) -> PlanInput {
        i.window = Some((n_swa, intact.iter().copied().collect()));
        i
    }

    fn plan(end: usize, pages: usize, tail_cells: usize) -> RestorePlan {
        RestorePlan {
            end,
            pages,
            tail_cells,
            window: None,
        }
    }

    fn with_window(mut p: RestorePlan, start: usize, pieces: &[(usize, usize)]) -> RestorePlan {
        p.window = Some(WindowPlan {
            start,
            pieces: pieces.to_vec(),
            stale: 0,
        });
        p
    }

    #[test]
    fn unified_caches_stop_at_the_end_or_the_last_intact_page() {
        let cases = [
            (
                "everything intact",
                input(3, 3, Some(2)),
                Some(plan(14, 3, 2)),
            ),
            ("no tail", input(3, 3, None), Some(plan(12, 3, 0))),
            (
                "a damaged page drops the tail",
                input(3, 1, Some(2)),
                Some(plan(4, 1, 0)),
            ),
            ("the first page damaged", input(3, 0, Some(2)), None),
            ("only a tail", input(0, 0, Some(3)), Some(plan(3, 0, 3))),
            ("nothing", input(0, 0, None), None),
        ];
        for (what, i, want) in cases {
            assert_eq!(plan_restore(&i), want, "{what}");
        }
    }

    #[test]
    fn a_window_begins_where_an_uninterrupted_runs_cells_do() {
        // Gemma 3's window (512) over 256-token pages, restored whole or cut back.
        let window = |end: usize| {
            let start = end.saturating_sub(512);
            with_window(plan(end, end / 256, end % 256), start, &[])
        };
        let cases = [
            (300, 300, 0, 0),
            (768, 768, 256, 0),
            (782, 782, 270, 256),
            (1024, 1024, 512, 256),
            (1300, 1300, 788, 768),
            (1300, 1290, 788, 768),
            (1300, 1100, 788, 512),
        ];
        for (end, keep, start, first) in cases {
            let w = window(end).laid_out_as_run(keep, 512, 256).window.unwrap();
            assert_eq!(
                (w.start, w.first_pos()),
                (start, first),
                "end {end}, keep {keep}"
            );
        }
    }

    #[test]
    fn sliding_window_caches_need_the_window_before_the_end() {
        let all = [0, 1, 2];
        let cases = [
            (
                "window inside the tail and the last page",
                windowed(input(3, 3, Some(2)), 5, &all),
                // Positions 9..14: cells 1..4 of page 2, then the tail.
                Some(with_window(plan(14, 3, 2), 9, &[(2, 1)])),
            ),
            (
                "a window wider than the log starts at 0",
                windowed(input(3, 3, Some(2)), 100, &all),
                Some(with_window(plan(14, 3, 2), 0, &[(0, 0), (1, 0), (2, 0)])),
            ),
            (
                "a missing window page moves the end back past it",
                windowed(input(3, 3, Some(2)), 5, &[0, 1]),
                // End 12 needs page 1 from cell 3 and page 2; end 8 needs pages 0 and 1.
                Some(with_window(plan(8, 2, 0), 3, &[(0, 3), (1, 0)])),
            ),
            (
                "no usable window at any boundary",
                windowed(input(3, 3, Some(2)), 5, &[]),
                None,
            ),
            (
                "a tail alone needs no page rows",
                windowed(input(0, 0, Some(3)), 5, &[]),
                Some(with_window(plan(3, 0, 3), 0, &[])),
            ),
        ];
        for (what, i, want) in cases {
            assert_eq!(plan_restore(&i), want, "{what}");
        }
    }

    #[test]
    fn a_partial_restore_stops_where_a_recorded_batch_started() {
        // Prompt batches of two pages ([0, 8), [8, 16)), then a reply decoded token by
        // token from 16; the log ends at 22.
        let starts = [0, 8, 16, 17, 18, 19, 20, 21, 22];
        let cases = [
            (
                "everything intact: the end",
                replaying(input(5, 5, Some(2)), &starts),
                Some(plan(22, 5, 2)),
            ),
            (
                "page 3 damaged: back from 12 to the batch start at 8",
                replaying(input(5, 3, Some(2)), &starts),
                Some(plan(8, 2, 0)),
            ),
            (
                "the tail damaged: the reply's page boundary at 20",
                replaying(input(5, 5, None), &starts),
                Some(plan(20, 5, 0)),
            ),
            (
                "only the first page intact: no start at 4",
                replaying(input(5, 1, Some(2)), &starts),
                None,
            ),
            (
                "unknown batches: any page boundary",
                input(5, 3, Some(2)),
                Some(plan(12, 3, 0)),
            ),
        ];
        for (what, i, want) in cases {
            assert_eq!(plan_restore(&i), want, "{what}");
        }
    }

    #[test]
    fn a_tail_matches_only_the_log_it_completes() {
        assert!(tail_matches(P, 3, 2, 14));
        assert!(!tail_matches(P, 3, 1, 14));
        assert!(!tail_matches(P, 2, 2, 14));
    }
}
