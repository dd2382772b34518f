//! `kvrun run`: one prompt in, generated text out. stdout carries only the text (or one
//! JSON object with `--json`); everything else goes to stderr. Without a session it runs
//! llama.cpp directly (the baseline the benchmarks compare with); with `--session NAME` it
//! is the agent path, a client of the service engine (`run_session.rs`). This file holds
//! what both share: the prompt's input, the report and the size checks.

mod report;
pub(super) mod session;
mod tools;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Result;

use self::report::{finish, reply_fields, DEFAULT_MAX_TOKENS};
use self::tools::ToolRequest;
use crate::cli::RunArgs;
use crate::commands::input::{check_fits, check_text_may_fit, read_prompt};
use crate::dialogue::Dialogue;
use crate::env::{apply_chat_template, load_model, Env};
use crate::llama::{Context, Model, Sampler};
use crate::sequence::{GenerateOptions, Generated, StopReason, SyncObserver};
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::ui::PrefillBar;

pub fn run(env: &Env, args: RunArgs) -> Result<ExitCode> {
    match args.session.clone() {
        Some(spec) => {
            let catalog = crate::session::catalog::SessionCatalog::open(&env.paths)?;
            let name = crate::commands::session::setup::resolve_session_arg(&catalog, &spec)?;
            crate::commands::run::session::run_session(env, &args, &name)
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

    let mut conversation = Dialogue::new(&model, args.raw, args.system.as_deref());
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
    conversation: &mut Dialogue<'_>,
    (sampling, tools): (&SamplingSettings, Option<&ToolRequest>),
    cancel: &AtomicBool,
    observer: &mut dyn SyncObserver,
) -> Result<Generated> {
    let max_tokens = args.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize;
    let mut sampler = Sampler::new(model, sampling, conversation.seq.tokens());
    let constraint = match tools {
        Some(tools) => tools.constraint(conversation.tool_format())?,
        None => tools::schema_file_grammar(args)?,
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
