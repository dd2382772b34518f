//! `kvrun bench`: prefill and decode speed on a model, as a table. It runs kvrun's own
//! canonical schedule (`--batch-size` batches aligned to whole pages, never across a multiple
//! of the batch) next to llama.cpp's usual 512-token batches, so any cost kvrun adds over
//! llama.cpp shows in one table.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{bail, Result};

use super::harness::bench_tokens;
use crate::cli::BenchArgs;
use crate::env::{load_model, Env};
use crate::llama::{Context, Model, Sampler, TokenId};
use crate::sequence::{GenerateOptions, NoObserver, Sequence};
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};

/// llama.cpp's default micro-batch, the baseline schedule.
const LLAMA_DEFAULT_UBATCH: u32 = 512;

struct Row {
    schedule: String,
    prompt: usize,
    prefill_s: f64,
    decode_tokens: usize,
    decode_s: f64,
}

pub fn run(env: &Env, args: BenchArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let choice = crate::models::choose(
        args.model.model.as_deref(),
        &env.config,
        &env.paths,
        crate::models::Purpose::Serve,
    );
    let (model, load_ms) = load_model(&choice, llama.gpu_layers)?;
    let longest = args.prompt_tokens.iter().copied().max().unwrap_or(0);
    if longest == 0 {
        bail!("give at least one prompt length above 0");
    }
    llama.ctx_size = longest + args.decode_tokens + 16;
    if llama.ctx_size > model.facts().n_ctx_train {
        bail!(
            "{longest} prompt tokens exceed the model's training context ({})",
            model.facts().n_ctx_train
        );
    }
    let corpus = bench_tokens(&model, longest as usize);
    env.ui.note(format!(
        "model {} loaded in {load_ms:.0} ms; {} threads; measuring...",
        model.facts().description,
        llama.threads
    ));
    println!("{}\n", super::harness::kv_memory(&model, &llama));
    let schedules = [
        ("kvrun", DEFAULT_PAGE_TOKENS, llama.batch_size),
        (
            "llama.cpp ubatch 512",
            LLAMA_DEFAULT_UBATCH,
            LLAMA_DEFAULT_UBATCH,
        ),
    ];
    let mut rows = Vec::new();
    for &n in &args.prompt_tokens {
        for (name, page, batch) in schedules {
            let mut samples = Vec::new();
            for _ in 0..args.repeat.max(1) {
                samples.push(measure(
                    &model,
                    &llama,
                    (page, batch),
                    &corpus[..n as usize],
                    args.decode_tokens as usize,
                    name,
                )?);
            }
            samples.sort_by(|a, b| a.prefill_s.total_cmp(&b.prefill_s));
            rows.push(samples.swap_remove(samples.len() / 2));
        }
    }
    println!("| schedule | prompt tokens | prefill s | prefill tok/s | decode tok/s |");
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.1} |",
            r.schedule,
            r.prompt,
            r.prefill_s,
            r.prompt as f64 / r.prefill_s,
            r.decode_tokens as f64 / r.decode_s.max(1e-9)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn measure(
    model: &Model,
    llama: &LlamaSettings,
    (page, batch): (u32, u32),
    prompt: &[TokenId],
    decode_tokens: usize,
    schedule: &str,
) -> Result<Row> {
    let mut llama = llama.clone();
    llama.batch_size = batch;
    let mut ctx = Context::new(model, &llama, page, 1)?;
    // kvrun's row names the batches it got: one page where the memory keeps page batches.
    let schedule = match schedule {
        "kvrun" => format!("kvrun, batches of {}", ctx.info().n_batch),
        other => other.to_string(),
    };
    let mut seq = Sequence::new();
    seq.append(prompt);
    let started = Instant::now();
    seq.sync(&mut ctx, true, &mut NoObserver)?;
    let prefill_s = started.elapsed().as_secs_f64();
    let greedy = SamplingSettings::greedy();
    let mut sampler = Sampler::new(model, &greedy, seq.tokens());
    let cancel = AtomicBool::new(false);
    let options = GenerateOptions {
        max_tokens: decode_tokens,
        logprobs: None,
    };
    let generated = seq.generate(
        &mut ctx,
        &mut sampler,
        &options,
        &cancel,
        &mut NoObserver,
        &mut |_| Ok(()),
    )?;
    Ok(Row {
        schedule,
        prompt: prompt.len(),
        prefill_s,
        // The decode phase decodes every sampled token but the last.
        decode_tokens: generated.tokens.len().saturating_sub(1),
        decode_s: generated.decode_time.as_secs_f64(),
    })
}
