//! `bench restore --synthetic`: a long session built without prefill, so restore can be
//! timed at lengths and model sizes where prefill on this machine would take hours (a
//! 32k-token session of the 8B shape).
//!
//! The KV rows are deterministic noise, not what the model would compute for the tokens:
//! a state blob of the context's own layout (probed from llama.cpp, so every header, type
//! and row size is the real one) is laid out with [`BlobFrame`], its rows filled with
//! finite f16 values, loaded with `state_set`, and then saved by kvrun's normal save path
//! (and by llama.cpp's `state_seq_save_file` for the side-by-side). Restore reads, hashes,
//! copies and loads bytes without looking at their values, so its timings hold for real
//! KV of the same shape; any figure that depends on the values (log-probabilities, the
//! generated tokens) means nothing on such a session.

use std::time::Instant;

use anyhow::{bail, Context as _, Result};

use crate::kv::blob::{BlobFrame, FrameSection};
use crate::kv::layout::{BASE, SWA};
use crate::kv::KvLayout;
use crate::llama::{Context, Model, TokenId};
use crate::sequence::{NoObserver, Sequence, SyncObserver};
use crate::session::capture::{self, RestorePhases, Slot};
use crate::session::catalog::SessionCatalog;
use crate::session::live::{ConversationState, SaveReport, SessionObserver};
use crate::session::SessionBinding;
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};

/// A raw-text session with no chat messages, as the benchmarks save them.
pub(super) const RAW_SESSION: ConversationState<'static> = ConversationState {
    messages: &[],
    rendered_len: 0,
    raw: true,
    template: None,
    cache_miss: None,
};

/// What building a synthetic session cost: making and loading its blob, and kvrun's save.
pub(super) struct SyntheticSession {
    pub build_s: f64,
    pub saved: SaveReport,
}

/// Puts a session of `tokens` into `ctx` (its KV for all but the last token, which stays
/// pending as after a real prefill) from noise rows, and saves it as `name` in `catalog`.
pub(super) fn synthetic_session(
    model: &Model,
    model_path: &std::path::Path,
    ctx: &mut Context<'_>,
    catalog: &SessionCatalog,
    name: &str,
    llama: &LlamaSettings,
    tokens: &[TokenId],
) -> Result<SyntheticSession> {
    let started = Instant::now();
    let Some(&first) = tokens.first() else {
        bail!("a synthetic session needs tokens");
    };
    let lock = catalog.lock(name)?;
    let sessions = SessionBinding::new(catalog, model_path, model, ctx, llama.clone())?;
    let mut live = sessions.open(name, lock, None, SamplingSettings::greedy());
    let slot = live.slot();
    let n_swa = model.facts().n_swa;
    let layout = capture::probe_layout(ctx, slot, model.facts().memory, first)?;
    let kv_len = tokens.len() - 1;
    let page = DEFAULT_PAGE_TOKENS as usize;
    if layout.is_iswa() {
        // A save keeps each page's window rows as the page is filled during prefill (they
        // leave llama.cpp's ring later), so the pages a restore's window needs are loaded
        // and captured the same way: the state as it was when each of them was filled.
        let full = kv_len / page;
        let first = (full * page).saturating_sub(n_swa as usize) / page;
        let mut observer = SessionObserver {
            session: &mut live,
            inner: &mut NoObserver,
        };
        for k in first..full {
            load_noise(ctx, slot, &layout, (k + 1) * page)?;
            observer.page_filled(ctx, k * page..(k + 1) * page, &tokens[..(k + 1) * page])?;
        }
    }
    load_noise(ctx, slot, &layout, kv_len)?;
    let build_s = started.elapsed().as_secs_f64();
    let seq = Sequence::restored(tokens.to_vec(), kv_len).in_seq(slot.seq);
    let saved = live.save(ctx, &seq, RAW_SESSION)?;
    Ok(SyntheticSession { build_s, saved })
}

/// Loads noise KV for positions `0..end` into the slot's emptied sequence: every
/// full-attention cell, and the sliding-window cells the ring holds at that point.
fn load_noise(ctx: &mut Context<'_>, slot: Slot, layout: &KvLayout, end: usize) -> Result<()> {
    let mut sections = vec![FrameSection {
        layout: &layout.sections[BASE],
        first_pos: 0,
        chunk_cells: vec![end],
    }];
    if let Some(swa) = layout.sections.get(SWA) {
        let start = end.saturating_sub(layout.n_swa as usize);
        sections.push(FrameSection {
            layout: swa,
            first_pos: start,
            chunk_cells: vec![end - start],
        });
    }
    let mut frame = BlobFrame::new(slot.seq, &sections).map_err(|e| {
        anyhow::anyhow!("{e}; a synthetic session needs flash attention (--flash-attn on)")
    })?;
    let mut seed = 0x6b76_7275_6e5f_7379u64 ^ end as u64;
    for area in frame.chunk_areas().into_iter().flatten().flatten() {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        fill_f16_noise(area, seed);
    }
    let blob = frame.into_bytes();
    capture::load_blob(ctx, slot, &blob, &mut RestorePhases::default())
        .context("llama.cpp refused the synthetic KV state")
}

/// Fills `buf` with pseudo-random f16 values of magnitude below 2 (no infinities, no
/// NaNs: the exponent's top bit is always clear), reproducibly from `seed`.
pub(super) fn fill_f16_noise(buf: &mut [u8], seed: u64) {
    // xorshift64*: fast enough that filling GiBs costs less than the memory it touches.
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) & 0xbfff_bfff_bfff_bfff
    };
    let mut words = buf.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&next().to_le_bytes());
    }
    let rest = words.into_remainder();
    let last = next().to_le_bytes();
    rest.copy_from_slice(&last[..rest.len()]);
}

#[cfg(test)]
mod tests {
    use super::fill_f16_noise;

    #[test]
    fn noise_is_finite_f16_below_two_and_reproducible() {
        let mut a = vec![0u8; 4099];
        let mut b = vec![0u8; 4099];
        fill_f16_noise(&mut a, 7);
        fill_f16_noise(&mut b, 7);
        assert_eq!(a, b);
        for pair in a.chunks_exact(2) {
            let bits = u16::from_le_bytes([pair[0], pair[1]]);
            let exponent = (bits >> 10) & 0x1f;
            assert!(exponent < 16, "{bits:#06x} is 2 or more, or not finite");
        }
        fill_f16_noise(&mut b, 8);
        assert_ne!(a, b);
    }
}
