//! `kvrun run`: one prompt in, generated text out. stdout carries only the text (or one
//! JSON object with `--json`); everything else goes to stderr. Without a session it runs
//! llama.cpp directly (the baseline the benchmarks compare with); with `--session NAME` it
//! is the agent path, a client of the service engine (`run_session.rs`). This file holds
//! what both share: the prompt's input, the report and the size checks.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde::Serialize;

use super::run_tools::{self, ReplyFields, ToolRequest};
use super::{apply_chat_template, load_model, Env};
use crate::cli::RunArgs;
use crate::conversation::{CacheMiss, Conversation};
use crate::exit::usage;
use crate::llama::{Context, Model, Sampler, TokenId, TokenLogprob};
use crate::sequence::{GenerateOptions, Generated, StopReason, SyncObserver};
use crate::session::live::{RestoreDecision, RestorePhases};
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::tools::parse_reply;
use crate::ui::PrefillBar;

/// Default reply length for `run` when -n is not given.
pub(super) const DEFAULT_MAX_TOKENS: u32 = 256;
/// Sessions keep a scratch sequence next to the main one to read page ranges.
pub(super) const SESSION_SEQS: u32 = 2;

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
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<Vec<TokenLogprob>>,
    #[serde(flatten)]
    reply: ReplyFields,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    session: Option<SessionFields>,
}

#[derive(Serialize)]
pub(super) struct SessionFields {
    pub session: String,
    pub session_tokens: usize,
    pub restored_tokens: usize,
    pub reused_tokens: usize,
    pub restore_ms: f64,
    /// Where `restore_ms` went.
    pub restore_phases: RestorePhases,
    /// Restore or recompute, as the restore chose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_decision: Option<RestoreDecision>,
    pub save_ms: f64,
    /// Where the template stopped extending the session's earlier rendering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_miss: Option<CacheMiss>,
}

pub fn run(env: &Env, args: RunArgs) -> Result<ExitCode> {
    match args.session.clone() {
        Some(spec) => {
            let catalog = crate::session::catalog::SessionCatalog::open(&env.paths)?;
            let name = super::session_setup::resolve_session_arg(&catalog, &spec)?;
            super::run_session::run_session(env, &args, &name)
        }
        None => run_plain(env, &args),
    }
}

fn run_plain(env: &Env, args: &RunArgs) -> Result<ExitCode> {
    let prompt = read_prompt(args)?;
    let llama = LlamaSettings::resolve(&args.llama, &env.config);
    let sampling = SamplingSettings::resolve(&args.sampling, &env.config);
    let choice = crate::models::choose(
        args.model.model.as_deref(),
        &env.config,
        &env.paths,
        crate::models::Purpose::Chat,
    );
    let (mut model, load_ms) = load_model(&choice, llama.gpu_layers)?;
    apply_chat_template(&mut model, &args.model, env)?;
    let mut ctx = Context::new(&model, &llama, DEFAULT_PAGE_TOKENS, 1)?;

    let mut conversation = Conversation::new(&model, args.raw, args.system.as_deref());
    check_text_may_fit(&prompt, 0, ctx.info().n_ctx as usize, &model)?;
    let tools = ToolRequest::load(args)?;
    conversation.tools = tools.as_ref().map(|t| t.template_value.clone());
    let tokens = conversation.user_turn_tokens(&prompt)?;
    check_fits(tokens.len(), &ctx, &model)?;
    conversation.seq.append(&tokens);

    let cancel = AtomicBool::new(false);
    let mut bar = PrefillBar::new(env.ui, tokens.len(), &cancel);
    let generated = generate(
        args,
        &model,
        &mut ctx,
        &mut conversation,
        (&sampling, tools.as_ref()),
        &cancel,
        &mut bar,
    )?;
    drop(bar);
    let reply = reply_fields(&conversation, tools.as_ref(), &generated.text);
    finish(
        env,
        args,
        ctx.info().n_ctx,
        tokens.len(),
        load_ms,
        (generated, reply),
        None,
    )
}

/// Generates the reply, streaming it to stdout unless `--json`.
fn generate(
    args: &RunArgs,
    model: &Model,
    ctx: &mut Context<'_>,
    conversation: &mut Conversation<'_>,
    (sampling, tools): (&SamplingSettings, Option<&ToolRequest>),
    cancel: &AtomicBool,
    observer: &mut dyn SyncObserver,
) -> Result<Generated> {
    let max_tokens = args.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize;
    let mut sampler = Sampler::new(model, sampling, conversation.seq.tokens());
    let constraint = match tools {
        Some(tools) => tools.constraint(conversation.tool_format())?,
        None => run_tools::schema_file_grammar(args)?,
    };
    if let Some(constraint) = constraint {
        constraint.apply(model, &mut sampler)?;
    }
    let stdout = std::io::stdout();
    let json = args.json;
    let mut emit = |text: &str| -> std::io::Result<()> {
        if json {
            return Ok(());
        }
        let mut out = stdout.lock();
        out.write_all(text.as_bytes())?;
        out.flush()
    };
    if max_tokens == 0 {
        let started = Instant::now();
        let prefilled = conversation.seq.sync(ctx, true, observer)?;
        return Ok(Generated {
            tokens: Vec::new(),
            text: String::new(),
            logprobs: Vec::new(),
            stop: StopReason::MaxTokens,
            decode_time: Duration::ZERO,
            prefill_time: started.elapsed(),
            prefilled,
        });
    }
    let options = GenerateOptions {
        max_tokens,
        logprobs: args.logprobs,
    };
    Ok(conversation
        .seq
        .generate(ctx, &mut sampler, &options, cancel, observer, &mut emit)?)
}

pub(super) fn finish(
    env: &Env,
    args: &RunArgs,
    n_ctx: u32,
    prompt_tokens: usize,
    load_ms: f64,
    (generated, reply): (Generated, ReplyFields),
    session: Option<SessionFields>,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let report = RunReport {
            text: generated.text.clone(),
            generated_tokens: generated.tokens.len(),
            tokens: generated.tokens.clone(),
            prompt_tokens,
            prefilled_tokens: generated.prefilled,
            stop_reason: generated.stop,
            n_ctx,
            load_ms,
            prefill_ms: generated.prefill_time.as_secs_f64() * 1e3,
            decode_ms: generated.decode_time.as_secs_f64() * 1e3,
            logprobs: args.logprobs.map(|_| generated.logprobs.clone()),
            reply,
            session,
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

/// The largest prompt or document kvrun reads (from a file, stdin or -p). Far above what a
/// context holds (a 128k-token context is about 0.5 MB of text); it bounds memory and time
/// for input that could never fit.
pub(super) const MAX_INPUT_BYTES: u64 = 32 << 20;

/// The reply split into content, reasoning and tool calls (chat mode only).
pub(super) fn reply_fields(
    conversation: &Conversation<'_>,
    tools: Option<&ToolRequest>,
    text: &str,
) -> ReplyFields {
    if conversation.raw {
        return ReplyFields::default();
    }
    let parses_calls = tools.is_some_and(ToolRequest::parses_calls);
    let reply = parse_reply(
        conversation.tool_format(),
        parses_calls,
        conversation.opens_reasoning,
        text,
    );
    ReplyFields::new(&reply, tools.is_some())
}

/// The prompt from -p, --prompt-file, or piped stdin.
pub(super) fn read_prompt(args: &RunArgs) -> Result<String> {
    let text = if let Some(p) = &args.prompt {
        check_input_size(p.len() as u64, "the prompt")?;
        p.clone()
    } else if let Some(file) = &args.prompt_file {
        read_text_file(file)?
    } else {
        read_stdin("no prompt: pass -p TEXT, --prompt-file FILE, or pipe the prompt on stdin")?
    };
    if text.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(text)
}

/// All of stdin; a usage error when stdin is a terminal (nothing was piped).
pub(super) fn read_stdin(when_terminal: &str) -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(usage(when_terminal));
    }
    read_bounded(stdin.lock(), "stdin")
}

/// A text file (a FIFO too, for `<(command)`), read up to [`MAX_INPUT_BYTES`].
pub(super) fn read_text_file(path: &std::path::Path) -> Result<String> {
    let what = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("reading {what}"))?;
    read_bounded(file, &what)
}

/// Reads all of `reader` as UTF-8, refusing more than [`MAX_INPUT_BYTES`] without reading
/// past that.
fn read_bounded(reader: impl Read, what: &str) -> Result<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    check_input_size(bytes.len() as u64, what)?;
    String::from_utf8(bytes).with_context(|| format!("reading {what}: not UTF-8 text"))
}

fn check_input_size(len: u64, what: &str) -> Result<()> {
    if len > MAX_INPUT_BYTES {
        return Err(usage(format!(
            "{what} is larger than kvrun's input limit of {} MiB",
            MAX_INPUT_BYTES >> 20
        )));
    }
    Ok(())
}

/// Refuses text that cannot fit in the context after `used` tokens, judged from its length
/// alone, before the (slow, for megabytes) tokenization.
pub(super) fn check_text_may_fit(
    text: &str,
    used: usize,
    n_ctx: usize,
    model: &Model,
) -> Result<()> {
    let Some(min_tokens) = model.min_tokens(text) else {
        return Ok(());
    };
    if used + min_tokens > n_ctx {
        let train = model.facts().n_ctx_train;
        bail!(
            "the input does not fit the context: its {} bytes are at least {min_tokens} \
             tokens, and the context holds {n_ctx} ({used} in use); raise --ctx-size (this \
             model supports up to {train})",
            text.len()
        );
    }
    Ok(())
}

/// A prompt that cannot fit the context is refused up front, naming both sizes.
pub(super) fn check_fits(tokens: usize, ctx: &Context<'_>, model: &Model) -> Result<()> {
    let n_ctx = ctx.info().n_ctx as usize;
    if tokens > n_ctx {
        let train = model.facts().n_ctx_train;
        bail!(
            "the prompt is {tokens} tokens but the context holds {n_ctx}; raise --ctx-size (this \
             model supports up to {train})"
        );
    }
    Ok(())
}
