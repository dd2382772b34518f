//! The chat engine's hot-tier decisions, as pure functions of what it holds: which session
//! leaves the context when another needs its cells, and which are idle long enough to leave
//! on their own. The engine does the moving; these only choose, so they are tested without
//! a model.

use std::time::{Duration, Instant};

/// One hot session as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotSession {
    pub last_used: Instant,
    /// An unsaved conversation has no session to demote into; it lives only while active.
    pub saved: bool,
}

/// The session that leaves the context to free room: the least recently used one, never
/// `keep`, and the active one only when nothing else is hot.
pub fn demotion_victim(hot: &[HotSession], active: usize, keep: Option<usize>) -> Option<usize> {
    hot.iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != keep && (*i != active || hot.len() == 1))
        .min_by_key(|(_, s)| s.last_used)
        .map(|(i, _)| i)
}

/// A saved session other than the active one that has not been used for `idle`, if any.
pub fn idle_victim(
    hot: &[HotSession],
    active: usize,
    idle: Duration,
    now: Instant,
) -> Option<usize> {
    hot.iter()
        .enumerate()
        .find(|(i, s)| {
            *i != active && s.saved && now.saturating_duration_since(s.last_used) >= idle
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hot sessions as (seconds since last use, saved).
    type Ages = &'static [(u64, bool)];

    fn hot(ages_s: Ages, now: Instant) -> Vec<HotSession> {
        ages_s
            .iter()
            .map(|&(age, saved)| HotSession {
                last_used: now - Duration::from_secs(age),
                saved,
            })
            .collect()
    }

    #[test]
    fn the_least_recently_used_session_leaves_but_never_the_active_or_kept_one() {
        let now = Instant::now();
        // (ages in seconds, active, keep) -> victim
        let cases: &[(Ages, usize, Option<usize>, Option<usize>)] = &[
            (&[(30, true), (10, true), (20, true)], 1, None, Some(0)),
            // The oldest is active: the next oldest goes.
            (&[(30, true), (10, true), (20, true)], 0, None, Some(2)),
            // The oldest is kept (it is being switched to).
            (&[(30, true), (10, true), (20, true)], 1, Some(0), Some(2)),
            // Only the active one is hot: it leaves (a switch to a new session).
            (&[(5, true)], 0, None, Some(0)),
            // Active and kept cover everything: nothing can leave.
            (&[(5, true), (9, true)], 0, Some(1), None),
            (&[], 0, None, None),
        ];
        for (ages, active, keep, victim) in cases {
            assert_eq!(
                demotion_victim(&hot(ages, now), *active, *keep),
                *victim,
                "{ages:?} active {active} keep {keep:?}"
            );
        }
    }

    #[test]
    fn only_saved_inactive_sessions_idle_past_the_limit_leave_on_their_own() {
        let now = Instant::now();
        let idle = Duration::from_secs(60);
        let cases: &[(Ages, usize, Option<usize>)] = &[
            (&[(10, true), (90, true)], 0, Some(1)),
            // Idle, but active.
            (&[(90, true), (10, true)], 0, None),
            // Idle, but unsaved.
            (&[(10, true), (90, false)], 0, None),
            // Exactly at the limit counts.
            (&[(10, true), (60, true)], 0, Some(1)),
            (&[(10, true), (59, true)], 0, None),
        ];
        for (ages, active, victim) in cases {
            assert_eq!(
                idle_victim(&hot(ages, now), *active, idle, now),
                *victim,
                "{ages:?} active {active}"
            );
        }
    }
}
