//! The hot tier's decisions, as pure functions of what the context holds: which
//! conversation leaves it when another needs cells, and which are idle long enough to leave
//! on their own. The engine does the moving; these only choose, so they are tested without
//! a model. (Which session leaves the cold tier is [`super::retention::next_victim`].)

use std::time::{Duration, Instant};

/// One open conversation as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    pub last_used: Instant,
    /// It holds cells in the context.
    pub hot: bool,
    /// A request is decoding in it: it cannot leave.
    pub busy: bool,
}

/// The conversation that leaves the context to free room: the least recently used idle
/// hot one, never `keep` (the one that needs the room).
pub fn coolest(open: &[Residency], keep: usize) -> Option<usize> {
    open.iter()
        .enumerate()
        .filter(|(i, r)| *i != keep && r.hot && !r.busy)
        .min_by_key(|(_, r)| r.last_used)
        .map(|(i, _)| i)
}

/// The hot conversations unused for `idle`: they leave the context on their own. With
/// `keep_latest`, the one used last stays (a chat's active conversation).
pub fn idle_victims(
    open: &[Residency],
    idle: Duration,
    now: Instant,
    keep_latest: bool,
) -> Vec<usize> {
    let newest = open
        .iter()
        .enumerate()
        .filter(|(_, r)| r.hot && keep_latest)
        .max_by_key(|(_, r)| r.last_used)
        .map(|(i, _)| i);
    open.iter()
        .enumerate()
        .filter(|&(i, r)| {
            Some(i) != newest
                && r.hot
                && !r.busy
                && now.saturating_duration_since(r.last_used) >= idle
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Conversations as (seconds since last use, hot, busy).
    type Ages = &'static [(u64, bool, bool)];

    fn open(ages_s: Ages, now: Instant) -> Vec<Residency> {
        ages_s
            .iter()
            .map(|&(age, hot, busy)| Residency {
                last_used: now - Duration::from_secs(age),
                hot,
                busy,
            })
            .collect()
    }

    #[test]
    fn the_least_recently_used_idle_hot_conversation_leaves_never_the_kept_one() {
        let now = Instant::now();
        // (ages, keep) -> victim
        let cases: &[(Ages, usize, Option<usize>)] = &[
            (
                &[(30, true, false), (10, true, false), (20, true, false)],
                1,
                Some(0),
            ),
            // The oldest needs the room.
            (
                &[(30, true, false), (10, true, false), (20, true, false)],
                0,
                Some(2),
            ),
            // The oldest is decoding, or not hot: the next oldest goes.
            (
                &[(30, true, true), (10, true, false), (20, true, false)],
                1,
                Some(2),
            ),
            (
                &[(30, false, false), (10, true, false), (20, true, false)],
                1,
                Some(2),
            ),
            // Nothing else is hot.
            (&[(5, true, false)], 0, None),
            (&[(5, true, false), (9, true, true)], 0, None),
            (&[], 0, None),
        ];
        for (ages, keep, victim) in cases {
            assert_eq!(
                coolest(&open(ages, now), *keep),
                *victim,
                "{ages:?} keep {keep}"
            );
        }
    }

    #[test]
    fn idle_hot_conversations_leave_on_their_own_except_the_latest_when_kept() {
        let now = Instant::now();
        let idle = Duration::from_secs(60);
        let cases: &[(Ages, &[usize])] = &[
            (&[(10, true, false), (90, true, false)], &[1]),
            // Idle, but used last (the others are not hot).
            (&[(90, true, false), (200, false, false)], &[]),
            // Idle, but decoding.
            (&[(10, true, false), (90, true, true)], &[]),
            // Exactly at the limit counts.
            (
                &[(10, true, false), (60, true, false), (70, true, false)],
                &[1, 2],
            ),
            (&[(10, true, false), (59, true, false)], &[]),
        ];
        for (ages, victims) in cases {
            assert_eq!(
                idle_victims(&open(ages, now), idle, now, true),
                *victims,
                "{ages:?}"
            );
        }
        // A server keeps none: its context may shrink once all are gone.
        let ages: Ages = &[(90, true, false), (200, true, false), (300, true, true)];
        assert_eq!(idle_victims(&open(ages, now), idle, now, false), [0, 1]);
    }
}
