//! A llama.cpp context: decoding with a canonical batch schedule of whole pages, and raw access
//! to a sequence's KV state bytes for the paged KV manager.

use std::num::NonZeroU32;
use std::ops::ControlFlow;

use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::LlamaStateSeqFlags;

use super::{backend, LlamaError, Model, TokenId};
use crate::kv::{window, MemoryKind};
use crate::settings::{FlashAttn, KvType, LlamaSettings};

/// What the context was created with, after capping to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextInfo {
    pub n_ctx: u32,
    /// Tokens per KV page.
    pub page_tokens: u32,
    /// No prompt batch crosses a multiple of this many tokens: a whole number of pages
    /// ([`batch_span`]).
    pub batch_span: u32,
    /// Largest decode batch (never above `batch_span`).
    pub n_batch: u32,
    pub n_seq_max: u32,
    pub kv_type: KvType,
    pub flash_attn: FlashAttn,
}

/// One sequence's part of a multi-sequence batch ([`Context::decode_many`]).
#[derive(Debug, Clone, Copy)]
pub struct BatchEntry<'t> {
    pub seq: i32,
    pub tokens: &'t [TokenId],
    /// Position of `tokens[0]` in the sequence.
    pub start_pos: usize,
    /// Keep the logits of the last token (to sample from).
    pub logits: bool,
}

/// Which part of a sequence's KV state to read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvCapture {
    /// Every cache section (full-attention and sliding-window layers).
    Full,
    /// Only the sliding-window section of an iSWA cache (llama.cpp's `PARTIAL_ONLY`).
    SlidingWindowOnly,
    /// A recurrent or hybrid sequence's checkpoint ([`crate::sequence::Checkpoints`]):
    /// everything but the full-attention cells, that is the recurrent state and a hybrid's
    /// sliding-window rows (the same `PARTIAL_ONLY` flag, as llama.cpp's server uses it).
    Checkpoint,
}

impl KvCapture {
    fn flags(self) -> LlamaStateSeqFlags {
        match self {
            KvCapture::Full => LlamaStateSeqFlags::empty(),
            KvCapture::SlidingWindowOnly | KvCapture::Checkpoint => {
                LlamaStateSeqFlags::PARTIAL_ONLY
            }
        }
    }
}

/// The span of a prompt batch: `--batch-size` rounded down to whole pages, at least one.
///
/// Wider batches prefill faster (llama.cpp reads the weights once per batch: 512 against
/// 256 is about 6% of a CPU prefill), but a batch is also the unit of exact recompute:
/// llama.cpp rounds a token differently inside batches of other shapes, so a restore that
/// stops inside a recorded batch recomputes exactly only from that batch's start (the
/// restore planners round down to one). Other memory than a unified attention cache keeps
/// one-page batches ([`MemoryKind::wide_batches`]).
///
/// [`MemoryKind::wide_batches`]: crate::kv::MemoryKind::wide_batches
pub fn batch_span(batch_size: u32, page_tokens: u32, wide: bool) -> u32 {
    let page = page_tokens.max(1);
    match wide {
        true => (batch_size / page).max(1) * page,
        false => page,
    }
}

/// The largest batch a context decodes for `--batch-size`: at most its [`batch_span`]. (It
/// sizes llama.cpp's compute buffer, which the memory budget charges.)
pub fn schedule_batch(batch_size: u32, page_tokens: u32, wide: bool) -> u32 {
    batch_size.clamp(1, batch_span(batch_size, page_tokens, wide))
}

/// llama.cpp pads every context to a multiple of this many cells (llama-context.cpp).
const LLAMA_CTX_PADDING: u32 = 256;
/// Smaller requests are raised to this: a context needs room for a prompt and a reply.
const MIN_CTX: u32 = 16;

pub struct Context<'m> {
    model: &'m Model,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
    info: ContextInfo,
    /// Batch index of the last token decoded with logits, for sampling.
    logits_index: Option<i32>,
    /// Nothing has entered the cache since it was created or last cleared. llama.cpp
    /// zeroes a new cache's buffers, so clearing it again would only write the whole KV
    /// buffer (hundreds of MiB at a long context) inside a restore's time.
    pristine: bool,
}

impl<'m> Context<'m> {
    pub fn new(
        model: &'m Model,
        settings: &LlamaSettings,
        page_tokens: u32,
        n_seq_max: u32,
    ) -> Result<Self, LlamaError> {
        if settings.kv_type != KvType::F16 && settings.flash_attn == FlashAttn::Off {
            return Err(LlamaError::Unsupported(format!(
                "--kv-type {} quantizes the V cache, which llama.cpp supports only with flash \
                 attention; use --flash-attn on or auto",
                settings.kv_type.as_str()
            )));
        }
        // llama.cpp rounds the context up to a multiple of 256 anyway, but only after it
        // has capped its batch size at the unrounded value; rounding first keeps a small
        // --ctx-size from shrinking the batch below what the schedule hands it.
        // The context kvrun fills is the one asked for, even where llama.cpp allocates more.
        let n_ctx = settings
            .ctx_size
            .min(model.facts().n_ctx_train.max(1))
            .max(MIN_CTX);
        let padded_ctx = n_ctx
            .div_ceil(LLAMA_CTX_PADDING)
            .saturating_mul(LLAMA_CTX_PADDING);
        super::device::check_kv_fits_devices(model, settings, padded_ctx)?;
        let page_tokens = page_tokens.max(1);
        let wide = model.facts().memory.wide_batches();
        let batch_span = batch_span(settings.batch_size, page_tokens, wide);
        let schedule_batch = schedule_batch(settings.batch_size, page_tokens, wide);
        // llama.cpp reserves room for one output per sequence and asserts the batch holds
        // them, so the context's batch is at least n_seq_max; the schedule never fills more
        // than `schedule_batch` of it.
        let llama_batch = schedule_batch.max(n_seq_max.max(1));
        let kv = match settings.kv_type {
            KvType::F16 => KvCacheType::F16,
            KvType::Q8_0 => KvCacheType::Q8_0,
            KvType::Q4_0 => KvCacheType::Q4_0,
        };
        let flash = match settings.flash_attn {
            FlashAttn::On => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED,
            FlashAttn::Off => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED,
            FlashAttn::Auto => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_AUTO,
        };
        let threads = settings.threads.clamp(1, 512) as i32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(padded_ctx))
            .with_n_batch(llama_batch)
            .with_n_ubatch(llama_batch)
            .with_n_seq_max(n_seq_max.max(1))
            // One cell pool shared by all sequences: memory follows demand, and a sequence's
            // blob has one stream whatever n_seq_max is.
            .with_kv_unified(true)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_type_k(kv)
            .with_type_v(kv)
            .with_flash_attention_policy(flash);
        let ctx = model.llama().new_context(backend()?, params).map_err(|e| {
            LlamaError::CreateContext {
                detail: e.to_string(),
            }
        })?;
        // Never hand llama.cpp a batch above what it accepted: it asserts on that.
        let n_batch = schedule_batch.min(ctx.n_batch()).min(ctx.n_ubatch()).max(1);
        let info = ContextInfo {
            n_ctx: ctx.n_ctx().min(n_ctx),
            page_tokens,
            batch_span,
            n_batch,
            n_seq_max: n_seq_max.max(1),
            kv_type: settings.kv_type,
            flash_attn: settings.flash_attn,
        };
        Ok(Self {
            model,
            ctx,
            batch: LlamaBatch::new(n_batch as usize, 1),
            info,
            logits_index: None,
            pristine: true,
        })
    }

    pub fn info(&self) -> &ContextInfo {
        &self.info
    }

    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Decodes `tokens` into sequence `seq` at positions `start_pos..`, in batches that
    /// never cross a multiple of the batch span (the canonical schedule: the same
    /// positions always fall into the same batch shapes, so a context restored to a batch
    /// start computes what an uninterrupted one would). Logits are kept for the final token when `logits_last`.
    /// `after_batch(end_pos)` runs after each batch; `Break` stops early (Ctrl-C), and the
    /// return value is the position reached.
    pub fn decode(
        &mut self,
        seq: i32,
        tokens: &[TokenId],
        start_pos: usize,
        logits_last: bool,
        mut after_batch: impl FnMut(usize) -> ControlFlow<()>,
    ) -> Result<usize, LlamaError> {
        self.pristine = false;
        let n_ctx = self.info.n_ctx as usize;
        if start_pos + tokens.len() > n_ctx {
            return Err(LlamaError::ContextFull {
                needed: start_pos + tokens.len(),
                n_ctx,
            });
        }
        if let Some(&bad) = tokens.iter().find(|&&t| !self.model.is_valid_token(t)) {
            return Err(LlamaError::BadToken(bad));
        }
        let span = self.info.batch_span as usize;
        let cap = self.info.n_batch as usize;
        let mut pos = start_pos;
        let end = start_pos + tokens.len();
        while pos < end {
            self.settle_window(seq, pos)?;
            let span_end = (pos / span + 1) * span;
            let batch_end = end.min(span_end).min(pos + cap);
            self.batch.clear();
            for (i, &token) in tokens[pos - start_pos..batch_end - start_pos]
                .iter()
                .enumerate()
            {
                let p = pos + i;
                let logits = logits_last && p + 1 == end;
                self.batch
                    .add(LlamaToken(token), p as i32, &[seq], logits)
                    .map_err(|e| LlamaError::Decode {
                        pos: p,
                        detail: e.to_string(),
                    })?;
            }
            self.ctx
                .decode(&mut self.batch)
                .map_err(|e| LlamaError::Decode {
                    pos,
                    detail: e.to_string(),
                })?;
            self.logits_index = if logits_last && batch_end == end {
                Some(self.batch.n_tokens() - 1)
            } else {
                None
            };
            pos = batch_end;
            if after_batch(pos).is_break() {
                break;
            }
        }
        // On a device llama_decode only queues the work. Waiting here puts the compute in
        // the prefill's time, where the restore-or-recompute rate and the reports count
        // it, instead of in whatever next reads the context (a save's capture waited out
        // a whole 256-token batch on lavapipe). On the CPU there is nothing to wait for.
        self.ctx.synchronize();
        Ok(pos)
    }

    /// Decodes the tokens of several sequences in one llama.cpp batch (continuous batching:
    /// each entry is one sequence's next chunk). Returns, for each entry that asked for
    /// logits, the batch index of its last token, for [`Self::sample_at`].
    pub fn decode_many(
        &mut self,
        entries: &[BatchEntry<'_>],
    ) -> Result<Vec<Option<i32>>, LlamaError> {
        self.pristine = false;
        let n_ctx = self.info.n_ctx as usize;
        let total: usize = entries.iter().map(|e| e.tokens.len()).sum();
        let first_pos = entries.first().map_or(0, |e| e.start_pos);
        if total == 0 || total > self.info.n_batch as usize {
            return Err(LlamaError::Decode {
                pos: first_pos,
                detail: format!(
                    "a batch of {total} tokens (it must hold 1 to {})",
                    self.info.n_batch
                ),
            });
        }
        for e in entries {
            if e.start_pos + e.tokens.len() > n_ctx {
                return Err(LlamaError::ContextFull {
                    needed: e.start_pos + e.tokens.len(),
                    n_ctx,
                });
            }
            if let Some(&bad) = e.tokens.iter().find(|&&t| !self.model.is_valid_token(t)) {
                return Err(LlamaError::BadToken(bad));
            }
        }
        for e in entries {
            self.settle_window(e.seq, e.start_pos)?;
        }
        self.batch.clear();
        let mut indices = Vec::with_capacity(entries.len());
        for e in entries {
            for (i, &token) in e.tokens.iter().enumerate() {
                let p = e.start_pos + i;
                let logits = e.logits && i + 1 == e.tokens.len();
                self.batch
                    .add(LlamaToken(token), p as i32, &[e.seq], logits)
                    .map_err(|err| LlamaError::Decode {
                        pos: p,
                        detail: err.to_string(),
                    })?;
            }
            indices.push((e.logits && !e.tokens.is_empty()).then(|| self.batch.n_tokens() - 1));
        }
        self.logits_index = None;
        self.ctx
            .decode(&mut self.batch)
            .map_err(|err| LlamaError::Decode {
                pos: first_pos,
                detail: err.to_string(),
            })?;
        Ok(indices)
    }

    /// Lays the sliding window of `seq` out afresh before a batch that starts at `pos`, where
    /// [`window::settles_at`] says: its window is read out and loaded back, which llama.cpp
    /// puts in the lowest free cells in position order, so every context (whatever its ring
    /// size) and every restore ([`window::cells_start`]) holds the same cells in the same
    /// slots, and attention sums them in the same order.
    fn settle_window(&mut self, seq: i32, pos: usize) -> Result<(), LlamaError> {
        let n_swa = match self.model.facts().memory {
            MemoryKind::Attention { n_swa, .. } | MemoryKind::Hybrid { n_swa, .. } => n_swa,
            MemoryKind::Recurrent => 0,
        };
        if !window::settles_at(pos, n_swa as usize, self.info.page_tokens as usize)
            || self.seq_len(seq) != pos
        {
            return Ok(());
        }
        let rows = self.state_get(seq, KvCapture::SlidingWindowOnly)?;
        self.state_set(seq, &rows, KvCapture::SlidingWindowOnly)
            .map_err(|e| LlamaError::Decode {
                pos,
                detail: format!("laying out the sliding window again: {e}"),
            })
    }

    /// Logits at batch index `idx` of the last [`Self::decode_many`].
    pub fn logits_at(&self, idx: i32) -> &[f32] {
        self.ctx.get_logits_ith(idx)
    }

    /// Samples from the logits at batch index `idx` of the last [`Self::decode_many`].
    pub fn sample_at(&mut self, sampler: &mut super::Sampler, idx: i32) -> TokenId {
        sampler.sample(self.model, &self.ctx, idx)
    }

    /// Logits of the last token decoded with logits.
    pub fn logits(&self) -> Option<&[f32]> {
        self.logits_index.map(|i| self.ctx.get_logits_ith(i))
    }

    /// Samples the next token from the last logits.
    pub fn sample(&mut self, sampler: &mut super::Sampler) -> Option<TokenId> {
        let idx = self.logits_index?;
        Some(sampler.sample(self.model, &self.ctx, idx))
    }

    /// Number of positions held for `seq` (its highest position + 1; 0 when empty).
    pub fn seq_len(&self, seq: i32) -> usize {
        let max = self.ctx.kv_cache_seq_pos_max(seq);
        if max < 0 {
            0
        } else {
            max as usize + 1
        }
    }

    /// The lowest position `seq` holds cells for (None when empty). On a sliding-window
    /// model this is the window's start: cells that left it are reused by llama.cpp.
    pub fn seq_pos_min(&self, seq: i32) -> Option<usize> {
        let min = self.ctx.kv_cache_seq_pos_min(seq);
        (min >= 0).then_some(min as usize)
    }

    /// Drops every cell of `seq`.
    pub fn clear_seq(&mut self, seq: i32) {
        let _ = self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
        self.logits_index = None;
    }

    /// Drops a helper sequence's claim on its cells. Unlike [`Self::clear_seq`] this keeps
    /// the main sequence's logits: a scratch sequence never decodes.
    pub fn release_seq(&mut self, seq: i32) {
        let _ = self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
    }

    /// Empties the whole cache; the next cells are placed from slot 0 again, as in a fresh
    /// context (restores rely on that to land cells where an uninterrupted run had them).
    pub fn clear_all(&mut self) {
        if !self.pristine {
            self.ctx.clear_kv_cache();
            self.pristine = true;
        }
        self.logits_index = None;
    }

    /// Drops the cells of `seq` at positions `from..`, and says whether llama.cpp did: a
    /// memory that cannot cut at `from` (a recurrent state, which holds no earlier point)
    /// refuses and is left as it was. A caller that is refused recomputes from what it
    /// knows is right (see [`crate::kv::MemoryKind::cuts`]); it never goes on as if cut.
    #[must_use]
    pub fn truncate_seq(&mut self, seq: i32, from: usize) -> bool {
        let cut = self
            .ctx
            .clear_kv_cache_seq(Some(seq as u32), Some(from as u32), None);
        self.logits_index = None;
        matches!(cut, Ok(true))
    }

    /// Takes sequence `seq` back to a checkpoint of its first `keep` tokens
    /// ([`KvCapture::Checkpoint`] bytes): loads its recurrent state, then cuts the attention
    /// cells at `keep` (a hybrid's must hold at least those tokens' cells). Says whether
    /// llama.cpp did both and the sequence now holds exactly `keep` positions; on false the
    /// caller empties it and recomputes.
    #[must_use]
    pub fn load_checkpoint(&mut self, seq: i32, bytes: &[u8], keep: usize) -> bool {
        self.state_set(seq, bytes, KvCapture::Checkpoint).is_ok()
            && self.truncate_seq(seq, keep)
            && self.seq_len(seq) == keep
    }

    /// Makes `dst` share the cells of `src` at positions `p0..p1`. In a unified cache this
    /// only tags cells (no KV bytes move), which is how a page range is read out cheaply.
    /// Only for memory whose ranges can be shared ([`crate::kv::MemoryKind::shares_ranges`]):
    /// a recurrent memory ignores the range and copies the whole state.
    pub fn share_range(&mut self, src: i32, dst: i32, p0: usize, p1: usize) {
        self.pristine = false;
        self.ctx
            .copy_kv_cache_seq(src, dst, Some(p0 as u32), Some(p1 as u32))
            .ok();
    }

    /// llama.cpp's own one-file sequence save (`llama_state_seq_save_file`). kvrun does not
    /// use it for sessions; the restore benchmark measures it as the baseline.
    pub fn llama_seq_save_file(
        &self,
        path: &std::path::Path,
        seq: i32,
        tokens: &[TokenId],
    ) -> Result<usize, LlamaError> {
        let tokens: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t)).collect();
        self.ctx
            .state_seq_save_file(path, seq, &tokens)
            .map_err(|e| LlamaError::StateGet(e.to_string()))
    }

    /// llama.cpp's own one-file sequence load (baseline for the restore benchmark).
    pub fn llama_seq_load_file(
        &mut self,
        path: &std::path::Path,
        seq: i32,
        max_tokens: usize,
    ) -> Result<Vec<TokenId>, LlamaError> {
        self.logits_index = None;
        self.pristine = false;
        let (tokens, _) = self
            .ctx
            .state_seq_load_file(path, seq, max_tokens)
            .map_err(|e| LlamaError::StateGet(e.to_string()))?;
        Ok(tokens.into_iter().map(|t| t.0).collect())
    }

    /// llama.cpp asserts (aborting the process) on a sequence id outside the context.
    fn check_seq(&self, seq: i32) -> Result<(), LlamaError> {
        let n_seq_max = self.info.n_seq_max;
        if u32::try_from(seq).is_ok_and(|s| s < n_seq_max) {
            Ok(())
        } else {
            Err(LlamaError::NoSuchSequence { seq, n_seq_max })
        }
    }

    /// Bytes of sequence `seq`'s KV state (what `state_get` would return), without copying.
    pub fn state_size(&self, seq: i32) -> usize {
        if self.seq_len(seq) == 0 {
            return 0;
        }
        self.ctx
            .state_seq_get_size_ext(seq, KvCapture::Full.flags())
    }

    /// Reads sequence `seq`'s KV state blob (llama.cpp's serialization; see `kv::blob`).
    pub fn state_get(&self, seq: i32, what: KvCapture) -> Result<Vec<u8>, LlamaError> {
        self.check_seq(seq)?;
        let flags = what.flags();
        let size = self.ctx.state_seq_get_size_ext(seq, flags);
        if size == 0 {
            return Err(LlamaError::StateGet("llama.cpp reported no state".into()));
        }
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds exactly the size llama.cpp just reported for this sequence
        // and flag set, and nothing decodes in between (we hold &self).
        let written = unsafe {
            self.ctx
                .state_seq_get_data_ext(bytes.as_mut_ptr(), seq, flags)
        };
        if written != size {
            return Err(LlamaError::StateGet(format!(
                "llama.cpp wrote {written} bytes, expected {size}"
            )));
        }
        Ok(bytes)
    }

    /// Loads a KV state blob into sequence `seq`. Callers hand over bytes they assembled
    /// and validated against this context's layout (`kv::blob`), but any bytes are safe:
    /// a blob llama.cpp cannot use is an error, and the sequence is left empty.
    pub fn state_set(&mut self, seq: i32, blob: &[u8], what: KvCapture) -> Result<(), LlamaError> {
        self.check_seq(seq)?;
        self.logits_index = None;
        self.pristine = false;
        // SAFETY: llama-cpp-2 asks for "valid state data", but with these flags (never
        // LLAMA_STATE_SEQ_FLAGS_ON_DEVICE) llama.cpp reads through `llama_io_read_host`,
        // which bounds-checks every read against `blob.len()` and throws at its end; every
        // count, layer, type and row size read is checked against this context before a
        // tensor is written, cells are only placed in slots the cache found free, and
        // `llama_context::state_seq_set_data` catches the exceptions and returns 0. The one
        // precondition it asserts (aborting), a sequence id in range, is checked above.
        let ok = unsafe { self.ctx.state_seq_set_data_ext(blob, seq, what.flags()) };
        if ok {
            Ok(())
        } else {
            Err(LlamaError::StateSet { size: blob.len() })
        }
    }
}
