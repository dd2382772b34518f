//! A request while it decodes: its sampler, stop strings and counters, and how each sampled
//! token turns into a reply.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::stop::StopFilter;
use super::Engine;
use crate::engine::{Context, Sampler, TokenLogprob, Utf8Stream};
use crate::sequence::SyncObserver;
use crate::service::protocol::{
    CachedTokens, FinishReason, Reply, Request, ServiceError, TokenPiece, Usage,
};
use crate::session::live::{ConversationState, SessionObserver};

pub struct Active {
    pub request: Request,
    /// The conversation's session name.
    pub conversation: String,
    pub sampler: Sampler,
    stop: StopFilter,
    utf8: Utf8Stream,
    piece: Vec<u8>,
    cached: CachedTokens,
    prefilled: usize,
    generated: usize,
    admitted: Instant,
    first_token: Option<Instant>,
    /// Set once generation has ended; the request is then finished between steps.
    pub finish: Option<FinishReason>,
    /// Answered with Failed already (no Done follows).
    failed: bool,
}

impl Active {
    pub fn new(
        request: Request,
        conversation: String,
        sampler: Sampler,
        cached: CachedTokens,
        admitted: Instant,
    ) -> Self {
        let stop = StopFilter::new(&request.stop);
        Self {
            request,
            conversation,
            sampler,
            stop,
            utf8: Utf8Stream::default(),
            piece: Vec::new(),
            cached,
            prefilled: 0,
            generated: 0,
            admitted,
            first_token: None,
            finish: None,
            failed: false,
        }
    }

    /// A client that cancelled or went away.
    pub fn cancelled(&self) -> bool {
        self.request.cancel.is_cancelled() || self.request.replies.is_closed()
    }

    pub fn add_prefilled(&mut self, tokens: usize) {
        self.prefilled += tokens;
    }
}

/// Stops a prefill early when the request is cancelled.
struct CancelObserver<'a>(&'a Request);

impl SyncObserver for CancelObserver<'_> {
    fn progress(&mut self, _done: usize, _total: usize) -> std::ops::ControlFlow<()> {
        if self.0.cancel.is_cancelled() || self.0.replies.is_closed() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    }
}

impl<'c, 'm> Engine<'c, 'm> {
    /// One step: admit what fits, advance every active request by one token (its prompt
    /// first), then finish and save what ended.
    pub(super) fn step(&mut self, ctx: &mut Context<'m>) {
        self.admit(ctx);
        for i in 0..self.active.len() {
            if self.active[i].finish.is_some() {
                continue;
            }
            if self.active[i].cancelled() {
                self.active[i].finish = Some(FinishReason::Cancelled);
                continue;
            }
            if let Err(e) = self.advance(ctx, i) {
                let active = &mut self.active[i];
                let _ = active.request.replies.send(Reply::Failed(e));
                active.finish = Some(FinishReason::Cancelled);
                active.failed = true;
            }
        }
        self.finish_ended(ctx);
    }

    /// Catches the KV up with the log (the prompt, or the last sampled token) and samples.
    fn advance(&mut self, ctx: &mut Context<'m>, i: usize) -> Result<(), ServiceError> {
        let index = self
            .find(&self.active[i].conversation)
            .ok_or_else(|| ServiceError::Internal("the conversation vanished".into()))?;
        let active = &mut self.active[i];
        let open = &mut self.conversations[index];
        let mut cancel = CancelObserver(&active.request);
        let mut observer = SessionObserver {
            session: &mut open.live,
            inner: &mut cancel,
        };
        let decoded = open
            .seq
            .sync(ctx, true, &mut observer)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        if active.first_token.is_none() {
            active.add_prefilled(decoded);
        }
        if open.seq.kv_len() < open.seq.len() {
            active.finish = Some(FinishReason::Cancelled);
            return Ok(());
        }
        let token = ctx
            .sample(&mut active.sampler)
            .ok_or_else(|| ServiceError::Internal("no logits to sample from".into()))?;
        let logprob = active.request.logprobs.and_then(|top_n| {
            ctx.logits()
                .map(|logits| TokenLogprob::from_logits(logits, token, top_n))
        });
        active.first_token.get_or_insert_with(Instant::now);
        open.seq.append(&[token]);
        active.generated += 1;
        let n_ctx = ctx.info().n_ctx as usize;
        let end_of_generation = self.model.is_end_of_generation(token);
        let mut text = String::new();
        if !end_of_generation {
            self.model.token_bytes(token, false, &mut active.piece);
            let released = active.stop.push(&active.utf8.push(&active.piece));
            text = released.text;
            if released.stopped {
                active.finish = Some(FinishReason::StopString);
            }
        }
        if active.finish.is_none() {
            active.finish = if end_of_generation {
                Some(FinishReason::EndOfGeneration)
            } else if active.generated >= active.request.max_tokens {
                Some(FinishReason::MaxTokens)
            } else if open.seq.len() > n_ctx {
                Some(FinishReason::ContextFull)
            } else {
                None
            };
            if active.finish.is_some() {
                // The reply ended for another reason: what was held for a stop string
                // (and any unfinished UTF-8) goes out with this token.
                text.push_str(&active.stop.push(&active.utf8.finish()).text);
                text.push_str(&active.stop.finish());
            }
        }
        if end_of_generation && text.is_empty() {
            return Ok(());
        }
        let piece = TokenPiece {
            id: token,
            text,
            logprob,
        };
        if active.request.replies.send(Reply::Token(piece)).is_err() {
            active.finish = Some(FinishReason::Cancelled);
        }
        Ok(())
    }

    /// Sends Done for every request that ended, saves its conversation and frees it.
    fn finish_ended(&mut self, ctx: &mut Context<'m>) {
        let mut i = 0;
        while i < self.active.len() {
            let Some(finish) = self.active[i].finish else {
                i += 1;
                continue;
            };
            let active = self.active.remove(i);
            self.finish(ctx, active, finish);
        }
    }

    fn finish(&mut self, ctx: &mut Context<'m>, active: Active, finish: FinishReason) {
        let now = Instant::now();
        let first = active.first_token.unwrap_or(now);
        let prompt_len = active.request.prompt.len();
        let usage = Usage {
            session: active.conversation.clone(),
            prompt_tokens: prompt_len,
            cached: active.cached,
            prefilled: active.prefilled,
            generated: active.generated,
            finish,
            queued: active
                .admitted
                .saturating_duration_since(active.request.received),
            time_to_first_token: first.saturating_duration_since(active.admitted),
            decode: if active.first_token.is_some() {
                now.saturating_duration_since(first)
            } else {
                Duration::ZERO
            },
        };
        self.counters.record_finish(&usage);
        if !active.failed {
            let _ = active.request.replies.send(Reply::Done(usage));
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
        if let Some(index) = self.find(&active.conversation) {
            self.save(ctx, index, prompt_len, finish == FinishReason::Cancelled);
        }
        self.enforce_cold_budget(ctx);
    }

    /// Saves conversation `index` (new pages, then the manifest) and marks it idle.
    pub(super) fn save(
        &mut self,
        ctx: &mut Context<'m>,
        index: usize,
        prompt_len: usize,
        interrupted: bool,
    ) {
        let open = &mut self.conversations[index];
        open.busy = false;
        open.prompt_len = prompt_len;
        open.last_used = Instant::now();
        open.last_used_unix = crate::session::live::unix_now();
        open.live.set_prompt_tokens(prompt_len);
        open.live.set_interrupted(interrupted);
        let state = ConversationState {
            messages: &[],
            rendered_len: 0,
            raw: true,
        };
        if let Err(e) = open.live.save(ctx, &open.seq, state) {
            tracing::error!(
                "saving session '{}' failed (its previous save is intact): {}",
                open.live.name,
                crate::exit::one_line(&e)
            );
        }
    }

    /// Answers a request that never started.
    pub(super) fn fail(&mut self, request: Request, error: ServiceError) {
        let _ = request.replies.send(Reply::Failed(error));
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// A request cancelled while it waited: Done with nothing generated.
    pub(super) fn finish_unstarted(&mut self, request: Request) {
        let now = Instant::now();
        let usage = Usage {
            session: String::new(),
            prompt_tokens: request.prompt.len(),
            cached: CachedTokens::default(),
            prefilled: 0,
            generated: 0,
            finish: FinishReason::Cancelled,
            queued: now.saturating_duration_since(request.received),
            time_to_first_token: Duration::ZERO,
            decode: Duration::ZERO,
        };
        let _ = request.replies.send(Reply::Done(usage));
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }
}
