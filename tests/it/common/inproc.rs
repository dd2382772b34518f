//! The uninterrupted comparator: the same turns that `kvrun run --session` takes, run in one
//! process through the library, so nothing is ever saved or restored.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use kvrun::dialogue::Dialogue;
use kvrun::llama::{Context, Model, Sampler};
use kvrun::sequence::{GenerateOptions, NoObserver};
use kvrun::settings::{ContextOverflow, FlashAttn, KvType, LlamaSettings, SamplingSettings};

/// Threads used by both the CLI runs (`-t`) and the in-process runs: flash attention splits
/// work by thread, so the thread count is part of what makes two runs bit-identical.
pub const THREADS: &str = "2";

/// Generated tokens and their log-probabilities for each turn.
pub type Turns = Vec<(Vec<i32>, Vec<f32>)>;

pub fn uninterrupted(
    model_path: &Path,
    ctx_size: u32,
    raw: bool,
    turns: &[&str],
    n: usize,
) -> Turns {
    uninterrupted_with(
        model_path,
        ctx_size,
        (KvType::F16, FlashAttn::Auto),
        raw,
        turns,
        n,
    )
}

/// [`uninterrupted`] with other KV settings: the cache type and flash attention (off keeps
/// V transposed in the cache, a layout of its own for the pages).
pub fn uninterrupted_with(
    model_path: &Path,
    ctx_size: u32,
    settings: (KvType, FlashAttn),
    raw: bool,
    turns: &[&str],
    n: usize,
) -> Turns {
    uninterrupted_on(model_path, 0, ctx_size, settings, raw, turns, n)
}

/// [`uninterrupted_with`] with `gpu_layers` offloaded: on a GPU build, the weights of those
/// layers and their KV live in device memory.
pub fn uninterrupted_on(
    model_path: &Path,
    gpu_layers: u32,
    ctx_size: u32,
    (kv_type, flash_attn): (KvType, FlashAttn),
    raw: bool,
    turns: &[&str],
    n: usize,
) -> Turns {
    let model = Model::load(model_path, gpu_layers).unwrap();
    let llama = LlamaSettings {
        ctx_size,
        threads: THREADS.parse().unwrap(),
        gpu_layers,
        batch_size: kvrun::settings::DEFAULT_BATCH_SIZE,
        kv_type,
        flash_attn,
    };
    let mut ctx = Context::new(&model, &llama, 256, 2).unwrap();
    let mut conversation = Dialogue::new(&model, raw, None);
    let greedy = SamplingSettings::greedy();
    let cancel = AtomicBool::new(false);
    let mut out = Vec::new();
    for turn in turns {
        conversation
            .add_user(ctx.info().n_ctx as usize, turn, ContextOverflow::Error)
            .unwrap();
        let mut sampler = Sampler::new(&model, &greedy, conversation.seq.tokens());
        let options = GenerateOptions {
            max_tokens: n,
            logprobs: Some(0),
        };
        let generated = conversation
            .seq
            .generate(
                &mut ctx,
                &mut sampler,
                &options,
                &cancel,
                &mut NoObserver,
                &mut |_| Ok(()),
            )
            .unwrap();
        out.push((
            generated.tokens.clone(),
            generated.logprobs.iter().map(|l| l.logprob).collect(),
        ));
        conversation.add_assistant(generated.text);
    }
    out
}
