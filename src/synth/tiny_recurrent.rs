//! Tiny random-weight models whose memory is not (only) per-token attention KV: a pure
//! Mamba2 model (recurrent memory), a Granite 4 style hybrid (Mamba2 layers between
//! attention layers), an LFM2 hybrid (short convolutions between attention layers) and a
//! Qwen3.5 hybrid (gated delta-net layers between attention layers, in `tiny_qwen35.rs`).
//! Tests run kvrun's save, restore and serve paths on them.
//!
//! Names, shapes and keys follow the pinned llama.cpp: src/models/mamba2.cpp,
//! src/models/granite-hybrid.cpp and src/models/lfm2.cpp (`load_arch_hparams`,
//! `load_arch_tensors`), src/models/mamba-base.cpp (`build_mamba2_layer`, which fixes the
//! in-projection's layout `[z, x, B, C, dt]`) and src/llama-arch.cpp (tensor names).
//!
//! Random weights forget a prompt's opening within a few tokens unless the state decays
//! slowly, and then an exactness check passes even when a restore is broken. So the heads'
//! decay rates `A` spread from fast to nearly none (a state that still holds the first
//! token after thousands), and a test checks that swapping a prompt's opening changes the
//! answer.

use std::io;
use std::path::Path;

use super::recurrent_parts::{
    conv_kernel, ffn, mamba2_mixer, tiny_header, MambaDims, N_EMBD, N_FF, N_HEAD, N_HEAD_KV,
    N_LAYER,
};
use super::rng::SplitMix64;
use super::tiny::{add_tiny_tokenizer, CHATML_TEMPLATE};
use super::writer::GgufWriter;

/// Which memory the tiny model's layers have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TinyRecurrentArch {
    /// `mamba2`: every layer a Mamba2 mixer; llama.cpp's recurrent memory only.
    Mamba2,
    /// `granitehybrid`: Mamba2 and attention layers alternating, each followed by an FFN;
    /// llama.cpp's hybrid memory (a KV cache for the attention layers, recurrent state for
    /// the rest).
    GraniteHybrid,
    /// `lfm2`: short-convolution and attention layers alternating, each followed by an
    /// FFN; llama.cpp's hybrid memory with a convolution state of the last few tokens.
    Lfm2,
    /// `lfm2` whose attention layers keep a sliding window of [`N_SWA`] tokens: llama.cpp's
    /// hybrid memory with an iSWA attention cache.
    Lfm2Swa,
    /// `qwen35` (Qwen3.5): gated delta-net layers (a matrix state per head) and gated
    /// full-attention layers with interleaved M-RoPE, each followed by an FFN; llama.cpp's
    /// hybrid memory. Written by `tiny_qwen35.rs`.
    Qwen35,
}

impl TinyRecurrentArch {
    pub fn gguf_name(self) -> &'static str {
        match self {
            Self::Mamba2 => "mamba2",
            Self::GraniteHybrid => "granitehybrid",
            Self::Lfm2 | Self::Lfm2Swa => "lfm2",
            Self::Qwen35 => "qwen35",
        }
    }

    fn is_lfm2(self) -> bool {
        matches!(self, Self::Lfm2 | Self::Lfm2Swa)
    }
}

// Shapes: small, but every dimension distinct from the others so a wrong stride shows.
/// granitehybrid supports only an expansion factor of 2 (`GGML_ASSERT(2 * n_embd == d_inner)`).
const D_INNER: u32 = 2 * N_EMBD;
const D_STATE: u32 = 16;
/// Mamba2 heads (`ssm.time_step_rank`): head_dim = D_INNER / 8 = 16.
const N_SSM_HEAD: u32 = 8;
const N_GROUP: u32 = 1;
/// The tiny Mamba2 and Granite mixers' sizes.
const MAMBA: MambaDims = MambaDims {
    n_embd: N_EMBD,
    d_inner: D_INNER,
    d_state: D_STATE,
    n_group: N_GROUP,
    n_head: N_SSM_HEAD,
};
/// LFM2's convolution window (`shortconv.l_cache`).
const L_CACHE: u32 = 3;
/// [`TinyRecurrentArch::Lfm2Swa`]'s window.
const N_SWA: u32 = 128;

/// Write the tiny model of `arch` to `path` (about 1 MB).
pub fn write_tiny_recurrent(path: &Path, arch: TinyRecurrentArch, seed: u64) -> io::Result<()> {
    tiny_recurrent_writer(arch, seed).write_file(path)
}

pub fn tiny_recurrent_writer(arch: TinyRecurrentArch, seed: u64) -> GgufWriter {
    if arch == TinyRecurrentArch::Qwen35 {
        return super::tiny_qwen35::qwen35_writer(&super::tiny_qwen35::Qwen35Spec::tiny(), seed);
    }
    let a = arch.gguf_name();
    let (mut w, vocab) = tiny_header(a);
    let n_vocab = vocab.tokens.len() as u32;
    if arch == TinyRecurrentArch::Lfm2Swa {
        w.add_u32(format!("{a}.attention.sliding_window"), N_SWA);
    }
    if arch.is_lfm2() {
        w.add_u32(format!("{a}.shortconv.l_cache"), L_CACHE);
    } else {
        MAMBA.add_keys(&mut w, a);
    }
    if arch != TinyRecurrentArch::Mamba2 {
        // A layer is recurrent where its KV head count is 0: layers 1 and 3 attend.
        let kv: Vec<i32> = (0..N_LAYER)
            .map(|i| {
                if is_attention(arch, i) {
                    N_HEAD_KV as i32
                } else {
                    0
                }
            })
            .collect();
        w.add_u32(format!("{a}.attention.head_count"), N_HEAD)
            .add_i32_array(format!("{a}.attention.head_count_kv"), &kv)
            .add_u32(format!("{a}.feed_forward_length"), N_FF)
            .add_f32(format!("{a}.rope.freq_base"), 10000.0);
    }
    add_tiny_tokenizer(&mut w, &vocab, false, CHATML_TEMPLATE);

    let mut rng = SplitMix64(seed);
    let (e, v) = (N_EMBD, n_vocab);
    let ones = |n: u32| vec![1.0f32; n as usize];
    let mut matrix = |w: &mut GgufWriter, name: String, ne0: u32, ne1: u32| {
        let values = rng.matrix(ne0, ne1);
        w.add_tensor_f16(name, &[ne0.into(), ne1.into()], &values);
    };
    matrix(&mut w, "token_embd.weight".into(), e, v);
    let head_dim = N_EMBD / N_HEAD;
    for i in 0..N_LAYER {
        let name = |t: &str| format!("blk.{i}.{t}");
        w.add_tensor_f32(name("attn_norm.weight"), &[e.into()], &ones(e));
        if is_attention(arch, i) {
            let kv = head_dim * N_HEAD_KV;
            if arch.is_lfm2() {
                let norm = ones(head_dim);
                w.add_tensor_f32(name("attn_q_norm.weight"), &[head_dim.into()], &norm);
                w.add_tensor_f32(name("attn_k_norm.weight"), &[head_dim.into()], &norm);
            }
            matrix(&mut w, name("attn_q.weight"), e, e);
            matrix(&mut w, name("attn_k.weight"), e, kv);
            matrix(&mut w, name("attn_v.weight"), e, kv);
            matrix(&mut w, name("attn_output.weight"), e, e);
        } else if arch.is_lfm2() {
            // lfm2.cpp: a depthwise convolution over the last L_CACHE tokens between an
            // in- and an out-projection.
            let conv = conv_kernel(seed ^ (0xc0de_0000 + u64::from(i)), L_CACHE, e);
            w.add_tensor_f32(
                name("shortconv.conv.weight"),
                &[L_CACHE.into(), e.into()],
                &conv,
            );
            matrix(&mut w, name("shortconv.in_proj.weight"), e, 3 * e);
            matrix(&mut w, name("shortconv.out_proj.weight"), e, e);
        } else {
            mamba2_mixer(&mut w, &mut matrix, &MAMBA, i, seed);
        }
        if arch != TinyRecurrentArch::Mamba2 {
            w.add_tensor_f32(name("ffn_norm.weight"), &[e.into()], &ones(e));
            ffn(&mut w, &mut matrix, i);
        }
    }
    // LFM2 names its final norm `token_embd_norm` (llama-arch.cpp: "fix for wrong tensor
    // name").
    let output_norm = match arch {
        TinyRecurrentArch::Lfm2 | TinyRecurrentArch::Lfm2Swa => "token_embd_norm.weight",
        _ => "output_norm.weight",
    };
    w.add_tensor_f32(output_norm, &[e.into()], &ones(e));
    matrix(&mut w, "output.weight".into(), e, v);
    w
}

fn is_attention(arch: TinyRecurrentArch, layer: u32) -> bool {
    arch != TinyRecurrentArch::Mamba2 && layer % 2 == 1
}
