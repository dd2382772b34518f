//! The parts every tiny recurrent and hybrid model shares (`tiny_recurrent.rs`,
//! `tiny_qwen35.rs`): sizes, the header keys, the feed-forward block, convolution kernels
//! and the decay rates that make a state hold a prompt's opening.

use super::rng::SplitMix64;
use super::tiny::{tiny_vocab, TinyVocab};
use super::writer::GgufWriter;

// Shapes: small, but every dimension distinct from the others so a wrong stride shows.
pub(super) const N_LAYER: u32 = 4;
pub(super) const N_EMBD: u32 = 64;
pub(super) const D_CONV: u32 = 4;
pub(super) const N_HEAD: u32 = 4;
pub(super) const N_HEAD_KV: u32 = 2;
pub(super) const N_FF: u32 = 128;
pub(super) const CONTEXT: u32 = 8192;

/// The keys every tiny recurrent model has (`general.*`, the shared sizes; the tokenizer is
/// added by the caller, after its own keys), and the vocabulary they describe.
pub(super) fn tiny_header(a: &str) -> (GgufWriter, TinyVocab) {
    sized_header(a, &format!("kvrun-tiny-{a}"), N_EMBD, N_LAYER, CONTEXT)
}

/// [`tiny_header`] with other sizes (a benchmark shape).
pub(super) fn sized_header(
    a: &str,
    name: &str,
    n_embd: u32,
    n_layer: u32,
    context: u32,
) -> (GgufWriter, TinyVocab) {
    let vocab = tiny_vocab();
    let mut w = GgufWriter::new();
    w.add_str("general.architecture", a)
        .add_str("general.name", name)
        .add_u32("general.file_type", 1) // LLAMA_FTYPE_MOSTLY_F16
        .add_u32(format!("{a}.context_length"), context)
        .add_u32(format!("{a}.embedding_length"), n_embd)
        .add_u32(format!("{a}.block_count"), n_layer)
        .add_f32(format!("{a}.attention.layer_norm_rms_epsilon"), 1e-5)
        .add_u32(format!("{a}.vocab_size"), vocab.tokens.len() as u32);
    (w, vocab)
}

/// A SwiGLU feed-forward block's three matrices (llama.cpp's `build_ffn` with
/// `LLM_FFN_SILU, LLM_FFN_PAR`).
pub(super) fn ffn(
    w: &mut GgufWriter,
    matrix: &mut impl FnMut(&mut GgufWriter, String, u32, u32),
    layer: u32,
) {
    ffn_sized(w, matrix, layer, N_EMBD, N_FF);
}

/// [`ffn`] between an `n_embd`-wide stream and `n_ff` hidden units.
pub(super) fn ffn_sized(
    w: &mut GgufWriter,
    matrix: &mut impl FnMut(&mut GgufWriter, String, u32, u32),
    layer: u32,
    n_embd: u32,
    n_ff: u32,
) {
    let name = |t: &str| format!("blk.{layer}.{t}");
    matrix(w, name("ffn_gate.weight"), n_embd, n_ff);
    matrix(w, name("ffn_up.weight"), n_embd, n_ff);
    matrix(w, name("ffn_down.weight"), n_ff, n_embd);
}

/// A layer's `ssm_conv1d.weight`: a [`D_CONV`]-tap kernel for each of `channels`.
pub(super) fn ssm_conv1d(w: &mut GgufWriter, layer: u32, seed: u64, channels: u32) {
    let conv = conv_kernel(seed, D_CONV, channels);
    w.add_tensor_f32(
        format!("blk.{layer}.ssm_conv1d.weight"),
        &[D_CONV.into(), channels.into()],
        &conv,
    );
}

/// Per-head decay rates `A = -exp(A_log)`, stored already negated as llama.cpp reads
/// them, spread log-evenly from -1 (a state that forgets within a few tokens) to -1e-4
/// (one that holds the whole context).
pub(super) fn decay_spread(n_heads: u32) -> Vec<f32> {
    (0..n_heads)
        .map(|h| -(10f32).powf(-4.0 * h as f32 / (n_heads - 1) as f32))
        .collect()
}

/// A 1-D F32 tensor of `n` copies of `value` (biases, norm weights).
pub(super) fn add_filled(w: &mut GgufWriter, name: String, n: u32, value: f32) {
    w.add_tensor_f32(name, &[n.into()], &vec![value; n as usize]);
}

/// A `width`-tap kernel per channel, F32 (ggml_ssm_conv takes no other type), scaled like a
/// fan-in of `width`.
pub(super) fn conv_kernel(seed: u64, width: u32, channels: u32) -> Vec<f32> {
    let mut rng = SplitMix64(seed);
    (0..width * channels)
        .map(|_| rng.uniform() / (width as f32).sqrt())
        .collect()
}

/// A Mamba2 mixer's sizes (`ssm.*` keys): an `n_embd`-wide stream, `d_inner` channels in
/// `n_head` heads, each with a `d_state`-wide state per channel, B and C in `n_group`
/// groups. A sequence's state is `d_state x d_inner` per layer, plus the convolution's last
/// `D_CONV - 1` inputs of `d_inner + 2 n_group d_state` channels.
pub(super) struct MambaDims {
    pub n_embd: u32,
    pub d_inner: u32,
    pub d_state: u32,
    pub n_group: u32,
    pub n_head: u32,
}

impl MambaDims {
    /// The `ssm.*` keys of architecture `a`.
    pub fn add_keys(&self, w: &mut GgufWriter, a: &str) {
        w.add_u32(format!("{a}.ssm.conv_kernel"), D_CONV)
            .add_u32(format!("{a}.ssm.inner_size"), self.d_inner)
            .add_u32(format!("{a}.ssm.state_size"), self.d_state)
            .add_u32(format!("{a}.ssm.time_step_rank"), self.n_head)
            .add_u32(format!("{a}.ssm.group_count"), self.n_group);
    }
}

/// One Mamba2 mixer's tensors (mamba2.cpp and granite-hybrid.cpp `load_arch_tensors`).
pub(super) fn mamba2_mixer(
    w: &mut GgufWriter,
    matrix: &mut impl FnMut(&mut GgufWriter, String, u32, u32),
    dims: &MambaDims,
    layer: u32,
    seed: u64,
) {
    let name = |t: &str| format!("blk.{layer}.{t}");
    let (d_inner, n_head) = (dims.d_inner, dims.n_head);
    let conv_dim = d_inner + 2 * dims.n_group * dims.d_state;
    let d_in_proj = d_inner + conv_dim + n_head;
    matrix(w, name("ssm_in.weight"), dims.n_embd, d_in_proj);
    ssm_conv1d(w, layer, seed ^ (0x5eed_0000 + u64::from(layer)), conv_dim);
    add_filled(w, name("ssm_conv1d.bias"), conv_dim, 0.0);
    // dt = softplus(x·W + bias): a negative bias keeps steps small, so slow heads keep
    // their state for thousands of tokens.
    add_filled(w, name("ssm_dt.bias"), n_head, -1.0);
    // Head h decays by exp(dt·A) per token.
    let a = decay_spread(n_head);
    w.add_tensor_f32(name("ssm_a"), &[1, n_head.into()], &a);
    w.add_tensor_f32(
        name("ssm_d"),
        &[1, n_head.into()],
        &vec![1.0; n_head as usize],
    );
    let per_group = d_inner / dims.n_group;
    w.add_tensor_f32(
        name("ssm_norm.weight"),
        &[per_group.into(), dims.n_group.into()],
        &vec![1.0; d_inner as usize],
    );
    matrix(w, name("ssm_out.weight"), d_inner, dims.n_embd);
}
