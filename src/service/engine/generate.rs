//! A request while it decodes: its sampler, stop strings and counters, and how each sampled
//! token turns into a reply.

use super::active::Active;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::batch_plan::{plan_step, Demand};
use super::Engine;
use crate::llama::{BatchEntry, Context, KvCapture, TokenId, TokenLogprob};
use crate::sequence::{pages_filled, NoObserver, SyncObserver};
use crate::service::protocol::{
    CachedTokens, FinishReason, Reply, Request, ServiceError, TokenPiece, Usage,
};
use crate::session::live::SessionObserver;

impl<'c, 'm> Engine<'c, 'm> {
    /// One step: admit what fits, decode one batch (a token of every generating sequence
    /// and prompt chunks of the others), sample, then finish and save what ended. A larger
    /// context made meanwhile is moved into first, and one is asked for ahead of need.
    pub(super) fn step(&mut self, ctx: &mut Context<'m>) {
        self.take_built(ctx);
        self.admit(ctx);
        self.schedule.end_cancelled();
        self.decode_step(ctx);
        self.finish_ended(ctx);
        self.grow_before_full(ctx);
    }

    fn decode_step(&mut self, ctx: &mut Context<'m>) {
        let page = ctx.info().page_tokens as usize;
        let span = ctx.info().batch_span as usize;
        let cap = ctx.info().n_batch as usize;
        // (active, conversation, next chunk, logits) of every request still decoding.
        let mut plans = Vec::new();
        for i in 0..self.schedule.decoding() {
            if self.schedule[i].finish.is_some() {
                continue;
            }
            let Some(index) = self.conversations.find(&self.schedule[i].conversation) else {
                self.fail_active(
                    i,
                    ServiceError::Internal("the conversation vanished".into()),
                );
                continue;
            };
            let seq = &mut self.conversations[index].seq;
            if seq.kv_len() == seq.len() {
                // Not after a restore (the last prompt token is always decoded), but a log
                // whose cache is complete has no logits left: decode its last token again.
                seq.rewind(ctx, seq.len() - 1);
            }
            if let Some((range, logits)) = seq.next_chunk(span, cap) {
                plans.push((i, index, range, logits));
            }
        }
        let demands: Vec<Demand> = plans
            .iter()
            .map(|(_, _, range, logits)| Demand {
                len: range.len(),
                logits: *logits,
            })
            .collect();
        let take = plan_step(&demands, cap);
        let planned: Vec<_> = plans
            .into_iter()
            .zip(take)
            .filter(|(_, n)| *n > 0)
            .map(|((i, index, range, logits), n)| {
                (i, index, range.start, n, logits && n == range.len())
            })
            .collect();
        if planned.is_empty() || !self.make_room(ctx, planned.iter().map(|p| p.3).sum()) {
            return;
        }
        // A resize that had to drop a decoding sequence's cells: plan again next step.
        if planned
            .iter()
            .any(|&(_, index, start, ..)| self.conversations[index].seq.kv_len() != start)
        {
            return;
        }
        let entries: Vec<BatchEntry<'_>> = planned
            .iter()
            .map(|&(_, index, start, n, logits)| {
                let open = &self.conversations[index];
                BatchEntry {
                    seq: open.seq.seq_id(),
                    tokens: &open.seq.tokens()[start..start + n],
                    start_pos: start,
                    logits,
                }
            })
            .collect();
        let decoded = ctx.decode_many(&entries);
        drop(entries);
        let indices = match decoded {
            Ok(indices) => indices,
            Err(e) => {
                // What the cache holds for these sequences is unknown now: they leave the
                // context (their logs stay) and their requests fail.
                for &(i, index, ..) in &planned {
                    self.fail_active(i, ServiceError::Internal(e.to_string()));
                    self.conversations.cool(ctx, index);
                }
                return;
            }
        };
        for (&(i, index, start, n, _), idx) in planned.iter().zip(indices) {
            let end = start + n;
            self.conversations[index].seq.mark_decoded(end);
            let active = &mut self.schedule[i];
            if active.first_token.is_none() {
                active.add_prefilled(n);
                if active.request.progress && idx.is_none() {
                    let total = active.request.ask.prompt.len() - active.cached.total();
                    let done = Reply::Progress {
                        done: active.prefilled,
                        total,
                    };
                    let _ = active.request.replies.send(done);
                }
            }
            if idx.is_some() && active.request.ask.max_tokens == 0 {
                // A prefill-only request (`run -n 0`): the prompt is cached, nothing is
                // sampled (the next request decodes its last token again for logits).
                active.finish = Some(FinishReason::MaxTokens);
            } else if let Some(idx) = idx {
                let token = ctx.sample_at(&mut active.sampler, idx);
                let logprob = active
                    .request
                    .ask
                    .logprobs
                    .map(|top_n| TokenLogprob::from_logits(ctx.logits_at(idx), token, top_n));
                self.accept(i, index, token, logprob);
            }
            if end % page == 0 {
                // (Memory that takes checkpoints decodes one page at a time.)
                self.checkpoint(ctx, index);
            }
            // The pages' sliding-window rows, while they are still in the window.
            let open = &mut self.conversations[index];
            let mut observer = SessionObserver {
                session: &mut open.live,
                inner: &mut NoObserver,
            };
            for filled in pages_filled(start..end, page) {
                let _ = observer.page_filled(ctx, filled.clone(), &open.seq.tokens()[..filled.end]);
            }
        }
    }

    /// Keeps the state of conversation `index`'s sequence, which just reached a page
    /// boundary, as a checkpoint, when its memory cannot be cut
    /// ([`crate::sequence::Checkpoints`]). One llama.cpp cannot give is only not kept.
    fn checkpoint(&mut self, ctx: &Context<'m>, index: usize) {
        if self.model.facts().memory.cuts() {
            return;
        }
        let seq = &mut self.conversations[index].seq;
        let started = Instant::now();
        match ctx.state_get(seq.seq_id(), KvCapture::Checkpoint) {
            Ok(bytes) => {
                self.counters.record_checkpoint(started.elapsed());
                seq.record_checkpoint(bytes);
            }
            Err(e) => tracing::debug!("no checkpoint at {}: {e}", seq.kv_len()),
        }
    }

    /// Frees cells for a step of `needed` tokens: idle sequences leave the context first;
    /// when only decoding ones are left, the request admitted last ends (ContextFull) and
    /// the step is planned again. Returns whether the step can run.
    fn make_room(&mut self, ctx: &mut Context<'m>, needed: usize) -> bool {
        self.grow_for(ctx, self.conversations.hot_cells() + needed);
        let n_ctx = ctx.info().n_ctx as usize;
        while self.conversations.hot_cells() + needed > n_ctx {
            match self.conversations.coolest(usize::MAX) {
                Some(victim) => self.conversations.cool(ctx, victim),
                None => {
                    self.schedule.end_latest(FinishReason::ContextFull);
                    return false;
                }
            }
        }
        true
    }

    /// Appends a sampled token to the log and sends its text (minus any stop string).
    fn accept(&mut self, i: usize, index: usize, token: TokenId, logprob: Option<TokenLogprob>) {
        let n_ctx = self.max_cells();
        let active = &mut self.schedule[i];
        let open = &mut self.conversations[index];
        active.first_token.get_or_insert_with(Instant::now);
        open.seq.append(&[token]);
        active.tokens.push(token);
        let end_of_generation = self.model.is_end_of_generation(token);
        let mut text = String::new();
        if !end_of_generation {
            self.model.token_bytes(token, false, &mut active.piece);
            let released = active.stop.push(&active.utf8.push(&active.piece));
            text = released.text;
            if let Some(stop) = released.stop {
                active.finish = Some(FinishReason::StopString);
                active.matched_stop = Some(stop);
            }
        }
        if active.finish.is_none() {
            active.finish = if end_of_generation {
                Some(FinishReason::EndOfGeneration)
            } else if active.tokens.len() >= active.request.ask.max_tokens {
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
            return;
        }
        let piece = TokenPiece {
            id: token,
            text,
            logprob,
        };
        if active.request.replies.send(Reply::Token(piece)).is_err() {
            active.finish = Some(FinishReason::Cancelled);
        }
    }

    fn fail_active(&mut self, i: usize, error: ServiceError) {
        let active = &mut self.schedule[i];
        let _ = active.request.replies.send(Reply::Failed(error));
        active.finish = Some(FinishReason::Cancelled);
        active.failed = true;
    }

    /// Sends Done for every request that ended, saves its conversation and frees it.
    fn finish_ended(&mut self, ctx: &mut Context<'m>) {
        let mut i = 0;
        while i < self.schedule.decoding() {
            let Some(finish) = self.schedule[i].finish else {
                i += 1;
                continue;
            };
            let active = self.schedule.retire(i);
            self.finish(ctx, active, finish);
        }
    }

    fn finish(&mut self, ctx: &mut Context<'m>, active: Active, finish: FinishReason) {
        let now = Instant::now();
        let first = active.first_token.unwrap_or(now);
        let prompt_len = active.request.ask.prompt.len();
        let usage = Usage {
            session: active.conversation.clone(),
            prompt_tokens: prompt_len,
            cached: active.cached,
            prefilled: active.prefilled,
            generated: active.tokens.len(),
            tokens: active.tokens.clone(),
            finish,
            stop_sequence: active.matched_stop.clone(),
            queued: active
                .admitted
                .saturating_duration_since(active.request.received),
            time_to_first_token: first.saturating_duration_since(active.admitted),
            decode: if active.first_token.is_some() {
                now.saturating_duration_since(first)
            } else {
                Duration::ZERO
            },
            saved: None,
        };
        self.counters.record_finish(&usage);
        // The prefill rate the restore-or-recompute choice weighs restores against (the
        // time to first token is the prefill, and any prefix restore, which is far
        // shorter).
        crate::session::live::record_prefill(
            usage.prefilled,
            usage.time_to_first_token.as_secs_f64() * 1e3,
        );
        let index = self.conversations.find(&active.conversation);
        // `--durability before`: the save's commit sends Done from the writer thread once
        // the manifest is durable, so this thread decodes on meanwhile.
        let done_after_save = !active.failed && index.is_some() && active.request.save_before_done;
        let mut done = None;
        if done_after_save {
            done = Some((active.request.replies.clone(), usage));
        } else if !active.failed {
            let _ = active.request.replies.send(Reply::Done(usage));
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
        if let Some(index) = index {
            let interrupted = finish == FinishReason::Cancelled;
            let template = active.request.ask.template.clone();
            let transcript = active.request.transcript.as_ref();
            let reply = (transcript, template);
            self.save_reply(ctx, index, prompt_len, interrupted, reply, done);
        }
        self.enforce_cold_budget(ctx);
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
            prompt_tokens: request.ask.prompt.len(),
            cached: CachedTokens::default(),
            prefilled: 0,
            generated: 0,
            tokens: Vec::new(),
            finish: FinishReason::Cancelled,
            stop_sequence: None,
            queued: now.saturating_duration_since(request.received),
            time_to_first_token: Duration::ZERO,
            decode: Duration::ZERO,
            saved: None,
        };
        let _ = request.replies.send(Reply::Done(usage));
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }
}
