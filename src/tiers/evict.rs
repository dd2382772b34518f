//! What each tier drops, in one place: the hot tier (the context's cells), the warm tier
//! (RAM) and the cold tier (the disk). These are pure functions of what the tier holds; the
//! engine thread and the warm pool do the moving, so "how does kvrun decide what to drop"
//! has one answer, table-tested here without a model.
//!
//! - Hot: [`coolest`] leaves when another conversation needs cells; [`idle_victims`] leave
//!   after the hot-idle timeout.
//! - Warm: [`warm_overflow`] leave when a new page needs RAM; [`warm_idle`] after the
//!   warm-idle timeout.
//! - Cold: [`next_victim`] is collected while the store is over its budget.

use std::time::{Duration, Instant};

// ---- Hot: the context's cells ----

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

// ---- Warm: RAM ----

/// The pages that leave RAM so that `incoming` bytes fit under `budget`: the least recently
/// used first (`oldest_first` lists (page, bytes) from the oldest). Pages are immutable
/// copies of what the cold store holds, so dropping one loses nothing.
pub fn warm_overflow<K: Copy>(
    oldest_first: impl IntoIterator<Item = (K, u64)>,
    used: u64,
    incoming: u64,
    budget: u64,
) -> Vec<K> {
    let mut used = used;
    let mut out = Vec::new();
    for (page, bytes) in oldest_first {
        if used + incoming <= budget {
            break;
        }
        used = used.saturating_sub(bytes);
        out.push(page);
    }
    out
}

/// The pages not used for `idle` (the warm-idle timeout): they leave RAM on their own.
pub fn warm_idle<K: Copy>(
    pages: impl IntoIterator<Item = (K, Instant)>,
    idle: Duration,
    now: Instant,
) -> Vec<K> {
    pages
        .into_iter()
        .filter(|(_, used_at)| now.saturating_duration_since(*used_at) >= idle)
        .map(|(page, _)| page)
        .collect()
}

// ---- Cold: the disk ----

/// A session as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub named: bool,
    pub pinned: bool,
    /// A request is decoding in it.
    pub busy: bool,
    pub last_used_unix: u64,
}

/// The session to collect next: the least recently used unnamed one that is neither pinned
/// nor in use. Named sessions are never collected.
pub fn next_victim<'a>(candidates: &[Candidate<'a>]) -> Option<&'a str> {
    candidates
        .iter()
        .filter(|c| !c.named && !c.pinned && !c.busy)
        .min_by_key(|c| (c.last_used_unix, c.name))
        .map(|c| c.name)
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

    #[test]
    fn warm_pages_leave_oldest_first_until_the_newcomer_fits() {
        // (sizes oldest first, used, incoming, budget) -> pages that leave
        type Case = (&'static [u64], u64, u64, u64, &'static [usize]);
        let cases: &[Case] = &[
            (&[10, 20, 30], 60, 10, 100, &[]),
            (&[10, 20, 30], 60, 50, 100, &[0]),
            (&[10, 20, 30], 60, 60, 100, &[0, 1]),
            // Exactly at the budget fits.
            (&[10, 20, 30], 60, 40, 100, &[]),
            // Everything goes, and still it does not fit: the caller refuses the page.
            (&[10, 20, 30], 60, 200, 100, &[0, 1, 2]),
            (&[], 0, 10, 100, &[]),
        ];
        for (sizes, used, incoming, budget, out) in cases {
            let pages = sizes.iter().copied().enumerate();
            assert_eq!(
                warm_overflow(pages, *used, *incoming, *budget),
                *out,
                "{sizes:?} used {used} + {incoming} under {budget}"
            );
        }
    }

    #[test]
    fn warm_pages_unused_for_the_idle_time_leave() {
        let now = Instant::now();
        let idle = Duration::from_secs(60);
        let ages = [10u64, 60, 90, 59];
        let pages = ages
            .iter()
            .enumerate()
            .map(|(i, age)| (i, now - Duration::from_secs(*age)));
        assert_eq!(warm_idle(pages, idle, now), [1, 2]);
    }

    fn c(name: &str, named: bool, pinned: bool, busy: bool, t: u64) -> Candidate<'_> {
        Candidate {
            name,
            named,
            pinned,
            busy,
            last_used_unix: t,
        }
    }

    #[test]
    fn the_least_recently_used_unnamed_session_goes_first() {
        let list = [
            c("anon-b", false, false, false, 20),
            c("anon-a", false, false, false, 10),
            c("anon-c", false, false, false, 30),
        ];
        assert_eq!(next_victim(&list), Some("anon-a"));
    }

    #[test]
    fn named_pinned_and_busy_sessions_are_never_collected() {
        let list = [
            c("work", true, false, false, 1),
            c("anon-p", false, true, false, 2),
            c("anon-busy", false, false, true, 3),
        ];
        assert_eq!(next_victim(&list), None);
        let mut more = list.to_vec();
        more.push(c("anon-old", false, false, false, 99));
        assert_eq!(next_victim(&more), Some("anon-old"));
    }
}
