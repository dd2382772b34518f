//! A Granite 4 hybrid (`granitehybrid`) of a benchmark's sizes: Mamba2 layers with a few
//! attention layers among them, each followed by an FFN. llama.cpp gives it hybrid memory:
//! a KV cache for the attention layers and a Mamba2 state per sequence for the rest.
//!
//! Names, shapes and keys follow the pinned llama.cpp: src/models/granite-hybrid.cpp
//! (`load_arch_hparams`, `load_arch_tensors`). Its loader ties the mixer's width to the
//! stream's (`2 * n_embd == d_inner`), so a narrow model with a released model's state
//! widens the state per channel (`d_state`) instead: the state of a layer is
//! `d_state x d_inner` either way.

use super::recurrent_parts::{add_filled, ffn_sized, mamba2_mixer, sized_header, MambaDims};
use super::rng::SplitMix64;
use super::tiny::{add_tiny_tokenizer, CHATML_TEMPLATE};
use super::writer::GgufWriter;

/// A granitehybrid model's sizes.
#[derive(Debug, Clone)]
pub struct GraniteSpec {
    pub name: String,
    pub context_length: u32,
    pub n_layer: u32,
    /// The layers that attend (the rest are Mamba2 mixers).
    pub attention_layers: Vec<u32>,
    /// The residual stream's width; the mixers are twice as wide.
    pub n_embd: u32,
    pub n_ff: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    /// An attention head's width (`attention.key_length`, `value_length`).
    pub head_dim: u32,
    /// A Mamba2 channel's state width (`ssm.state_size`).
    pub d_state: u32,
    /// Mamba2 heads (`ssm.time_step_rank`).
    pub n_ssm_head: u32,
}

impl GraniteSpec {
    /// Granite-4.0-H-Small's cache in a narrow model: its 40 layers, 4 of them attending
    /// with 8 KV heads of 128 (16 KiB of f16 KV per token), and 36 Mamba2 layers whose state
    /// is 4 MiB each, as the released model's (`d_state` 128 over 8,192 channels; here 2,048
    /// over 512): 146 MiB per sequence, the released model's 148 MiB but for a narrower
    /// convolution state. A 256-wide stream and a 512-wide dense FFN (the released model's
    /// is a mixture of experts) keep the weights near 0.2 GiB.
    pub fn granite_4_h_small_cache() -> Self {
        Self {
            name: "kvrun-bench-granite-4-h-small-cache".into(),
            context_length: 65536,
            n_layer: 40,
            attention_layers: vec![5, 15, 25, 35],
            n_embd: 256,
            n_ff: 512,
            n_head: 8,
            n_head_kv: 8,
            head_dim: 128,
            d_state: 2048,
            n_ssm_head: 8,
        }
    }

    fn mamba(&self) -> MambaDims {
        MambaDims {
            n_embd: self.n_embd,
            d_inner: 2 * self.n_embd,
            d_state: self.d_state,
            n_group: 1,
            n_head: self.n_ssm_head,
        }
    }
}

/// A granitehybrid model of `spec`'s sizes, random f16 weights from `seed`.
pub fn granite_writer(spec: &GraniteSpec, seed: u64) -> GgufWriter {
    let a = "granitehybrid";
    let (mut w, vocab) = sized_header(
        a,
        &spec.name,
        spec.n_embd,
        spec.n_layer,
        spec.context_length,
    );
    let n_vocab = vocab.tokens.len() as u32;
    let attends = |i: u32| spec.attention_layers.contains(&i);
    // A layer is recurrent where its KV head count is 0.
    let kv: Vec<i32> = (0..spec.n_layer)
        .map(|i| if attends(i) { spec.n_head_kv as i32 } else { 0 })
        .collect();
    let mamba = spec.mamba();
    mamba.add_keys(&mut w, a);
    w.add_u32(format!("{a}.attention.head_count"), spec.n_head)
        .add_i32_array(format!("{a}.attention.head_count_kv"), &kv)
        .add_u32(format!("{a}.attention.key_length"), spec.head_dim)
        .add_u32(format!("{a}.attention.value_length"), spec.head_dim)
        .add_u32(format!("{a}.feed_forward_length"), spec.n_ff)
        .add_f32(format!("{a}.rope.freq_base"), 10000.0);
    add_tiny_tokenizer(&mut w, &vocab, false, CHATML_TEMPLATE);

    let mut rng = SplitMix64(seed);
    let e = spec.n_embd;
    let mut matrix = |w: &mut GgufWriter, name: String, ne0: u32, ne1: u32| {
        let values = rng.matrix(ne0, ne1);
        w.add_tensor_f16(name, &[ne0.into(), ne1.into()], &values);
    };
    matrix(&mut w, "token_embd.weight".into(), e, n_vocab);
    for i in 0..spec.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}");
        add_filled(&mut w, name("attn_norm.weight"), e, 1.0);
        if attends(i) {
            let q = spec.head_dim * spec.n_head;
            let kv = spec.head_dim * spec.n_head_kv;
            matrix(&mut w, name("attn_q.weight"), e, q);
            matrix(&mut w, name("attn_k.weight"), e, kv);
            matrix(&mut w, name("attn_v.weight"), e, kv);
            matrix(&mut w, name("attn_output.weight"), q, e);
        } else {
            mamba2_mixer(&mut w, &mut matrix, &mamba, i, seed);
        }
        add_filled(&mut w, name("ffn_norm.weight"), e, 1.0);
        ffn_sized(&mut w, &mut matrix, i, e, spec.n_ff);
    }
    add_filled(&mut w, "output_norm.weight".into(), e, 1.0);
    matrix(&mut w, "output.weight".into(), e, n_vocab);
    w
}
