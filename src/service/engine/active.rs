//! The requests the engine is serving: one decoding ([`Active`]), and the scheduler's part
//! of the engine ([`Schedule`]): those waiting and those decoding.

use std::collections::VecDeque;
use std::time::Instant;

use super::stop::StopFilter;
use crate::llama::{Sampler, TokenId, Utf8Stream};
use crate::service::protocol::{CachedTokens, FinishReason, Request};

pub struct Active {
    pub request: Request,
    /// The conversation's session name.
    pub conversation: String,
    pub sampler: Sampler,
    pub(super) stop: StopFilter,
    pub(super) utf8: Utf8Stream,
    pub(super) piece: Vec<u8>,
    pub(super) cached: CachedTokens,
    pub(super) prefilled: usize,
    /// The generated ids, as the log holds them.
    pub(super) tokens: Vec<TokenId>,
    pub(super) admitted: Instant,
    pub(super) first_token: Option<Instant>,
    /// Set once generation has ended; the request is then finished between steps.
    pub finish: Option<FinishReason>,
    /// The stop string that ended it, if one did.
    pub(super) matched_stop: Option<String>,
    /// Answered with Failed already (no Done follows).
    pub(super) failed: bool,
}

impl Active {
    pub fn new(
        request: Request,
        conversation: String,
        sampler: Sampler,
        cached: CachedTokens,
        admitted: Instant,
    ) -> Self {
        let stop = StopFilter::new(&request.ask.stop);
        Self {
            request,
            conversation,
            sampler,
            stop,
            utf8: Utf8Stream::default(),
            piece: Vec::new(),
            cached,
            prefilled: 0,
            tokens: Vec::new(),
            admitted,
            first_token: None,
            finish: None,
            matched_stop: None,
            failed: false,
        }
    }

    /// A client that cancelled or went away.
    pub fn cancelled(&self) -> bool {
        self.request.cancel.is_cancelled() || self.request.replies.is_closed()
    }

    /// Reply tokens sampled so far.
    pub fn generated(&self) -> usize {
        self.tokens.len()
    }

    pub fn add_prefilled(&mut self, tokens: usize) {
        self.prefilled += tokens;
    }
}

/// The scheduler's part of the engine: requests waiting for a sequence, and those decoding.
/// Its methods touch nothing else.
#[derive(Default)]
pub struct Schedule {
    /// Requests waiting for a sequence, oldest first.
    pub queue: VecDeque<Request>,
    /// Requests decoding now, one per hot sequence they hold.
    pub active: Vec<Active>,
}

impl Schedule {
    /// The prompt length of the request decoding in conversation `name` (0 when none is).
    pub fn in_flight_prompt_len(&self, name: &str) -> usize {
        self.active
            .iter()
            .find(|a| a.conversation == name)
            .map_or(0, |a| a.request.ask.prompt.len())
    }
}
