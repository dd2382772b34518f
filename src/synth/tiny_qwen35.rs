//! The tiny Qwen3.5 (`qwen35`): gated delta-net layers (linear attention whose state is a
//! matrix per head) between gated full-attention layers that rope with interleaved M-RoPE.
//! llama.cpp gives it hybrid memory: a KV cache for the attention layers, a convolution
//! and a delta-net state per sequence for the rest.
//!
//! Names, shapes and keys follow the pinned llama.cpp: src/models/qwen35.cpp
//! (`load_arch_hparams`, `load_arch_tensors`, `build_layer_attn`, `build_layer_attn_linear`),
//! src/llama-arch.cpp (tensor and key names), src/llama-hparams.cpp (`n_embd_r`,
//! `n_embd_s`: the state sizes) and ggml's `gated_delta_net` (the update below).
//!
//! A delta-net head forgets in two ways. Per token its state `S` decays by `exp(g)`, with
//! `g = softplus(alpha + dt_bias) * ssm_a`, and the new key `k` overwrites what `S` held
//! along `k`: `S += beta * k (v - S^T k)^T`, which erases about `beta * (2 - beta) /
//! d_state` of an old entry's squared weight per token (unit keys spread over `d_state`
//! directions). Random weights would lose a prompt's opening within a few tokens either
//! way, and then an exactness check passes even when a restore is broken. So the heads'
//! `ssm_a` spread from fast to nearly none, the slow heads write gently (small `beta`,
//! through a constant channel, below) and the heads are wide: the slowest holds the first
//! token after thousands. With the attention layers' outputs zeroed, swapping the first
//! token of a 2,592-token prompt still moved the answer's log-probabilities by 0.011 (the
//! memory test asks for 0.001); with 16-wide heads and `beta` near 0.5, by 0.0005.

use super::recurrent_parts::{
    add_filled, decay_spread, ffn_sized, sized_header, ssm_conv1d, CONTEXT, D_CONV, N_EMBD, N_FF,
    N_HEAD, N_HEAD_KV, N_LAYER,
};
use super::rng::SplitMix64;
use super::tiny::{add_tiny_tokenizer, CHATML_TEMPLATE};
use super::writer::GgufWriter;

/// A qwen35 model's sizes: the tests' tiny one, or a benchmark shape with a released
/// model's cache.
#[derive(Debug, Clone)]
pub struct Qwen35Spec {
    pub name: String,
    pub context_length: u32,
    pub n_layer: u32,
    /// The residual stream's width.
    pub n_embd: u32,
    pub n_ff: u32,
    /// Every this many layers one attends (`full_attention_interval`).
    pub full_attention_interval: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    /// An attention head's width (`attention.key_length`, `value_length`).
    pub head_dim: u32,
    /// Rotated dimensions of a head, and `rope.dimension_sections`: rotated pairs per
    /// position component `[t, h, w, e]`, interleaved (IMROPE), summing to `n_rot / 2`. A
    /// text token's position is `[p, p, p, 0]`, so every pair turns with `p`.
    pub n_rot: u32,
    pub rope_sections: [i32; 4],
    /// A delta-net head's key and value width (`ssm.state_size`): each head's state is
    /// `d_state x d_state`.
    pub d_state: u32,
    /// Value heads (`ssm.time_step_rank`), each with its own decay and state.
    pub n_v_head: u32,
    /// Key and query heads (`ssm.group_count`), each shared by `n_v_head / n_k_head` value
    /// heads.
    pub n_k_head: u32,
}

impl Qwen35Spec {
    /// The tests' tiny qwen35 (about 1 MB): every second layer attends (the released models
    /// use 4), wide delta-net heads so that a key erases little of what other keys wrote,
    /// and heads that rope half their width (the released models a quarter).
    pub fn tiny() -> Self {
        let head_dim = N_EMBD / N_HEAD;
        Self {
            name: "kvrun-tiny-qwen35".into(),
            context_length: CONTEXT,
            n_layer: N_LAYER,
            n_embd: N_EMBD,
            n_ff: N_FF,
            full_attention_interval: 2,
            n_head: N_HEAD,
            n_head_kv: N_HEAD_KV,
            head_dim,
            n_rot: head_dim / 2,
            rope_sections: [2, 1, 1, 0],
            d_state: 64,
            n_v_head: 4,
            n_k_head: 2,
        }
    }

    /// Qwen3.5-27B's cache in a narrow model: its 64 layers, one in 4 attending with 4 KV
    /// heads of 256 (64 KiB of f16 KV per token), 48 gated delta-net layers of 48 value and
    /// 16 key heads of 128 (150 MiB of state per sequence) and its M-RoPE sections; but a
    /// 256-wide residual stream, 4 query heads and a 512-wide FFN, so its weights take about
    /// 0.6 GiB and a long prefill takes minutes on a CPU, not hours. A
    /// restore reads, checks and loads what the cache holds, which is the real model's.
    pub fn qwen35_27b_cache() -> Self {
        Self {
            name: "kvrun-bench-qwen35-27b-cache".into(),
            context_length: 65536,
            n_layer: 64,
            n_embd: 256,
            n_ff: 512,
            full_attention_interval: 4,
            n_head: 4,
            n_head_kv: 4,
            head_dim: 256,
            n_rot: 64,
            rope_sections: [11, 11, 10, 0],
            d_state: 128,
            n_v_head: 48,
            n_k_head: 16,
        }
    }

    /// `ssm.inner_size`: qwen35.cpp's graph takes a value head's width as
    /// `d_inner / n_v_heads`, its loader as `d_state`, so the two agree.
    fn d_inner(&self) -> u32 {
        self.d_state * self.n_v_head
    }
}

/// The residual stream's channel 0 is this constant: every token embedding has it and no
/// layer writes to it (their output rows 0 are zero). qwen35 gives `beta` no bias, and
/// this channel is one.
const BIAS_CHANNEL: f32 = 0.08;
/// The slow heads' `beta` weight on that channel. Token embeddings have an RMS near
/// `BIAS_CHANNEL`, so in the first layer `beta` is about `sigmoid(-3) = 0.05`; deeper, where
/// the stream is larger, nearer 0.5.
const SLOW_BETA_BIAS: f32 = -3.0;

/// A qwen35 model of `spec`'s sizes.
pub(crate) fn qwen35_writer(spec: &Qwen35Spec, seed: u64) -> GgufWriter {
    let a = "qwen35";
    let (mut w, vocab) = sized_header(
        a,
        &spec.name,
        spec.n_embd,
        spec.n_layer,
        spec.context_length,
    );
    let n_vocab = vocab.tokens.len() as u32;
    w.add_u32(format!("{a}.attention.head_count"), spec.n_head)
        .add_u32(format!("{a}.attention.head_count_kv"), spec.n_head_kv)
        .add_u32(format!("{a}.attention.key_length"), spec.head_dim)
        .add_u32(format!("{a}.attention.value_length"), spec.head_dim)
        .add_u32(format!("{a}.feed_forward_length"), spec.n_ff)
        .add_f32(format!("{a}.rope.freq_base"), 10000.0)
        .add_u32(format!("{a}.rope.dimension_count"), spec.n_rot)
        .add_i32_array(format!("{a}.rope.dimension_sections"), &spec.rope_sections)
        .add_u32(
            format!("{a}.full_attention_interval"),
            spec.full_attention_interval,
        )
        .add_u32(format!("{a}.ssm.conv_kernel"), D_CONV)
        .add_u32(format!("{a}.ssm.inner_size"), spec.d_inner())
        .add_u32(format!("{a}.ssm.state_size"), spec.d_state)
        .add_u32(format!("{a}.ssm.time_step_rank"), spec.n_v_head)
        .add_u32(format!("{a}.ssm.group_count"), spec.n_k_head);
    add_tiny_tokenizer(&mut w, &vocab, false, CHATML_TEMPLATE);

    let mut rng = SplitMix64(seed);
    let e = spec.n_embd;
    // A layer's output projection: zero into channel 0, which stays the constant.
    let mut matrix = |w: &mut GgufWriter, name: String, ne0: u32, ne1: u32| {
        let mut values = rng.matrix(ne0, ne1);
        let writes_residual = ["ssm_out", "attn_output", "ffn_down"]
            .iter()
            .any(|t| name.contains(t));
        if writes_residual && ne1 == e {
            values[..ne0 as usize].fill(0.0);
        }
        w.add_tensor_f16(name, &[ne0.into(), ne1.into()], &values);
    };
    let mut embd = SplitMix64(seed ^ 0xe4bd).matrix(e, n_vocab);
    for row in embd.chunks_mut(e as usize) {
        row[0] = BIAS_CHANNEL;
    }
    w.add_tensor_f16("token_embd.weight", &[e.into(), n_vocab.into()], &embd);
    for i in 0..spec.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}");
        add_filled(&mut w, name("attn_norm.weight"), e, 1.0);
        add_filled(&mut w, name("post_attention_norm.weight"), e, 1.0);
        if (i + 1) % spec.full_attention_interval == 0 {
            // build_layer_attn: Q and its sigmoid gate interleaved per head in one
            // projection, RMS-normed Q and K.
            let (head_dim, n_head) = (spec.head_dim, spec.n_head);
            let kv = head_dim * spec.n_head_kv;
            matrix(&mut w, name("attn_q.weight"), e, 2 * head_dim * n_head);
            matrix(&mut w, name("attn_k.weight"), e, kv);
            matrix(&mut w, name("attn_v.weight"), e, kv);
            matrix(&mut w, name("attn_output.weight"), head_dim * n_head, e);
            add_filled(&mut w, name("attn_q_norm.weight"), head_dim, 1.0);
            add_filled(&mut w, name("attn_k_norm.weight"), head_dim, 1.0);
        } else {
            gated_delta_net(&mut w, &mut matrix, spec, i, seed);
        }
        ffn_sized(&mut w, &mut matrix, i, e, spec.n_ff);
    }
    add_filled(&mut w, "output_norm.weight".into(), e, 1.0);
    matrix(&mut w, "output.weight".into(), e, n_vocab);
    w
}

/// One gated delta-net layer's tensors (qwen35.cpp `load_arch_tensors`, the recurrent
/// branch): `attn_qkv` projects to `[q, k, v]`, which the short convolution mixes over the
/// last `D_CONV` tokens; `attn_gate` to `z`, which gates the normed output.
fn gated_delta_net(
    w: &mut GgufWriter,
    matrix: &mut impl FnMut(&mut GgufWriter, String, u32, u32),
    spec: &Qwen35Spec,
    layer: u32,
    seed: u64,
) {
    let (e, n_v_head) = (spec.n_embd, spec.n_v_head);
    let name = |t: &str| format!("blk.{layer}.{t}");
    let key_dim = spec.d_state * spec.n_k_head;
    let value_dim = spec.d_inner();
    let conv_dim = 2 * key_dim + value_dim;
    matrix(w, name("attn_qkv.weight"), e, conv_dim);
    matrix(w, name("attn_gate.weight"), e, value_dim);
    ssm_conv1d(w, layer, seed ^ (0x9d17_0000 + u64::from(layer)), conv_dim);
    // g = softplus(alpha + dt_bias) * ssm_a: a negative bias keeps softplus small, and head
    // h's state decays by exp(g) per token.
    add_filled(w, name("ssm_dt.bias"), n_v_head, -1.0);
    w.add_tensor_f32(name("ssm_a"), &[n_v_head.into()], &decay_spread(n_v_head));
    // beta = sigmoid(x·W): random for the fast heads; for the slow half only the constant
    // channel, pulled negative so they write gently and so erase little.
    let mut beta = vec![0.0f32; (e * n_v_head) as usize];
    let mut rng = SplitMix64(seed ^ (0xbe7a_0000 + u64::from(layer)));
    for (h, row) in beta.chunks_mut(e as usize).enumerate() {
        if h < (n_v_head / 2) as usize {
            row.iter_mut()
                .for_each(|v| *v = rng.uniform() / (e as f32).sqrt());
        } else {
            row[0] = SLOW_BETA_BIAS;
        }
    }
    w.add_tensor_f16(name("ssm_beta.weight"), &[e.into(), n_v_head.into()], &beta);
    matrix(w, name("ssm_alpha.weight"), e, n_v_head);
    add_filled(w, name("ssm_norm.weight"), spec.d_state, 1.0);
    matrix(w, name("ssm_out.weight"), value_dim, e);
}
