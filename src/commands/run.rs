//! `kvrun run`: one prompt in, generated text out. stdout carries only the text (or one
//! JSON object with `--json`); everything else goes to stderr.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context as _, Result};
use serde::Serialize;

use super::{load_model, Env};
use crate::cli::RunArgs;
use crate::engine::{ChatMessage, Context, Model, Sampler, TokenId};
use crate::exit::usage;
use crate::sequence::{GenerateOptions, Sequence, StopReason};
use crate::settings::{EngineSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::ui::PrefillBar;

/// Default reply length for `run` when -n is not given.
const DEFAULT_MAX_TOKENS: u32 = 256;

#[derive(Serialize)]
struct RunReport {
    text: String,
    tokens: Vec<TokenId>,
    prompt_tokens: usize,
    prefilled_tokens: usize,
    generated_tokens: usize,
    stop_reason: StopReason,
    n_ctx: u32,
    load_ms: f64,
    prefill_ms: f64,
    decode_ms: f64,
}

pub fn run(env: &Env, args: RunArgs) -> Result<ExitCode> {
    let prompt = read_prompt(&args)?;
    let engine = EngineSettings::resolve(&args.engine, &env.config);
    let sampling = SamplingSettings::resolve(&args.sampling, &env.config);
    let max_tokens = args.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize;

    let choice = crate::models::choose(args.model.model.as_deref(), &env.config, &env.paths);
    let (model, load_ms) = load_model(&choice, engine.gpu_layers)?;
    let mut ctx = Context::new(&model, &engine, DEFAULT_PAGE_TOKENS, 1)?;

    let tokens = prompt_tokens(&model, &prompt, args.raw, args.system.as_deref())?;
    check_fits(&tokens, &ctx, &model)?;

    let mut seq = Sequence::new();
    seq.append(&tokens);
    let cancel = AtomicBool::new(false);
    let mut bar = PrefillBar::new(env.ui, tokens.len(), &cancel);
    let mut sampler = Sampler::new(&model, &sampling, seq.tokens());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let json = args.json;
    let mut emit = |text: &str| -> std::io::Result<()> {
        if json {
            return Ok(());
        }
        out.write_all(text.as_bytes())?;
        out.flush()
    };

    let generated = if max_tokens == 0 {
        let started = std::time::Instant::now();
        let prefilled = seq.sync(&mut ctx, true, &mut bar)?;
        crate::sequence::Generated {
            tokens: Vec::new(),
            text: String::new(),
            logprobs: Vec::new(),
            stop: StopReason::MaxTokens,
            decode_time: std::time::Duration::ZERO,
            prefill_time: started.elapsed(),
            prefilled,
        }
    } else {
        let options = GenerateOptions {
            max_tokens,
            logprobs: None,
        };
        seq.generate(
            &mut ctx,
            &mut sampler,
            &options,
            &cancel,
            &mut bar,
            &mut emit,
        )?
    };

    if json {
        let report = RunReport {
            text: generated.text,
            generated_tokens: generated.tokens.len(),
            tokens: generated.tokens,
            prompt_tokens: tokens.len(),
            prefilled_tokens: generated.prefilled,
            stop_reason: generated.stop,
            n_ctx: ctx.info().n_ctx,
            load_ms,
            prefill_ms: generated.prefill_time.as_secs_f64() * 1e3,
            decode_ms: generated.decode_time.as_secs_f64() * 1e3,
        };
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else if !generated.text.ends_with('\n') && !generated.text.is_empty() {
        writeln!(out)?;
    }
    out.flush()?;
    if generated.stop == StopReason::ContextFull {
        env.ui
            .warn("generation stopped: the context is full (raise --ctx-size)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The prompt from -p, --prompt-file, or piped stdin.
fn read_prompt(args: &RunArgs) -> Result<String> {
    let text = if let Some(p) = &args.prompt {
        p.clone()
    } else if let Some(file) = &args.prompt_file {
        std::fs::read_to_string(file)
            .with_context(|| format!("reading prompt file {}", file.display()))?
    } else {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(usage(
                "no prompt: pass -p TEXT, --prompt-file FILE, or pipe the prompt on stdin",
            ));
        }
        let mut text = String::new();
        stdin
            .lock()
            .read_to_string(&mut text)
            .context("reading the prompt from stdin")?;
        text
    };
    if text.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(text)
}

/// Tokens for one prompt: as-is with `--raw`, else through the model's chat template.
pub(super) fn prompt_tokens(
    model: &Model,
    prompt: &str,
    raw: bool,
    system: Option<&str>,
) -> Result<Vec<TokenId>> {
    if raw {
        return Ok(model.tokenize_prompt(prompt));
    }
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(ChatMessage {
            role: "system".into(),
            content: system.into(),
        });
    }
    messages.push(ChatMessage {
        role: "user".into(),
        content: prompt.into(),
    });
    let text = model.apply_chat_template(&messages, true)?;
    Ok(model.tokenize_prompt(&text))
}

/// A prompt that cannot fit the context is refused up front, naming both sizes.
pub(super) fn check_fits(tokens: &[TokenId], ctx: &Context<'_>, model: &Model) -> Result<()> {
    let n_ctx = ctx.info().n_ctx as usize;
    if tokens.len() > n_ctx {
        let train = model.facts().n_ctx_train;
        bail!(
            "the prompt is {} tokens but the context holds {n_ctx}; raise --ctx-size (this \
             model supports up to {train})",
            tokens.len()
        );
    }
    Ok(())
}
