//! A live token sequence: the token log (the truth) and how much of it the KV cache in a
//! llama.cpp context already holds.
//!
//! The decode schedule is canonical, so that a context restored from KV pages computes
//! exactly what the uninterrupted one would have:
//! - prompt tokens are decoded in batches of whole pages that never cross a multiple of the
//!   batch span ([`crate::llama::batch_span`]), and each batch's start is recorded, so a
//!   restore that stops short recomputes from a recorded start in the same batches;
//! - the last token of the log is decoded on its own, with logits, right before sampling;
//! - a sampled token is appended to the log and decoded only when the next one is wanted,
//!   so after a turn the KV holds every token but the last (the "pending" token). A restore
//!   loads those cells and decodes the pending token, exactly as the live session would.

use std::ops::{ControlFlow, Range};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::llama::{Context, LlamaError, Model, Sampler, TokenId, TokenLogprob, Utf8Stream};

mod batch_starts;
mod checkpoints;
pub use batch_starts::BatchStarts;
pub use checkpoints::{thin as thin_checkpoints, Checkpoint, Checkpoints, MAX_CHECKPOINTS};

/// The sequence id of the live session inside a context.
pub const MAIN_SEQ: i32 = 0;

/// Hooks called while the KV cache catches up with the token log.
pub trait SyncObserver {
    /// `done` of `total` tokens are in the KV cache. `Break` stops early (Ctrl-C).
    fn progress(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A page (`positions`, `page_tokens` long) just filled in the context; `tokens` is the
    /// log up to its end. The paged KV manager captures it here, while its sliding-window
    /// rows are still in the window, and stores it while the prefill goes on.
    fn page_filled(
        &mut self,
        _ctx: &mut Context<'_>,
        _positions: Range<usize>,
        _tokens: &[TokenId],
    ) -> Result<(), LlamaError> {
        Ok(())
    }
    /// A decode finished: the context's sequence `seq` now holds `kv_len` tokens. Live
    /// figures (context use, hot bytes) are read here while a reply streams.
    fn decoded(&mut self, _ctx: &Context<'_>, _seq: i32, _kv_len: usize) {}
}

/// An observer that does nothing.
pub struct NoObserver;
impl SyncObserver for NoObserver {}

#[derive(Debug, Clone, Default)]
pub struct Sequence {
    /// The llama.cpp sequence id holding this log's cells.
    seq_id: i32,
    tokens: Vec<TokenId>,
    /// Tokens of the log held in the context's KV cache, `tokens[..kv_len]`.
    kv_len: usize,
    /// Where the batches that computed those cells started (and, after a restore, where
    /// the saved session's did, so a recompute replays them).
    batch_starts: BatchStarts,
    /// States at page boundaries within `kv_len`, for memory that cannot be cut (recurrent,
    /// hybrid): the engine records them while the cells are in the context.
    checkpoints: Checkpoints,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndOfGeneration,
    MaxTokens,
    ContextFull,
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub max_tokens: usize,
    /// Record log-probabilities with this many alternatives (None: don't).
    pub logprobs: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Generated {
    pub tokens: Vec<TokenId>,
    pub text: String,
    pub logprobs: Vec<TokenLogprob>,
    pub stop: StopReason,
    /// Time spent decoding after the first sampled token (the decode phase).
    pub decode_time: Duration,
    /// Time of the prompt catch-up that preceded sampling, if any.
    pub prefill_time: Duration,
    /// Tokens decoded by that catch-up.
    pub prefilled: usize,
}

impl Sequence {
    pub fn new() -> Self {
        Self::default()
    }

    /// A sequence whose first `kv_len` tokens are already in the context (after a restore).
    pub fn restored(tokens: Vec<TokenId>, kv_len: usize) -> Self {
        let kv_len = kv_len.min(tokens.len());
        Self {
            seq_id: MAIN_SEQ,
            tokens,
            kv_len,
            batch_starts: BatchStarts::default(),
            checkpoints: Checkpoints::default(),
        }
    }

    /// Checkpoints of the log's first tokens that hold for this sequence too: those within
    /// its cached cells (the caller checked that the tokens before them agree).
    pub fn with_checkpoints(mut self, mut checkpoints: Checkpoints) -> Self {
        checkpoints.truncate(self.kv_len);
        self.checkpoints = checkpoints;
        self
    }

    /// The states at page boundaries kept for this sequence ([`Checkpoints`]).
    pub fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    /// Keeps `bytes`, the state of the sequence's first `kv_len` tokens (all it caches now).
    pub fn record_checkpoint(&mut self, bytes: impl Into<std::sync::Arc<[u8]>>) {
        self.checkpoints.record(self.kv_len, bytes);
    }

    /// The batch schedule the log was first decoded by ([`BatchStarts::for_replay`]):
    /// prefill from here on never runs a batch across one of its starts.
    pub fn with_batch_starts(mut self, starts: BatchStarts) -> Self {
        self.batch_starts = starts;
        self
    }

    /// Where the decode batches of the cached cells (and of a replayed schedule) started.
    pub fn batch_starts(&self) -> &BatchStarts {
        &self.batch_starts
    }

    /// The same log, held in llama.cpp sequence `seq_id` (several sessions share a context).
    pub fn in_seq(mut self, seq_id: i32) -> Self {
        self.seq_id = seq_id;
        self
    }

    pub fn seq_id(&self) -> i32 {
        self.seq_id
    }

    pub fn tokens(&self) -> &[TokenId] {
        &self.tokens
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn kv_len(&self) -> usize {
        self.kv_len
    }

    pub fn append(&mut self, tokens: &[TokenId]) {
        self.tokens.extend_from_slice(tokens);
    }

    /// Forgets everything (the caller clears the context's cells too).
    pub fn reset(&mut self, ctx: &mut Context<'_>) {
        ctx.clear_seq(self.seq_id);
        self.tokens.clear();
        self.kv_len = 0;
        self.batch_starts = BatchStarts::default();
        self.checkpoints.clear();
    }

    /// Brings the KV cache up to the log: every token but the last in batches aligned to
    /// [`ContextInfo::batch_span`](crate::llama::ContextInfo),
    /// then, when `want_logits`, the last one alone with logits. Returns the number of
    /// tokens decoded; stops early (without error) when the observer breaks.
    pub fn sync(
        &mut self,
        ctx: &mut Context<'_>,
        want_logits: bool,
        observer: &mut dyn SyncObserver,
    ) -> Result<usize, LlamaError> {
        let n = self.tokens.len();
        if n == 0 {
            return Ok(0);
        }
        if self.kv_len == n {
            if !want_logits || ctx.logits().is_some() {
                return Ok(0);
            }
            // The logits of the last token are gone (another decode ran): decode it again.
            self.rewind(ctx, n - 1);
        }
        let start = self.kv_len;
        let page = ctx.info().page_tokens as usize;
        let span = ctx.info().batch_span as usize;
        let cap = ctx.info().n_batch as usize;
        let total = n - start;
        while let Some((range, false)) = self.next_chunk(span, cap) {
            let end = range.end;
            self.batch_starts.record(range.start);
            ctx.decode(
                self.seq_id,
                &self.tokens[range.clone()],
                range.start,
                false,
                |_| ControlFlow::Continue(()),
            )?;
            self.kv_len = end;
            observer.decoded(ctx, self.seq_id, end);
            for filled in pages_filled(range, page) {
                observer.page_filled(ctx, filled.clone(), &self.tokens[..filled.end])?;
            }
            if observer.progress(self.kv_len - start, total).is_break() {
                return Ok(self.kv_len - start);
            }
        }
        if want_logits {
            let pos = n - 1;
            self.batch_starts.record(pos);
            ctx.decode(self.seq_id, &self.tokens[pos..], pos, true, |_| {
                ControlFlow::Continue(())
            })?;
            self.kv_len = n;
            observer.decoded(ctx, self.seq_id, n);
            if n.is_multiple_of(page) {
                observer.page_filled(ctx, n - page..n, &self.tokens[..n])?;
            }
            let _ = observer.progress(total, total);
        }
        Ok(self.kv_len - start)
    }

    /// The next batch of the canonical schedule: prompt tokens up to (not across) the next
    /// multiple of `span` (a whole number of pages) or recorded batch start, at most `cap`
    /// of them, without logits; then the last token alone, with logits (`true`). None when
    /// the cache holds the whole log.
    pub fn next_chunk(&self, span: usize, cap: usize) -> Option<(Range<usize>, bool)> {
        let n = self.tokens.len();
        let pos = self.kv_len;
        if pos + 1 < n {
            let span_end = (pos / span.max(1) + 1) * span.max(1);
            let end = (n - 1)
                .min(span_end)
                .min(pos + cap.max(1))
                .min(self.batch_starts.next_after(pos).unwrap_or(usize::MAX));
            Some((pos..end, false))
        } else if pos + 1 == n {
            Some((pos..n, true))
        } else {
            None
        }
    }

    /// The same log with none of it in the cache (its cells were dropped), keeping the
    /// batches it was decoded in for the recompute to replay.
    pub fn forgotten(self) -> Self {
        let starts = self.batch_starts.for_replay(self.kv_len);
        Sequence::restored(self.tokens, 0).with_batch_starts(starts)
    }

    /// Takes the cache back to the log's first `to` tokens. A memory that cannot be cut
    /// there (a recurrent state holds no earlier point) is emptied instead, so the whole log
    /// is decoded again, in its recorded batches. Returns whether the first `to` tokens'
    /// cells were kept.
    pub fn rewind(&mut self, ctx: &mut Context<'_>, to: usize) -> bool {
        let to = to.min(self.kv_len);
        self.batch_starts.truncate(to);
        if ctx.truncate_seq(self.seq_id, to) {
            self.kv_len = to;
            self.checkpoints.truncate(to);
            return true;
        }
        ctx.clear_seq(self.seq_id);
        self.kv_len = 0;
        self.checkpoints.clear();
        false
    }

    /// Records that the caller decoded this log's tokens up to `kv_len` (a batch of
    /// several sequences, planned with [`Self::next_chunk`]).
    pub fn mark_decoded(&mut self, kv_len: usize) {
        let kv_len = kv_len.min(self.tokens.len());
        if kv_len > self.kv_len {
            self.batch_starts.record(self.kv_len);
        } else {
            self.batch_starts.truncate(kv_len);
            self.checkpoints.truncate(kv_len);
        }
        self.kv_len = kv_len;
    }

    /// Samples up to `max_tokens` tokens, streaming each piece of text to `on_text`
    /// (an `Err` from it, e.g. a closed stdout, stops generation and is returned).
    pub fn generate(
        &mut self,
        ctx: &mut Context<'_>,
        sampler: &mut Sampler,
        options: &GenerateOptions,
        cancel: &AtomicBool,
        observer: &mut dyn SyncObserver,
        on_text: &mut dyn FnMut(&str) -> std::io::Result<()>,
    ) -> Result<Generated, GenerateError> {
        let model: &Model = ctx.model();
        let n_ctx = ctx.info().n_ctx as usize;
        let mut out = Generated {
            tokens: Vec::new(),
            text: String::new(),
            logprobs: Vec::new(),
            stop: StopReason::MaxTokens,
            decode_time: Duration::ZERO,
            prefill_time: Duration::ZERO,
            prefilled: 0,
        };
        if options.max_tokens == 0 {
            return Ok(out);
        }
        // Stopped before it started (a quit while the turn was queued): decode nothing.
        if cancel.load(Ordering::Relaxed) {
            out.stop = StopReason::Cancelled;
            return Ok(out);
        }
        let mut utf8 = Utf8Stream::default();
        let mut piece = Vec::new();
        let started = Instant::now();
        out.prefilled = self.sync(ctx, true, observer)?;
        out.prefill_time = started.elapsed();
        if self.kv_len < self.tokens.len() {
            out.stop = StopReason::Cancelled;
            return Ok(out);
        }
        let decode_start = Instant::now();
        loop {
            if cancel.load(Ordering::Relaxed) {
                out.stop = StopReason::Cancelled;
                break;
            }
            let Some(token) = ctx.sample(sampler) else {
                // No logits: only possible if the sync above was interrupted.
                out.stop = StopReason::Cancelled;
                break;
            };
            if let Some(top_n) = options.logprobs {
                if let Some(logits) = ctx.logits() {
                    out.logprobs
                        .push(TokenLogprob::from_logits(logits, token, top_n));
                }
            }
            self.tokens.push(token);
            out.tokens.push(token);
            if model.is_end_of_generation(token) {
                out.stop = StopReason::EndOfGeneration;
                break;
            }
            model.token_bytes(token, false, &mut piece);
            let text = utf8.push(&piece);
            if !text.is_empty() {
                on_text(&text).map_err(GenerateError::Output)?;
                out.text.push_str(&text);
            }
            if out.tokens.len() >= options.max_tokens {
                out.stop = StopReason::MaxTokens;
                break;
            }
            if self.tokens.len() > n_ctx {
                out.stop = StopReason::ContextFull;
                break;
            }
            self.sync(ctx, true, observer)?;
        }
        let rest = utf8.finish();
        if !rest.is_empty() {
            on_text(&rest).map_err(GenerateError::Output)?;
            out.text.push_str(&rest);
        }
        out.decode_time = decode_start.elapsed();
        Ok(out)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(transparent)]
    Engine(#[from] LlamaError),
    #[error("writing output failed: {0}")]
    Output(std::io::Error),
}

/// Length of the common prefix of two token logs.
pub fn common_prefix(a: &[TokenId], b: &[TokenId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Whether a sequence cut back to `keep` tokens still has the cells the next token attends
/// to. On a sliding-window model the token at `keep` sees positions `keep - n_swa + 1..`;
/// llama.cpp's server applies the same test (`pos_min > max(0, n_past - n_swa)`: reprocess).
pub fn keep_is_valid(keep: usize, pos_min: Option<usize>, n_swa: u32) -> bool {
    if keep == 0 || n_swa == 0 {
        return true;
    }
    match pos_min {
        Some(min) => min <= keep.saturating_sub(n_swa as usize),
        None => false,
    }
}

/// The pages a batch over `range` completed: each `page`-token span ending inside it.
pub fn pages_filled(range: Range<usize>, page: usize) -> impl Iterator<Item = Range<usize>> {
    let page = page.max(1);
    let first = range.start / page + 1;
    let last = range.end / page;
    (first..=last).map(move |k| (k - 1) * page..k * page)
}
