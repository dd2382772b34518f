//! `kvrun chat`: an interactive conversation in line mode (a REPL). Tokens stream as they
//! are generated; Ctrl-C stops the current reply without quitting. With `--session NAME`
//! the session is restored first and saved after every turn.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};

use super::run::SESSION_SEQS;
use super::{load_model, session_setup, Env};
use crate::cli::ChatArgs;
use crate::conversation::Conversation;
use crate::engine::{Context, Sampler};
use crate::models::ModelChoice;
use crate::sequence::{GenerateOptions, StopReason, SyncObserver};
use crate::session::catalog::SessionCatalog;
use crate::session::live::{ConversationState, LiveSession, SessionObserver};
use crate::settings::{ContextOverflow, EngineSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::ui::PrefillBar;

const HELP: &str = "\
commands:
  /help    show this help
  /reset   forget the conversation and start over
  /stats   context used and the last reply's speed
  /save    save the session now (with --session; it also saves after every turn)
  /quit    leave (Ctrl-D works too)
Ctrl-C stops the current reply. End a line with \\ to continue on the next one.";

/// Speed of the last reply, for /stats.
#[derive(Clone, Copy)]
struct TurnStats {
    prefilled: usize,
    prefill: Duration,
    generated: usize,
    decode: Duration,
}

pub fn run(env: &Env, args: ChatArgs) -> Result<ExitCode> {
    let overflow = args
        .context_overflow
        .or(env.config.context_overflow)
        .unwrap_or(ContextOverflow::Truncate);
    let catalog = match &args.session {
        Some(_) => Some(SessionCatalog::open(&env.paths)?),
        None => None,
    };
    let prepared = match (&args.session, &catalog) {
        (Some(name), Some(catalog)) => Some(session_setup::prepare(
            env,
            catalog,
            name,
            args.model.model.as_deref(),
            &args.engine,
            Some(&args.sampling),
        )?),
        _ => None,
    };
    let (engine, sampling, choice) = match &prepared {
        Some(p) => (p.engine.clone(), p.sampling.clone(), p.choice.clone()),
        None => (
            EngineSettings::resolve(&args.engine, &env.config),
            SamplingSettings::resolve(&args.sampling, &env.config),
            crate::models::choose(args.model.model.as_deref(), &env.config, &env.paths),
        ),
    };
    pull_default_if_missing(env, &choice)?;
    let (model, _) = load_model(&choice, engine.gpu_layers)?;
    if !model.facts().has_chat_template {
        bail!(
            "{} has no chat template; use `kvrun run --raw` for plain completion",
            choice.path.display()
        );
    }
    let seqs = if prepared.is_some() { SESSION_SEQS } else { 1 };
    let mut ctx = Context::new(&model, &engine, DEFAULT_PAGE_TOKENS, seqs)?;
    let (mut live, mut chat) = match (prepared, &catalog) {
        (Some(p), Some(catalog)) => {
            let mut live = session_setup::start(catalog, p, &model, &ctx)?;
            let (chat, report) = session_setup::resume(
                env,
                &mut live,
                &mut ctx,
                &model,
                false,
                args.system.as_deref(),
            )?;
            if report.restored_tokens > 0 {
                env.ui.note(format!(
                    "session '{}': restored {} tokens in {:.0} ms",
                    live.name, report.restored_tokens, report.restore_ms
                ));
            }
            (Some(live), chat)
        }
        _ => (
            None,
            Conversation::new(&model, false, args.system.as_deref()),
        ),
    };

    // Ctrl-C while a reply streams stops the reply; at the prompt it quits.
    let generating = Arc::new(AtomicBool::new(false));
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let (generating, cancel) = (generating.clone(), cancel.clone());
        let _ = ctrlc::set_handler(move || {
            if generating.load(Ordering::SeqCst) {
                cancel.store(true, Ordering::SeqCst);
            } else {
                eprintln!();
                std::process::exit(130);
            }
        });
    }

    let interactive = std::io::stdin().is_terminal();
    if interactive {
        env.ui.note(format!(
            "kvrun chat: {} (context {} tokens). /help for commands.",
            model.facts().description,
            ctx.info().n_ctx
        ));
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut last: Option<TurnStats> = None;
    loop {
        let Some(input) = read_message(&mut lines, interactive)? else {
            break;
        };
        let trimmed = input.trim();
        if trimmed.is_empty() {
            continue;
        }
        match trimmed {
            "/quit" | "/exit" => break,
            "/help" => {
                println!("{HELP}");
                continue;
            }
            "/reset" => {
                chat.reset(&mut ctx);
                println!("(conversation cleared)");
                continue;
            }
            "/stats" => {
                print_stats(&ctx, &chat, last);
                continue;
            }
            "/save" => {
                match &mut live {
                    Some(live) => save(env, live, &mut ctx, &chat),
                    None => println!("(not a session: start with --session NAME to save)"),
                }
                continue;
            }
            _ if trimmed.starts_with('/') => {
                println!("unknown command {trimmed}; /help lists the commands");
                continue;
            }
            _ => {}
        }

        match chat.add_user(&mut ctx, &input, overflow) {
            Ok(Some(note)) => env.ui.note(note),
            Ok(None) => {}
            Err(e) => {
                eprintln!("error: {e:#}");
                continue;
            }
        }
        if let Some(live) = &mut live {
            let mut report = Default::default();
            session_setup::reuse_prefix(env, live, &mut ctx, &mut chat, &mut report)?;
        }
        cancel.store(false, Ordering::SeqCst);
        generating.store(true, Ordering::SeqCst);
        let room = (ctx.info().n_ctx as usize).saturating_sub(chat.seq.len());
        let options = GenerateOptions {
            max_tokens: args
                .max_tokens
                .map(|n| n as usize)
                .unwrap_or(room)
                .min(room),
            logprobs: None,
        };
        let mut sampler = Sampler::new(&model, &sampling, chat.seq.tokens());
        let mut bar = PrefillBar::new(env.ui, chat.pending(), &cancel);
        let stdout = std::io::stdout();
        let mut emit = |text: &str| -> std::io::Result<()> {
            let mut out = stdout.lock();
            out.write_all(text.as_bytes())?;
            out.flush()
        };
        let result = {
            let mut session_observer;
            let observer: &mut dyn SyncObserver = match &mut live {
                Some(live) => {
                    session_observer = SessionObserver {
                        session: live,
                        inner: &mut bar,
                    };
                    &mut session_observer
                }
                None => &mut bar,
            };
            chat.seq.generate(
                &mut ctx,
                &mut sampler,
                &options,
                &cancel,
                observer,
                &mut emit,
            )
        };
        generating.store(false, Ordering::SeqCst);
        let generated = result?;
        println!();
        match generated.stop {
            StopReason::Cancelled => eprintln!("(stopped)"),
            StopReason::ContextFull => eprintln!("(the context is full; /reset to start over)"),
            _ => {}
        }
        last = Some(TurnStats {
            prefilled: generated.prefilled,
            prefill: generated.prefill_time,
            generated: generated.tokens.len(),
            decode: generated.decode_time,
        });
        chat.add_assistant(generated.text);
        if let Some(live) = &mut live {
            save(env, live, &mut ctx, &chat);
        }
    }
    if let Some(live) = &mut live {
        save(env, live, &mut ctx, &chat);
    }
    Ok(ExitCode::SUCCESS)
}

/// Saves the session; a failure is reported and the chat goes on (nothing is lost: the
/// previous snapshot stays intact and the next save retries).
fn save(env: &Env, live: &mut LiveSession<'_>, ctx: &mut Context<'_>, chat: &Conversation<'_>) {
    let state = ConversationState {
        messages: &chat.messages,
        rendered_len: chat.rendered_len,
        raw: chat.raw,
    };
    if let Err(e) = live.save(ctx, &chat.seq, state) {
        env.ui
            .warn(format!("saving session '{}' failed: {e:#}", live.name));
    }
}

/// With nothing pulled yet, `kvrun chat` fetches the default model first.
fn pull_default_if_missing(env: &Env, choice: &ModelChoice) -> Result<()> {
    if choice.is_default() && !choice.path.exists() {
        env.ui.note(
            "The default model (Gemma 3 270M, Q4_K_M) is not downloaded yet; pulling it now.",
        );
        super::pull::pull_default(env)?;
    }
    Ok(())
}

/// Reads one message; a line ending in `\` continues on the next. None at end of input.
fn read_message(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    interactive: bool,
) -> Result<Option<String>> {
    let mut message = String::new();
    loop {
        if interactive {
            let prompt = if message.is_empty() { "> " } else { ". " };
            print!("{prompt}");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next() else {
            return Ok((!message.is_empty()).then_some(message));
        };
        let line = line?;
        match line.strip_suffix('\\') {
            Some(head) => {
                message.push_str(head);
                message.push('\n');
            }
            None => {
                message.push_str(&line);
                return Ok(Some(message));
            }
        }
    }
}

fn print_stats(ctx: &Context<'_>, chat: &Conversation<'_>, last: Option<TurnStats>) {
    let n_ctx = ctx.info().n_ctx as usize;
    let used = chat.seq.len();
    println!(
        "context: {used} / {n_ctx} tokens ({:.1}%)",
        100.0 * used as f64 / n_ctx.max(1) as f64
    );
    if let Some(t) = last {
        let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
        println!(
            "last reply: prefill {} tokens at {:.1} tok/s, decode {} tokens at {:.1} tok/s",
            t.prefilled,
            rate(t.prefilled, t.prefill),
            t.generated,
            rate(t.generated, t.decode)
        );
    }
}
