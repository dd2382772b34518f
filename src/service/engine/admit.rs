//! Taking a queued request into a decoding slot: validation, its conversation, a context
//! sequence with room, and the longest cached prefix restored from the best tier.

use std::time::Instant;

use super::active::Active;
use super::conversations::Target;
use super::prefix::{common_prefix, plan, HotCandidate, PrefixSource};
use super::stats::restored_by_tier;
use super::Engine;
use crate::kv::MemoryKind;
use crate::llama::{Context, Sampler, TokenId};
use crate::sequence::{Checkpoint, Checkpoints, Sequence};
use crate::service::protocol::{CachedTokens, Reply, Request, ServiceError, Started};
use crate::session::capture::Slot;

impl<'c, 'm> Engine<'c, 'm> {
    /// Moves queued requests into free slots, in arrival order; a request whose
    /// conversation is busy (or that needs cells others still hold) waits without blocking
    /// the ones behind it.
    pub(super) fn admit(&mut self, ctx: &mut Context<'m>) {
        let mut waiting = std::collections::VecDeque::new();
        while self.schedule.decoding() < self.parallel {
            let Some(request) = self.schedule.next_waiting() else {
                break;
            };
            if request.cancel.is_cancelled() || request.replies.is_closed() {
                self.finish_unstarted(request);
                continue;
            }
            if let Err(e) = self.validate(&request) {
                self.fail(request, e);
                continue;
            }
            match self.target(ctx, &request.ask.conversation, &request.ask.prompt) {
                Err(e) => self.fail(request, e),
                Ok(Target::Busy) => waiting.push_back(request),
                Ok(Target::Open(index)) => match self.begin(ctx, index, request) {
                    Ok(None) => {}
                    Ok(Some(request)) => waiting.push_back(request),
                    Err((request, e)) => self.fail(request, e),
                },
            }
        }
        while let Some(request) = waiting.pop_back() {
            self.schedule.requeue(request);
        }
    }

    fn validate(&self, request: &Request) -> Result<(), ServiceError> {
        let n_ctx = self.max_cells();
        if request.ask.prompt.is_empty() {
            return Err(ServiceError::EmptyPrompt);
        }
        if let Some(&bad) = request
            .ask
            .prompt
            .iter()
            .find(|&&t| !self.model.is_valid_token(t))
        {
            return Err(ServiceError::BadToken(bad));
        }
        if request.ask.prompt.len() + 1 > n_ctx {
            return Err(ServiceError::PromptTooLong {
                tokens: request.ask.prompt.len(),
                n_ctx,
            });
        }
        request
            .ask
            .sampling
            .validate()
            .map_err(|e| ServiceError::InvalidSetting(e.to_string()))
    }

    /// Gives conversation `index` a sequence with room and restores the prompt's prefix.
    /// Returns the request when it must wait for cells other requests hold.
    #[allow(clippy::result_large_err)]
    fn begin(
        &mut self,
        ctx: &mut Context<'m>,
        index: usize,
        request: Request,
    ) -> Result<Option<Request>, (Request, ServiceError)> {
        if !self.room_to_begin(ctx, index, &request) {
            return Ok(Some(request));
        }
        let mut sampler = Sampler::new(self.model, &request.ask.sampling, &request.ask.prompt);
        if let Some(grammar) = &request.ask.grammar {
            let constrained = match &grammar.after {
                Some(opening) => sampler.constrain_after(self.model, &grammar.grammar, opening),
                None => sampler.constrain(self.model, &grammar.grammar),
            };
            match (constrained, &grammar.after) {
                (Ok(()), _) => {}
                // A reply that need not call a tool is never refused over its tools'
                // schemas: it is served unconstrained, and a call in it is still parsed.
                // (A refused grammar leaves the sampler as it was.)
                (Err(e), Some(_)) => tracing::warn!(
                    "tool_choice auto: {e}; the reply is unconstrained, and a call in it is \
                     still parsed"
                ),
                (Err(e), None) => return Err((request, ServiceError::Grammar(e.to_string()))),
            }
        }
        let seq_id = match self.conversations[index].hot() {
            Some(s) => s,
            None => match self.conversations.free_seq(self.parallel) {
                Some(s) => s,
                None => match self.conversations.coolest(index) {
                    Some(victim) => {
                        self.conversations.cool(ctx, victim);
                        self.conversations
                            .free_seq(self.parallel)
                            .expect("a sequence was just freed")
                    }
                    None => return Ok(Some(request)),
                },
            },
        };
        self.conversations.begin_request(index, seq_id);
        let admitted = Instant::now();
        let cached = match self.restore_prefix(ctx, index, seq_id, &request) {
            Ok(c) => c,
            Err(e) => {
                self.conversations.end_request(index);
                self.conversations.cool(ctx, index);
                return Err((request, e));
            }
        };
        let open = &mut self.conversations[index];
        open.last_used = admitted;
        let started = Started {
            session: open.live.name.clone(),
            prompt_tokens: request.ask.prompt.len(),
            cached,
        };
        let replied = request.replies.send(Reply::Started(started)).is_ok();
        if !replied {
            request.cancel.cancel();
        }
        self.counters.record_start(&request, cached);
        let name = open.live.name.clone();
        self.schedule
            .begin(Active::new(request, name, sampler, cached, admitted));
        Ok(None)
    }

    /// Finds cells for `request` to begin in conversation `index`: room for its prompt and
    /// the start of its reply. While others decode, an elastic context below its ceiling
    /// grows off the engine thread, and the request begins at once when what it restores
    /// fits with a page to spare (its prefill waits for the new cells only if it outruns
    /// them), or else waits for them without holding the others up. With nothing else
    /// decoding it waits here for the larger context, which keeps a lone request exact
    /// across growth: a prefill that a resize interrupted came out a rounding apart (up to
    /// 1e-3 in log-probability on the tiny model) from one in a context of the final size,
    /// where a reply's tokens moved mid-decode come out identical. Failing growth, idle
    /// sequences leave the context for it. Returns false when it must wait for cells.
    fn room_to_begin(&mut self, ctx: &mut Context<'m>, index: usize, request: &Request) -> bool {
        let page = ctx.info().page_tokens as usize;
        let needed = request.ask.prompt.len() + request.ask.max_tokens.clamp(1, page);
        let others = |e: &Self| e_cells(e, index, e.conversations[index].seq.kv_len());
        if !self.schedule.none_decoding() && self.grow_ahead(ctx, others(self) + needed) {
            let start = self.restorable(ctx, index, &request.ask.prompt) + page;
            return others(self) + start <= ctx.info().n_ctx as usize;
        }
        self.grow_for(ctx, others(self) + needed);
        let n_ctx = ctx.info().n_ctx as usize;
        while others(self) + needed > n_ctx {
            match self.conversations.coolest(index) {
                Some(victim) => self.conversations.cool(ctx, victim),
                None => break,
            }
        }
        others(self) + needed <= n_ctx || self.schedule.none_decoding()
    }

    /// The most cells a restore of `prompt`'s prefix can fill for conversation `index`:
    /// its own hot cells, another hot sequence's common prefix, or its stored pages.
    fn restorable(&self, ctx: &Context<'m>, index: usize, prompt: &[TokenId]) -> usize {
        let hot = self
            .conversations
            .iter()
            .filter(|o| o.hot().is_some())
            .map(|o| common_prefix(&o.seq.tokens()[..o.seq.kv_len()], prompt))
            .max()
            .unwrap_or(0);
        let open = &self.conversations[index];
        let stored = open.live.stored_prefix_len(prompt).unwrap_or(0);
        let own = if open.hot().is_some() {
            open.seq.kv_len()
        } else {
            0
        };
        hot.max(stored).max(own).min(ctx.info().n_ctx as usize)
    }

    /// Restores the longest cached prefix of the prompt into sequence `seq_id`, from the
    /// hot tier (this or another conversation's cells) or from pages (warm, then cold).
    fn restore_prefix(
        &mut self,
        ctx: &mut Context<'m>,
        index: usize,
        seq_id: i32,
        request: &Request,
    ) -> Result<CachedTokens, ServiceError> {
        // A conversation out of the context restores from its pages: those of a commit
        // still in flight must be stored first.
        let open = &self.conversations[index];
        if open.seq.kv_len() == 0 && open.live.commits_in_flight() > 0 {
            self.wait_for_commits_of(index);
        }
        let prompt = &request.ask.prompt;
        let memory = self.model.facts().memory;
        let candidates: Vec<HotCandidate> = self
            .conversations
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                let s = o.hot()?;
                let kv_len = o.seq.kv_len();
                let common = common_prefix(&o.seq.tokens()[..kv_len], prompt);
                let usable = common.min(prompt.len().saturating_sub(1));
                let checkpoint = o.seq.checkpoints().at_or_before(usable);
                (kv_len > 0).then(|| HotCandidate {
                    index: i,
                    own: i == index,
                    common,
                    kv_len,
                    pos_min: ctx.seq_pos_min(s),
                    checkpoint: checkpoint.map_or(0, |c| c.pos),
                })
            })
            .collect();
        let stored = self.conversations[index]
            .live
            .stored_prefix_len(prompt)
            .unwrap_or(0);
        let (source, _) = plan(prompt.len(), &candidates, stored, memory);
        let mut cached = CachedTokens::default();
        let others_empty = self
            .conversations
            .iter()
            .enumerate()
            .all(|(i, o)| i == index || o.hot().is_none() || o.seq.kv_len() == 0);
        let scratch = self.parallel as i32;
        // Where the conversation's log and the prompt agree, the log's recorded batch starts
        // hold: whatever the restore leaves for prefill (a damaged page, a partial restore)
        // is recomputed in its original batches, so it comes out bit-identical.
        // So do its checkpoints, while their cells stay in the context.
        let (starts, checkpoints) = {
            let old = &self.conversations[index].seq;
            let common = common_prefix(old.tokens(), prompt);
            let mut starts = old.batch_starts().clone();
            starts.truncate(common);
            let mut checkpoints = old.checkpoints().clone();
            checkpoints.truncate(common);
            (starts, checkpoints)
        };
        let open_seq = |tokens: &[i32], kv| {
            Sequence::restored(tokens.to_vec(), kv)
                .in_seq(seq_id)
                .with_batch_starts(starts.clone())
                .with_checkpoints(checkpoints.clone())
        };
        match source {
            PrefixSource::Own { keep } => {
                let kv_len = self.conversations[index].seq.kv_len();
                // The plan cuts only memory that can be cut, or goes back to a checkpoint;
                // should llama.cpp still refuse, the prompt is recomputed, not continued
                // from a state that is not its own.
                let kept = if memory.cuts() || keep == kv_len {
                    ctx.truncate_seq(seq_id, keep)
                } else {
                    let checkpoints = self.conversations[index].seq.checkpoints();
                    load_checkpoint(ctx, seq_id, checkpoints, keep).is_some()
                };
                if kept {
                    self.conversations[index].seq = open_seq(prompt, keep);
                    cached.hot = keep;
                } else {
                    tracing::debug!(
                        "llama.cpp did not cut sequence {seq_id} at {keep}: recomputing"
                    );
                    ctx.clear_seq(seq_id);
                    self.conversations[index].seq = open_seq(prompt, 0);
                }
            }
            PrefixSource::Share { from, keep } => {
                let src = self.conversations[from].hot().expect("a hot candidate");
                let mut copied = None;
                ctx.clear_seq(seq_id);
                let shared = if memory.shares_ranges() {
                    ctx.share_range(src, seq_id, 0, keep);
                    true
                } else {
                    // A hybrid's attention cells are shared by range; `seq_cp` makes the
                    // recurrent half alias the source's whole state, which the checkpoint
                    // then replaces in this sequence alone.
                    if matches!(memory, MemoryKind::Hybrid { .. }) {
                        ctx.share_range(src, seq_id, 0, keep);
                    }
                    let checkpoints = self.conversations[from].seq.checkpoints();
                    copied = load_checkpoint(ctx, seq_id, checkpoints, keep);
                    copied.is_some()
                };
                if shared {
                    let mut seq = open_seq(prompt, keep);
                    // The state it starts from is this conversation's checkpoint too.
                    if let Some(c) = copied {
                        seq.record_checkpoint(c.bytes);
                    }
                    self.conversations[index].seq = seq;
                    cached.hot = keep;
                } else {
                    tracing::debug!(
                        "llama.cpp refused the checkpoint at {keep} for sequence {seq_id}: \
                         recomputing"
                    );
                    ctx.clear_seq(seq_id);
                    self.conversations[index].seq = open_seq(prompt, 0);
                }
            }
            PrefixSource::Pages => {
                ctx.clear_seq(seq_id);
                let open = &mut self.conversations[index];
                open.seq = open_seq(prompt, 0);
                if stored > 0 {
                    open.live.set_slot(Slot {
                        seq: seq_id,
                        scratch,
                        exclusive: others_empty,
                    });
                    let before = self.warm.stats();
                    let report = open
                        .live
                        .reuse_prefix(ctx, &mut open.seq)
                        .map_err(|e| ServiceError::Internal(crate::format::one_line_of(&e)))?;
                    for w in &report.warnings {
                        tracing::warn!("{w}");
                    }
                    let after = self.warm.stats();
                    cached = restored_by_tier(&before, &after, report.restored_tokens);
                }
            }
        }
        // Page captures read through this conversation's sequence from now on.
        self.conversations[index].live.set_slot(Slot {
            seq: seq_id,
            scratch,
            exclusive: false,
        });
        Ok(cached)
    }
}

/// Takes sequence `seq` to the checkpoint of `checkpoints` at `keep` (the plan chose it):
/// see [`Context::load_checkpoint`]. Returns it when llama.cpp took it.
fn load_checkpoint(
    ctx: &mut Context<'_>,
    seq: i32,
    checkpoints: &Checkpoints,
    keep: usize,
) -> Option<Checkpoint> {
    let checkpoint = checkpoints.at_or_before(keep).filter(|c| c.pos == keep)?;
    ctx.load_checkpoint(seq, &checkpoint.bytes, keep)
        .then(|| checkpoint.clone())
}

/// Cells the hot sequences hold, not counting conversation `index`'s own `own` cells.
fn e_cells(engine: &Engine<'_, '_>, index: usize, own: usize) -> usize {
    let hot_own = engine.conversations[index].hot().is_some();
    engine.conversations.hot_cells() - if hot_own { own } else { 0 }
}
