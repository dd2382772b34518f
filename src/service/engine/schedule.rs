//! The scheduler's part of the engine ([`Schedule`]): the requests waiting for a sequence
//! and those decoding.

use std::collections::VecDeque;

use super::active::Active;
use crate::service::protocol::{FinishReason, Request};

/// Requests waiting for a sequence, and those decoding. Its methods touch nothing else.
///
/// The decoding ones are reached by position (`schedule[i]`); a position is good until the
/// next [`Schedule::retire`].
#[derive(Default)]
pub struct Schedule {
    /// Requests waiting for a sequence, oldest first.
    queue: VecDeque<Request>,
    /// Requests decoding now, one per hot sequence they hold.
    active: Vec<Active>,
}

impl std::ops::Index<usize> for Schedule {
    type Output = Active;
    fn index(&self, i: usize) -> &Active {
        &self.active[i]
    }
}

impl std::ops::IndexMut<usize> for Schedule {
    fn index_mut(&mut self, i: usize) -> &mut Active {
        &mut self.active[i]
    }
}

impl Schedule {
    /// A new request waits behind the others.
    pub fn enqueue(&mut self, request: Request) {
        self.queue.push_back(request);
    }

    /// A request taken from the queue that must wait again goes back to its head.
    pub fn requeue(&mut self, request: Request) {
        self.queue.push_front(request);
    }

    /// The oldest waiting request.
    pub fn next_waiting(&mut self) -> Option<Request> {
        self.queue.pop_front()
    }

    /// Requests waiting.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// Requests decoding.
    pub fn decoding(&self) -> usize {
        self.active.len()
    }

    /// Nothing decodes.
    pub fn none_decoding(&self) -> bool {
        self.active.is_empty()
    }

    /// Nothing decodes and nothing waits.
    pub fn is_idle(&self) -> bool {
        self.active.is_empty() && self.queue.is_empty()
    }

    /// The requests decoding, in the order they began.
    pub fn active(&self) -> &[Active] {
        &self.active
    }

    /// A request begins decoding.
    pub fn begin(&mut self, active: Active) {
        self.active.push(active);
    }

    /// Takes decoding request `i` out (it ended); later positions move down by one.
    pub fn retire(&mut self, i: usize) -> Active {
        self.active.remove(i)
    }

    /// Ends (at this step) every decoding request whose client cancelled or went away.
    pub fn end_cancelled(&mut self) {
        for active in self.active.iter_mut().filter(|a| a.finish.is_none()) {
            if active.cancelled() {
                active.finish = Some(FinishReason::Cancelled);
            }
        }
    }

    /// Ends (at this step, with `reason`) the request admitted last of those still going.
    pub fn end_latest(&mut self, reason: FinishReason) {
        if let Some(last) = self
            .active
            .iter_mut()
            .filter(|a| a.finish.is_none())
            .max_by_key(|a| a.admitted)
        {
            last.finish = Some(reason);
        }
    }

    /// Cancels every decoding request (each ends at the next step).
    pub fn cancel_all(&self) {
        for active in &self.active {
            active.request.cancel.cancel();
        }
    }

    /// The prompt length of the request decoding in conversation `name` (0 when none is).
    pub fn in_flight_prompt_len(&self, name: &str) -> usize {
        self.active
            .iter()
            .find(|a| a.conversation == name)
            .map_or(0, |a| a.request.ask.prompt.len())
    }
}
