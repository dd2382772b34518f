//! `kvrun bench kv-types`: what a quantized KV cache costs and saves, as a table.
//!
//! For each session length and KV type it prefills the same prose into a session, then
//! measures the snapshot's bytes per token, llama.cpp's own state bytes per token, and a
//! restore in a fresh process. Precision is measured against f16 on the same session:
//! - *free run*: each type generates greedily on its own; the figure is the number of tokens
//!   before its first divergence from f16's continuation;
//! - *teacher forcing*: each type scores f16's greedy continuation token by token; the
//!   figures are the share of positions where its top-1 token is f16's, and the mean and
//!   max |Δ log-probability| of f16's tokens against f16's own log-probabilities.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context as _, Result};

use crate::bench::harness::bench_tokens;
use crate::bench::harness::{child_json, drop_page_cache, prefill_session};
use crate::cli::BenchKvTypesArgs;
use crate::env::SESSION_SEQS;
use crate::env::{load_model, Env};
use crate::llama::{Context, Model, Sampler, TokenId, TokenLogprob};
use crate::paths::Paths;
use crate::sequence::{GenerateOptions, NoObserver, Sequence, MAIN_SEQ};
use crate::session::catalog::SessionCatalog;
use crate::settings::{KvType, LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};

/// The llama.cpp sequence the continuations run in: a copy of the session's, so that the
/// free run and the teacher-forced run both start from the prefilled cells (a sliding-window
/// cache evicts a sequence's old cells as it advances, so it cannot be truncated back).
const SCRATCH_SEQ: i32 = MAIN_SEQ + 1;

/// f16's greedy continuation of one session: the reference the other types are held to.
struct Reference {
    tokens: Vec<TokenId>,
    logprobs: Vec<f32>,
}

/// How one type's continuation compares with f16's.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Agreement {
    /// Tokens compared (f16's continuation; shorter than asked when f16 ends its text).
    pub compared: usize,
    /// Free run: leading tokens equal to f16's.
    pub before_divergence: usize,
    /// Teacher forcing: positions whose top-1 token is f16's.
    pub top1_matches: usize,
    pub mean_abs_delta: f64,
    pub max_abs_delta: f64,
}

struct Row {
    kv_type: KvType,
    tokens: usize,
    snapshot_bytes: u64,
    state_bytes: usize,
    prefill_s: f64,
    restore_ms: f64,
    agreement: Option<Agreement>,
}

pub fn run(env: &Env, args: BenchKvTypesArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let decode = args.decode_tokens as usize;
    let longest = args.tokens.iter().copied().max().unwrap_or(0) as usize;
    if longest == 0 || decode == 0 {
        bail!("give session lengths and --decode-tokens above 0");
    }
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-")
        .tempdir_in(std::env::temp_dir())
        .context("creating the benchmark folder")?;
    let choice = if args.tiny {
        let path = work.path().join("tiny-llama.gguf");
        let spec = crate::synth::TinyLlamaSpec {
            context_length: (longest + decode) as u32 + 2 * DEFAULT_PAGE_TOKENS,
            ..Default::default()
        };
        crate::synth::write_tiny_llama(&path, &spec)?;
        crate::models::ModelChoice::argument(path)
    } else {
        crate::models::choose(
            args.model.model.as_deref(),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        )
    };
    let (model, _) = load_model(&choice, llama.gpu_layers)?;
    let train = model.facts().n_ctx_train as usize;
    // Room for the continuation, plus slack for the child's restore.
    if longest + decode + 64 > train {
        bail!(
            "{longest} tokens and {decode} generated do not fit the model's context ({train}); \
             pass smaller --tokens"
        );
    }
    llama.ctx_size = (longest + decode + DEFAULT_PAGE_TOKENS as usize).min(train) as u32;
    let mut types = vec![KvType::F16];
    types.extend(args.types.iter().copied().filter(|&t| t != KvType::F16));
    types.dedup();
    env.ui.note(format!(
        "benchmarking {} with {} threads, --flash-attn {}, in {} ...",
        model.facts().description,
        llama.threads,
        llama.flash_attn.as_str(),
        work.path().display()
    ));
    let corpus = bench_tokens(&model, longest);
    // Rows print as they are measured: a long run shows its short lengths early.
    print_header();
    for &n in &args.tokens {
        let prompt = &corpus[..n as usize];
        let mut reference = None;
        for &kv_type in &types {
            let mut llama = llama.clone();
            llama.kv_type = kv_type;
            let home = work.path().join(format!("{}-{n}", kv_type.as_str()));
            env.ui
                .note(format!("{n} tokens, {}: prefilling ...", kv_type.as_str()));
            let row = measure(
                &model,
                &choice.path,
                &llama,
                &home,
                prompt,
                decode,
                &mut reference,
            )?;
            print_row(&row);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn measure(
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    home: &Path,
    prompt: &[TokenId],
    decode: usize,
    reference: &mut Option<Reference>,
) -> Result<Row> {
    let paths = Paths::under(home);
    let catalog = SessionCatalog::open(&paths)?;
    let mut ctx = Context::new(model, llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    let (prefill_s, _) = prefill_session(
        model, model_path, &mut ctx, &catalog, "bench", llama, prompt,
    )?;
    let state_bytes = ctx.state_size(MAIN_SEQ);
    let snapshot_bytes =
        catalog.store().usage()?.1 + std::fs::metadata(catalog.manifest_path("bench"))?.len();

    let (tokens, logprobs) = free_run(&mut ctx, prompt, decode)?;
    let agreement = match reference {
        None => {
            *reference = Some(Reference { tokens, logprobs });
            None
        }
        Some(r) => {
            let forced = teacher_forced(&mut ctx, prompt, &r.tokens)?;
            Some(compare(r, &tokens, &forced))
        }
    };
    drop(ctx);

    drop_page_cache();
    let check = child_json(
        home,
        &[
            "session",
            "restore",
            "bench",
            "--check",
            "--json",
            "--kv-type",
            llama.kv_type.as_str(),
            "--flash-attn",
            llama.flash_attn.as_str(),
        ],
        llama,
    )?;
    Ok(Row {
        kv_type: llama.kv_type,
        tokens: prompt.len(),
        snapshot_bytes,
        state_bytes,
        prefill_s,
        restore_ms: check["restore_ms"].as_f64().unwrap_or(f64::NAN),
        agreement,
    })
}

/// Starts a continuation of the prefilled session in [`SCRATCH_SEQ`]. The session's last
/// token is not in the cache yet ([`Sequence::sync`] keeps it for the logits).
fn scratch_sequence(ctx: &mut Context<'_>, prompt: &[TokenId]) -> Sequence {
    ctx.clear_seq(SCRATCH_SEQ);
    ctx.share_range(MAIN_SEQ, SCRATCH_SEQ, 0, prompt.len());
    Sequence::restored(prompt.to_vec(), prompt.len() - 1).in_seq(SCRATCH_SEQ)
}

/// Greedy generation of up to `decode` tokens, with each token's log-probability.
fn free_run(
    ctx: &mut Context<'_>,
    prompt: &[TokenId],
    decode: usize,
) -> Result<(Vec<TokenId>, Vec<f32>)> {
    let mut seq = scratch_sequence(ctx, prompt);
    let model = ctx.model();
    let mut sampler = Sampler::new(model, &SamplingSettings::greedy(), seq.tokens());
    let options = GenerateOptions {
        max_tokens: decode,
        logprobs: Some(0),
    };
    let generated = seq.generate(
        ctx,
        &mut sampler,
        &options,
        &AtomicBool::new(false),
        &mut NoObserver,
        &mut |_| Ok(()),
    )?;
    let logprobs = generated.logprobs.iter().map(|l| l.logprob).collect();
    Ok((generated.tokens, logprobs))
}

/// Scores `continuation` one token at a time (the free run's schedule): each position's
/// log-probability of the given token, with whether it was also the top-1 token.
fn teacher_forced(
    ctx: &mut Context<'_>,
    prompt: &[TokenId],
    continuation: &[TokenId],
) -> Result<Vec<(f32, bool)>> {
    let mut seq = scratch_sequence(ctx, prompt);
    let mut scored = Vec::with_capacity(continuation.len());
    for &token in continuation {
        seq.sync(ctx, true, &mut NoObserver)?;
        let logits = ctx
            .logits()
            .context("the context kept no logits for the last token")?;
        let lp = TokenLogprob::from_logits(logits, token, 1);
        let top1 = lp.top.first().is_some_and(|&(t, _)| t == token);
        scored.push((lp.logprob, top1));
        seq.append(&[token]);
    }
    Ok(scored)
}

/// Compares a type's free run and teacher-forced scores with f16's continuation.
fn compare(reference: &Reference, free_run: &[TokenId], forced: &[(f32, bool)]) -> Agreement {
    let compared = reference.tokens.len().min(forced.len());
    let before_divergence = reference
        .tokens
        .iter()
        .zip(free_run)
        .take_while(|(a, b)| a == b)
        .count();
    let deltas: Vec<f64> = reference
        .logprobs
        .iter()
        .zip(forced)
        .map(|(&r, &(f, _))| f64::from((r - f).abs()))
        .collect();
    Agreement {
        compared,
        before_divergence,
        top1_matches: forced
            .iter()
            .take(compared)
            .filter(|(_, top1)| *top1)
            .count(),
        mean_abs_delta: deltas.iter().sum::<f64>() / deltas.len().max(1) as f64,
        max_abs_delta: deltas.iter().copied().fold(0.0, f64::max),
    }
}

fn print_header() {
    println!(
        "| KV type | tokens | snapshot bytes/token | llama.cpp state bytes/token | cold prefill s \
         | restore ms (fresh process) | free run: tokens before divergence | teacher-forced \
         top-1 agreement | mean abs Δ logprob | max abs Δ logprob |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

fn print_row(r: &Row) {
    let per_token = |bytes: f64| bytes / r.tokens.max(1) as f64;
    let precision = match &r.agreement {
        None => "reference | reference | 0 | 0".to_string(),
        Some(a) => format!(
            "{} of {} | {:.1}% | {:.4} | {:.4}",
            a.before_divergence,
            a.compared,
            100.0 * a.top1_matches as f64 / a.compared.max(1) as f64,
            a.mean_abs_delta,
            a.max_abs_delta
        ),
    };
    println!(
        "| {} | {} | {:.0} | {:.0} | {:.2} | {:.1} | {precision} |",
        r.kv_type.as_str(),
        r.tokens,
        per_token(r.snapshot_bytes as f64),
        per_token(r.state_bytes as f64),
        r.prefill_s,
        r.restore_ms
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        Reference {
            tokens: vec![5, 6, 7, 8],
            logprobs: vec![-0.5, -1.0, -0.25, -2.0],
        }
    }

    #[test]
    fn identical_runs_agree_everywhere_with_no_drift() {
        let r = reference();
        let forced: Vec<(f32, bool)> = r.logprobs.iter().map(|&l| (l, true)).collect();
        let a = compare(&r, &r.tokens, &forced);
        assert_eq!(
            a,
            Agreement {
                compared: 4,
                before_divergence: 4,
                top1_matches: 4,
                mean_abs_delta: 0.0,
                max_abs_delta: 0.0,
            }
        );
    }

    #[test]
    fn divergence_counts_the_leading_equal_tokens_only() {
        let r = reference();
        let forced = vec![(-0.5, true), (-1.5, false), (-0.25, true), (-1.0, true)];
        // Equal again after the divergence at index 1: still 1 token before it.
        let a = compare(&r, &[5, 9, 7, 8], &forced);
        assert_eq!(a.before_divergence, 1);
        assert_eq!(a.top1_matches, 3);
        assert_eq!(a.compared, 4);
        // |Δ| = 0, 0.5, 0, 1.0.
        assert!((a.mean_abs_delta - 0.375).abs() < 1e-9, "{a:?}");
        assert!((a.max_abs_delta - 1.0).abs() < 1e-9, "{a:?}");
    }

    #[test]
    fn a_free_run_that_ends_early_diverges_where_it_ends() {
        let r = reference();
        let forced: Vec<(f32, bool)> = r.logprobs.iter().map(|&l| (l, true)).collect();
        let a = compare(&r, &[5, 6], &forced);
        assert_eq!(a.before_divergence, 2);
        assert_eq!(a.compared, 4);
    }
}
