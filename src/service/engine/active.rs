//! A request the engine is decoding ([`Active`]): its sampler, what it has generated and
//! how it ended.

use std::time::Instant;

use super::stop::StopFilter;
use crate::llama::{Sampler, TokenId, Utf8Stream};
use crate::service::protocol::{CachedTokens, FinishReason, Request};

/// A request decoding in one hot sequence; the [`super::schedule::Schedule`] holds it.
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
