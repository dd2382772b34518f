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
    add_filled, decay_spread, ffn, ssm_conv1d, tiny_header, D_CONV, N_EMBD, N_FF, N_HEAD,
    N_HEAD_KV, N_LAYER,
};
use super::rng::SplitMix64;
use super::tiny::{add_tiny_tokenizer, CHATML_TEMPLATE};
use super::writer::GgufWriter;

/// Every second layer attends (`full_attention_interval`; the released models use 4).
const FULL_ATTENTION_INTERVAL: u32 = 2;
/// A delta-net head's key and value width (`ssm.state_size`): each head's state is
/// `D_STATE x D_STATE`. Wide, so that a key erases little of what other keys wrote.
const D_STATE: u32 = 64;
/// `ssm.inner_size`: qwen35.cpp's graph takes a value head's width as
/// `d_inner / n_v_heads`, its loader as `d_state`, so the two agree.
const D_INNER: u32 = D_STATE * N_V_HEAD;
/// Value heads (`ssm.time_step_rank`), each with its own decay and state.
const N_V_HEAD: u32 = 4;
/// Key and query heads (`ssm.group_count`), each shared by `N_V_HEAD / N_K_HEAD` value
/// heads.
const N_K_HEAD: u32 = 2;
/// An attention head's width; the released models rope a quarter of it, this one half.
const HEAD_DIM: u32 = N_EMBD / N_HEAD;
const N_ROT: u32 = HEAD_DIM / 2;
/// `rope.dimension_sections`: rotated pairs per position component `[t, h, w, e]`,
/// interleaved (IMROPE) and summing to `N_ROT / 2` as the released `[11, 11, 10, 0]` sums
/// to 64 / 2. A text token's position is `[p, p, p, 0]`, so every pair turns with `p`.
const ROPE_SECTIONS: [i32; 4] = [2, 1, 1, 0];
/// The residual stream's channel 0 is this constant: every token embedding has it and no
/// layer writes to it (their output rows 0 are zero). qwen35 gives `beta` no bias, and
/// this channel is one.
const BIAS_CHANNEL: f32 = 0.08;
/// The slow heads' `beta` weight on that channel. Token embeddings have an RMS near
/// `BIAS_CHANNEL`, so in the first layer `beta` is about `sigmoid(-3) = 0.05`; deeper, where
/// the stream is larger, nearer 0.5.
const SLOW_BETA_BIAS: f32 = -3.0;

/// The tiny qwen35 (about 1 MB).
pub(super) fn qwen35_writer(seed: u64) -> GgufWriter {
    let a = "qwen35";
    let (mut w, vocab) = tiny_header(a);
    let n_vocab = vocab.tokens.len() as u32;
    w.add_u32(format!("{a}.attention.head_count"), N_HEAD)
        .add_u32(format!("{a}.attention.head_count_kv"), N_HEAD_KV)
        .add_u32(format!("{a}.attention.key_length"), HEAD_DIM)
        .add_u32(format!("{a}.attention.value_length"), HEAD_DIM)
        .add_u32(format!("{a}.feed_forward_length"), N_FF)
        .add_f32(format!("{a}.rope.freq_base"), 10000.0)
        .add_u32(format!("{a}.rope.dimension_count"), N_ROT)
        .add_i32_array(format!("{a}.rope.dimension_sections"), &ROPE_SECTIONS)
        .add_u32(
            format!("{a}.full_attention_interval"),
            FULL_ATTENTION_INTERVAL,
        )
        .add_u32(format!("{a}.ssm.conv_kernel"), D_CONV)
        .add_u32(format!("{a}.ssm.inner_size"), D_INNER)
        .add_u32(format!("{a}.ssm.state_size"), D_STATE)
        .add_u32(format!("{a}.ssm.time_step_rank"), N_V_HEAD)
        .add_u32(format!("{a}.ssm.group_count"), N_K_HEAD);
    add_tiny_tokenizer(&mut w, &vocab, false, CHATML_TEMPLATE);

    let mut rng = SplitMix64(seed);
    let e = N_EMBD;
    // A layer's output projection: zero into channel 0, which stays the constant.
    let mut matrix = |w: &mut GgufWriter, name: String, ne0: u32, ne1: u32| {
        let mut values = rng.matrix(ne0, ne1);
        let writes_residual = ["ssm_out", "attn_output", "ffn_down"]
            .iter()
            .any(|t| name.contains(t));
        if writes_residual && ne1 == N_EMBD {
            values[..ne0 as usize].fill(0.0);
        }
        w.add_tensor_f16(name, &[ne0.into(), ne1.into()], &values);
    };
    let mut embd = SplitMix64(seed ^ 0xe4bd).matrix(e, n_vocab);
    for row in embd.chunks_mut(e as usize) {
        row[0] = BIAS_CHANNEL;
    }
    w.add_tensor_f16("token_embd.weight", &[e.into(), n_vocab.into()], &embd);
    for i in 0..N_LAYER {
        let name = |t: &str| format!("blk.{i}.{t}");
        add_filled(&mut w, name("attn_norm.weight"), e, 1.0);
        add_filled(&mut w, name("post_attention_norm.weight"), e, 1.0);
        if (i + 1) % FULL_ATTENTION_INTERVAL == 0 {
            // build_layer_attn: Q and its sigmoid gate interleaved per head in one
            // projection, RMS-normed Q and K.
            let kv = HEAD_DIM * N_HEAD_KV;
            matrix(&mut w, name("attn_q.weight"), e, 2 * HEAD_DIM * N_HEAD);
            matrix(&mut w, name("attn_k.weight"), e, kv);
            matrix(&mut w, name("attn_v.weight"), e, kv);
            matrix(&mut w, name("attn_output.weight"), HEAD_DIM * N_HEAD, e);
            add_filled(&mut w, name("attn_q_norm.weight"), HEAD_DIM, 1.0);
            add_filled(&mut w, name("attn_k_norm.weight"), HEAD_DIM, 1.0);
        } else {
            gated_delta_net(&mut w, &mut matrix, i, seed);
        }
        ffn(&mut w, &mut matrix, i);
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
    layer: u32,
    seed: u64,
) {
    let name = |t: &str| format!("blk.{layer}.{t}");
    let key_dim = D_STATE * N_K_HEAD;
    let value_dim = D_INNER;
    let conv_dim = 2 * key_dim + value_dim;
    matrix(w, name("attn_qkv.weight"), N_EMBD, conv_dim);
    matrix(w, name("attn_gate.weight"), N_EMBD, value_dim);
    ssm_conv1d(w, layer, seed ^ (0x9d17_0000 + u64::from(layer)), conv_dim);
    // g = softplus(alpha + dt_bias) * ssm_a: a negative bias keeps softplus small, and head
    // h's state decays by exp(g) per token.
    add_filled(w, name("ssm_dt.bias"), N_V_HEAD, -1.0);
    w.add_tensor_f32(name("ssm_a"), &[N_V_HEAD.into()], &decay_spread(N_V_HEAD));
    // beta = sigmoid(x·W): random for the fast heads; for the slow half only the constant
    // channel, pulled negative so they write gently and so erase little.
    let mut beta = vec![0.0f32; (N_EMBD * N_V_HEAD) as usize];
    let mut rng = SplitMix64(seed ^ (0xbe7a_0000 + u64::from(layer)));
    for (h, row) in beta.chunks_mut(N_EMBD as usize).enumerate() {
        if h < (N_V_HEAD / 2) as usize {
            row.iter_mut()
                .for_each(|v| *v = rng.uniform() / (N_EMBD as f32).sqrt());
        } else {
            row[0] = SLOW_BETA_BIAS;
        }
    }
    w.add_tensor_f16(
        name("ssm_beta.weight"),
        &[N_EMBD.into(), N_V_HEAD.into()],
        &beta,
    );
    matrix(w, name("ssm_alpha.weight"), N_EMBD, N_V_HEAD);
    add_filled(w, name("ssm_norm.weight"), D_STATE, 1.0);
    matrix(w, name("ssm_out.weight"), value_dim, N_EMBD);
}
