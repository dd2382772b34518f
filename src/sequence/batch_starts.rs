//! Where a token log's decode batches started. llama.cpp's results depend on the shape of
//! the batch a token was decoded in (a token decoded alone and the same token inside a
//! batch round differently), so recomputing part of a session exactly means replaying the
//! batches the session was first decoded in. Sessions record them here, and a recompute
//! after a partial restore never lets a batch run across a recorded start.
//!
//! Stored as runs of consecutive start positions: a generated reply (each token decoded
//! alone) is one run, a prompt one start per batch (a whole number of pages).

use serde::{Deserialize, Serialize};

/// Sorted, disjoint runs `[first, len]` of positions at which a decode batch started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<[u32; 2]>", into = "Vec<[u32; 2]>")]
pub struct BatchStarts {
    runs: Vec<[u32; 2]>,
}

impl BatchStarts {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Records that a batch started at `pos`. Starts come in increasing order; a start at or
    /// below the last one rewrites the history from there (the cells were dropped).
    pub fn record(&mut self, pos: usize) {
        let Ok(pos) = u32::try_from(pos) else {
            return;
        };
        if self.contains(pos) {
            return;
        }
        self.truncate(pos as usize);
        match self.runs.last_mut() {
            Some([first, len]) if *first + *len == pos => *len += 1,
            _ => self.runs.push([pos, 1]),
        }
    }

    /// Forgets the starts at positions `len..` (the cache was cut back to `len` tokens).
    pub fn truncate(&mut self, len: usize) {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        while let Some([first, n]) = self.runs.last_mut() {
            if *first >= len {
                self.runs.pop();
            } else {
                *n = (*n).min(len - *first);
                break;
            }
        }
    }

    /// The first recorded start after `pos`, which a batch starting at `pos` must stop at.
    pub fn next_after(&self, pos: usize) -> Option<usize> {
        let next = u32::try_from(pos).ok()?.checked_add(1)?;
        let i = self
            .runs
            .partition_point(|[first, len]| first + len <= next);
        self.runs.get(i).map(|&[first, _]| first.max(next) as usize)
    }

    /// The schedule to replay a snapshot of `kv_len` tokens by: its starts below `kv_len`,
    /// and `kv_len` itself, where the next turn's decode started.
    pub fn for_replay(&self, kv_len: usize) -> Self {
        let mut starts = self.clone();
        starts.truncate(kv_len);
        starts.record(kv_len);
        starts
    }

    /// The last recorded start at or before `pos` (0 when none is).
    pub fn last_at_or_before(&self, pos: usize) -> usize {
        let pos = u32::try_from(pos).unwrap_or(u32::MAX);
        let i = self.runs.partition_point(|&[first, _]| first <= pos);
        match i.checked_sub(1).map(|i| self.runs[i]) {
            Some([first, len]) => first.saturating_add(len - 1).min(pos) as usize,
            None => 0,
        }
    }

    /// Whether a batch started at `pos`: a recompute from `pos` replays the recorded
    /// batches exactly.
    pub fn is_start(&self, pos: usize) -> bool {
        u32::try_from(pos).is_ok_and(|pos| self.contains(pos))
    }

    fn contains(&self, pos: u32) -> bool {
        let i = self.runs.partition_point(|[first, len]| first + len <= pos);
        self.runs.get(i).is_some_and(|&[first, _]| first <= pos)
    }
}

/// Runs read from a manifest: each non-empty, in increasing order, apart from the next.
impl TryFrom<Vec<[u32; 2]>> for BatchStarts {
    type Error = String;

    fn try_from(runs: Vec<[u32; 2]>) -> Result<Self, String> {
        let mut end = None;
        for &[first, len] in &runs {
            let Some(last) = first.checked_add(len).filter(|_| len > 0) else {
                return Err(format!("a bad run of batch starts [{first}, {len}]"));
            };
            if end.is_some_and(|end| first <= end) {
                return Err("batch starts out of order".into());
            }
            end = Some(last);
        }
        Ok(Self { runs })
    }
}

impl From<BatchStarts> for Vec<[u32; 2]> {
    fn from(starts: BatchStarts) -> Self {
        starts.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(positions: &[usize]) -> BatchStarts {
        let mut s = BatchStarts::default();
        for &p in positions {
            s.record(p);
        }
        s
    }

    #[test]
    fn consecutive_starts_merge_into_runs() {
        let s = starts(&[0, 256, 512, 599, 600, 601, 602]);
        assert_eq!(s.runs, vec![[0, 1], [256, 1], [512, 1], [599, 4]]);
        // Replayed starts are already there: recording them changes nothing.
        let mut again = s.clone();
        again.record(256);
        again.record(600);
        assert_eq!(again, s);
    }

    #[test]
    fn the_next_start_bounds_a_batch() {
        let s = starts(&[0, 256, 512, 599, 600, 601]);
        assert_eq!(s.next_after(0), Some(256));
        assert_eq!(s.next_after(256), Some(512));
        assert_eq!(s.next_after(300), Some(512));
        assert_eq!(s.next_after(512), Some(599));
        assert_eq!(s.next_after(599), Some(600));
        assert_eq!(s.next_after(600), Some(601));
        assert_eq!(s.next_after(601), None);
        assert_eq!(BatchStarts::default().next_after(5), None);
        let s = starts(&[0, 512, 800, 801, 802]);
        let back: Vec<usize> = [0, 256, 512, 799, 801, 900]
            .iter()
            .map(|&p| s.last_at_or_before(p))
            .collect();
        assert_eq!(back, [0, 0, 512, 512, 801, 802]);
        assert_eq!(BatchStarts::default().last_at_or_before(300), 0);
    }

    #[test]
    fn truncating_and_rewriting_history() {
        let mut s = starts(&[0, 10, 11, 12, 13]);
        s.truncate(12);
        assert_eq!(s.runs, vec![[0, 1], [10, 2]]);
        s.truncate(10);
        assert_eq!(s.runs, vec![[0, 1]]);
        let mut s = starts(&[0, 10, 11, 12, 13]);
        s.record(11);
        assert_eq!(s.runs, vec![[0, 1], [10, 4]], "a start already there");
        let mut s = starts(&[0, 10, 20]);
        s.record(15);
        assert_eq!(
            s.runs,
            vec![[0, 1], [10, 1], [15, 1]],
            "cells from 15 were redone"
        );
    }

    #[test]
    fn a_replay_stops_where_the_next_turn_started() {
        let s = starts(&[0, 256, 599, 600, 601, 602, 603]);
        let replay = s.for_replay(602);
        assert_eq!(replay.runs, vec![[0, 1], [256, 1], [599, 4]]);
        assert_eq!(replay.next_after(601), Some(602));
        assert_eq!(replay.next_after(602), None);
        assert_eq!(BatchStarts::default().for_replay(700).runs, vec![[700, 1]]);
    }

    #[test]
    fn manifest_runs_are_checked() {
        let parse = |json: &str| serde_json::from_str::<BatchStarts>(json);
        assert_eq!(
            parse("[[0,1],[256,1],[599,4]]").unwrap(),
            starts(&[0, 256, 599, 600, 601, 602])
        );
        for bad in [
            "[[5,0]]",
            "[[4294967295,2]]",
            "[[10,1],[5,1]]",
            "[[10,5],[12,1]]",
            "[[10,2],[12,1]]",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let json = serde_json::to_string(&starts(&[3, 4, 9])).unwrap();
        assert_eq!(json, "[[3,2],[9,1]]");
    }
}
