//! Fair turns between models that do not fit the budget together.
//!
//! A loaded model keeps admitting requests until another model's request has waited
//! `bound` for it: then it closes (new requests to it wait), its replies under way finish,
//! it unloads (saving its conversations) and the waiting model loads. Waiting models take
//! their turns in the order of their oldest waiting request, and a waiter's time counts
//! from the current turn's start, so that every model that gets the budget keeps it for at
//! least `bound` while others wait. These are pure functions of the fleet's state; the
//! fleet ([`super::Fleet::acquire`]) acts on them.

use std::time::{Duration, Instant};

/// One model as the turn policy sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seat {
    /// Holds its charge against the budget (loading, loaded or unloading).
    pub loaded: bool,
    pub charge: u64,
    /// When its turn began (its load ended): set only while it is loaded and admitting.
    pub turn_since: Option<Instant>,
    /// When its oldest request not yet admitted began to wait (None: none waits).
    pub waiting_since: Option<Instant>,
    /// What a turn of it costs beside its requests: its last load and unload.
    pub swap_cost: Duration,
}

/// The fleet's state as the policy reads it.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    pub seats: &'a [Seat],
    pub budget: u64,
    /// How long a waiting model lets the loaded ones run before they close.
    pub bound: Duration,
    pub now: Instant,
}

impl Table<'_> {
    /// Waiting models that are not loaded, oldest waiter first: the order of their turns.
    fn queue(&self) -> Vec<(Instant, usize)> {
        let mut queue: Vec<(Instant, usize)> = self
            .seats
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.loaded)
            .filter_map(|(i, s)| s.waiting_since.map(|t| (t, i)))
            .collect();
        queue.sort();
        queue
    }

    fn used(&self) -> u64 {
        self.seats
            .iter()
            .filter(|s| s.loaded)
            .map(|s| s.charge)
            .sum()
    }

    /// The model whose turn is next: the one with the oldest waiting request.
    pub fn next(&self) -> Option<usize> {
        self.queue().first().map(|&(_, i)| i)
    }

    /// The loaded models that stop admitting requests now: the fewest, oldest turns first,
    /// whose leaving makes room for the next waiting model, once that model has waited
    /// `bound` since each of their turns began. Empty while it fits beside them, or
    /// before the bound.
    pub fn closed(&self) -> Vec<usize> {
        let Some(&(since, next)) = self.queue().first() else {
            return Vec::new();
        };
        let need = self.seats[next].charge;
        if need > self.budget {
            return Vec::new();
        }
        let mut used = self.used();
        if used + need <= self.budget {
            return Vec::new();
        }
        let mut turns: Vec<(Instant, usize)> = self
            .seats
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.turn_since.map(|t| (t, i)))
            .filter(|&(turn, _)| self.now.saturating_duration_since(since.max(turn)) >= self.bound)
            .collect();
        turns.sort();
        let mut closed = Vec::new();
        for (_, i) in turns {
            closed.push(i);
            used -= self.seats[i].charge;
            if used + need <= self.budget {
                closed.sort_unstable();
                return closed;
            }
        }
        Vec::new()
    }

    /// How long a request for `entry`, which was not admitted, should expect to wait: the
    /// current turn's rest, a turn (its swap and `bound`) for each model ahead of it, and
    /// its own swap.
    pub fn expected_wait(&self, entry: usize) -> Duration {
        let seat = &self.seats[entry];
        if !seat.loaded && self.used() + seat.charge <= self.budget {
            return seat.swap_cost;
        }
        let queue = self.queue();
        // A loaded (closed) model's request waits behind every waiting model.
        let mine = queue
            .iter()
            .position(|&(_, i)| i == entry)
            .unwrap_or(queue.len());
        let head_since = queue.first().map_or(self.now, |&(t, _)| t);
        let turn = self
            .seats
            .iter()
            .filter_map(|s| s.turn_since)
            .max()
            .map(|t| t.max(head_since));
        let rest = turn.map_or(Duration::ZERO, |t| {
            self.bound
                .saturating_sub(self.now.saturating_duration_since(t))
        });
        let ahead: Duration = queue[..mine]
            .iter()
            .map(|&(_, i)| self.seats[i].swap_cost + self.bound)
            .sum();
        rest + ahead + seat.swap_cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUND: Duration = Duration::from_secs(3);
    const SWAP: Duration = Duration::from_secs(1);

    /// A seat: charge, turn begun `turn` seconds ago (loaded), oldest waiter `wait` seconds
    /// ago.
    fn seat(charge: u64, turn: Option<u64>, wait: Option<u64>, now: Instant) -> Seat {
        let ago = |s: u64| now - Duration::from_secs(s);
        Seat {
            loaded: turn.is_some(),
            charge,
            turn_since: turn.map(ago),
            waiting_since: wait.map(ago),
            swap_cost: SWAP,
        }
    }

    /// Seats as (charge, turn begun seconds ago, oldest waiter seconds ago), a budget, and
    /// the models that close.
    type Case<'a> = (&'a [(u64, Option<u64>, Option<u64>)], u64, &'a [usize]);

    fn table(seats: &[Seat], budget: u64, now: Instant) -> Table<'_> {
        Table {
            seats,
            budget,
            bound: BOUND,
            now,
        }
    }

    #[test]
    fn a_busy_model_closes_once_another_has_waited_the_bound_since_its_turn_began() {
        let now = Instant::now();
        // (seats as (charge, turn, wait), budget, closed)
        let cases: &[Case] = &[
            // Nobody waits: nothing closes, however long the turn.
            (&[(60, Some(100), None), (60, None, None)], 100, &[]),
            // A waiter under the bound.
            (&[(60, Some(100), None), (60, None, Some(2))], 100, &[]),
            // Past the bound: the loaded model closes.
            (&[(60, Some(100), None), (60, None, Some(3))], 100, &[0]),
            // The waiter is old but the turn is new: the turn gets its bound first.
            (&[(60, Some(1), None), (60, None, Some(50))], 100, &[]),
            (&[(60, Some(4), None), (60, None, Some(50))], 100, &[0]),
            // It fits beside the loaded model: nothing closes.
            (&[(40, Some(100), None), (60, None, Some(9))], 100, &[]),
            // It can never fit: nothing closes (the request is refused elsewhere).
            (&[(60, Some(100), None), (160, None, Some(9))], 100, &[]),
            // Two loaded, one must go: the older turn.
            (
                &[
                    (40, Some(10), None),
                    (40, Some(20), None),
                    (40, None, Some(5)),
                ],
                100,
                &[1],
            ),
            // Only the older turn is past the bound but both must go: none yet.
            (
                &[
                    (50, Some(10), None),
                    (50, Some(1), None),
                    (60, None, Some(5)),
                ],
                100,
                &[],
            ),
            (
                &[
                    (50, Some(10), None),
                    (50, Some(4), None),
                    (60, None, Some(5)),
                ],
                100,
                &[0, 1],
            ),
            // Two models wait: the oldest waiter's counts, and it is under the bound.
            (
                &[
                    (60, Some(10), None),
                    (60, None, Some(1)),
                    (60, None, Some(2)),
                ],
                100,
                &[],
            ),
        ];
        for (i, (seats, budget, closed)) in cases.iter().enumerate() {
            let seats: Vec<Seat> = seats.iter().map(|&(c, t, w)| seat(c, t, w, now)).collect();
            assert_eq!(table(&seats, *budget, now).closed(), *closed, "case {i}");
        }
    }

    #[test]
    fn the_expected_wait_is_the_turn_left_and_a_turn_per_model_ahead() {
        let now = Instant::now();
        let s = |c, t, w| seat(c, t, w, now);
        // It fits: its own load.
        let seats = [s(40, Some(1), None), s(60, None, Some(0))];
        assert_eq!(table(&seats, 100, now).expected_wait(1), SWAP);
        // A new waiter: the bound from its arrival, then the swap.
        let seats = [s(60, Some(9), None), s(60, None, Some(0))];
        assert_eq!(table(&seats, 100, now).expected_wait(1), BOUND + SWAP);
        // A waiter for a turn begun 1 s ago: the turn's 2 s left, then the swap.
        let seats = [s(60, Some(1), None), s(60, None, Some(5))];
        assert_eq!(
            table(&seats, 100, now).expected_wait(1),
            Duration::from_secs(2) + SWAP
        );
        // Past the bound (it is draining): the swap alone.
        let seats = [s(60, Some(10), None), s(60, None, Some(5))];
        assert_eq!(table(&seats, 100, now).expected_wait(1), SWAP);
        // Behind another waiting model: its turn (swap and bound) first.
        let seats = [
            s(60, Some(10), None),
            s(60, None, Some(5)),
            s(60, None, Some(1)),
        ];
        assert_eq!(
            table(&seats, 100, now).expected_wait(2),
            SWAP + BOUND + SWAP
        );
        // The oldest waiter's model is next (a loaded one never is).
        assert_eq!(table(&seats, 100, now).next(), Some(1));
        assert_eq!(table(&seats[..1], 100, now).next(), None);
        // A request for a loaded model that closed: behind every waiting model.
        assert_eq!(
            table(&seats, 100, now).expected_wait(0),
            2 * (SWAP + BOUND) + SWAP
        );
    }
}
