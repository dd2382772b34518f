//! `kvrun chat`: an interactive conversation in line mode (a REPL). Tokens stream as they
//! are generated; Ctrl-C stops the current reply without quitting.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};

use super::{load_model, Env};
use crate::cli::ChatArgs;
use crate::engine::{ChatMessage, Context, Model, Sampler, TokenId};
use crate::models::ModelChoice;
use crate::sequence::{GenerateOptions, Sequence, StopReason};
use crate::settings::{ContextOverflow, EngineSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::ui::{PrefillBar, Ui};

const HELP: &str = "\
commands:
  /help    show this help
  /reset   forget the conversation and start over
  /stats   context used and the last reply's speed
  /quit    leave (Ctrl-D works too)
Ctrl-C stops the current reply. End a line with \\ to continue on the next one.";

pub fn run(env: &Env, args: ChatArgs) -> Result<ExitCode> {
    let engine = EngineSettings::resolve(&args.engine, &env.config);
    let sampling = SamplingSettings::resolve(&args.sampling, &env.config);
    let overflow = args
        .context_overflow
        .or(env.config.context_overflow)
        .unwrap_or(ContextOverflow::Truncate);

    let choice = crate::models::choose(args.model.model.as_deref(), &env.config, &env.paths);
    pull_default_if_missing(env, &choice)?;
    let (model, _) = load_model(&choice, engine.gpu_layers)?;
    if !model.facts().has_chat_template {
        bail!(
            "{} has no chat template; use `kvrun run --raw` for plain completion",
            choice.path.display()
        );
    }
    let mut ctx = Context::new(&model, &engine, DEFAULT_PAGE_TOKENS, 1)?;

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

    let mut chat = Conversation::new(&model, args.system.clone());
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
    let mut last: Option<(usize, Duration, usize, Duration)> = None;
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
            _ if trimmed.starts_with('/') => {
                println!("unknown command {trimmed}; /help lists the commands");
                continue;
            }
            _ => {}
        }

        if let Err(e) = chat.add_user(&mut ctx, &input, overflow, env.ui) {
            eprintln!("error: {e:#}");
            continue;
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
        let result = chat.seq.generate(
            &mut ctx,
            &mut sampler,
            &options,
            &cancel,
            &mut bar,
            &mut emit,
        );
        generating.store(false, Ordering::SeqCst);
        drop(bar);
        let generated = result?;
        println!();
        match generated.stop {
            StopReason::Cancelled => eprintln!("(stopped)"),
            StopReason::ContextFull => eprintln!("(the context is full; /reset to start over)"),
            _ => {}
        }
        last = Some((
            generated.prefilled,
            generated.prefill_time,
            generated.tokens.len(),
            generated.decode_time,
        ));
        chat.add_assistant(generated.text);
    }
    Ok(ExitCode::SUCCESS)
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

fn print_stats(
    ctx: &Context<'_>,
    chat: &Conversation<'_>,
    last: Option<(usize, Duration, usize, Duration)>,
) {
    let n_ctx = ctx.info().n_ctx as usize;
    let used = chat.seq.len();
    println!(
        "context: {used} / {n_ctx} tokens ({:.1}%)",
        100.0 * used as f64 / n_ctx.max(1) as f64
    );
    if let Some((prefilled, prefill, generated, decode)) = last {
        let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
        println!(
            "last reply: prefill {prefilled} tokens at {:.1} tok/s, decode {generated} tokens at {:.1} tok/s",
            rate(prefilled, prefill),
            rate(generated, decode)
        );
    }
}

/// The chat messages and the token log they produced. New turns are tokenized as the
/// template's text *after* what earlier turns produced, so earlier tokens (and their KV)
/// are never re-tokenized or recomputed.
struct Conversation<'m> {
    model: &'m Model,
    system: Option<String>,
    messages: Vec<ChatMessage>,
    seq: Sequence,
    /// Length of the template's rendering of `messages` (without the assistant opener).
    rendered_len: usize,
}

impl<'m> Conversation<'m> {
    fn new(model: &'m Model, system: Option<String>) -> Self {
        let mut chat = Self {
            model,
            system,
            messages: Vec::new(),
            seq: Sequence::new(),
            rendered_len: 0,
        };
        chat.seed_system();
        chat
    }

    fn seed_system(&mut self) {
        if let Some(system) = &self.system {
            self.messages.push(ChatMessage {
                role: "system".into(),
                content: system.clone(),
            });
        }
    }

    fn reset(&mut self, ctx: &mut Context<'_>) {
        self.seq.reset(ctx);
        self.messages.clear();
        self.rendered_len = 0;
        self.seed_system();
    }

    /// Tokens appended but not yet in the KV cache.
    fn pending(&self) -> usize {
        self.seq.len() - self.seq.kv_len()
    }

    fn add_user(
        &mut self,
        ctx: &mut Context<'_>,
        text: &str,
        overflow: ContextOverflow,
        ui: Ui,
    ) -> Result<()> {
        self.messages.push(ChatMessage {
            role: "user".into(),
            content: text.into(),
        });
        let rendered = self.model.apply_chat_template(&self.messages, true)?;
        let new_tokens = self.delta_tokens(&rendered);
        let n_ctx = ctx.info().n_ctx as usize;
        // Leave room for at least a short reply.
        let reserve = 16.min(n_ctx / 4);
        if self.seq.len() + new_tokens.len() + reserve <= n_ctx {
            self.seq.append(&new_tokens);
            return Ok(());
        }
        match overflow {
            ContextOverflow::Error => {
                self.messages.pop();
                bail!(
                    "this message does not fit the context ({} + {} tokens > {n_ctx}); /reset, \
                     or restart with a larger --ctx-size or --context-overflow truncate",
                    self.seq.len(),
                    new_tokens.len()
                );
            }
            ContextOverflow::Truncate => self.truncate_to_fit(ctx, n_ctx - reserve, ui),
        }
    }

    /// Drops the oldest turns (keeping the system prompt) until the conversation fits, then
    /// rebuilds the token log from the template.
    fn truncate_to_fit(&mut self, ctx: &mut Context<'_>, budget: usize, ui: Ui) -> Result<()> {
        let first = usize::from(self.system.is_some());
        let mut dropped = 0;
        loop {
            let rendered = self.model.apply_chat_template(&self.messages, true)?;
            let tokens = self.model.tokenize_prompt(&rendered);
            if tokens.len() <= budget {
                self.seq.reset(ctx);
                self.seq.append(&tokens);
                let without_opener = self.model.apply_chat_template(&self.messages, false)?;
                self.rendered_len = without_opener.len();
                if dropped > 0 {
                    ui.note(format!(
                        "(context full: dropped the {dropped} oldest message(s))"
                    ));
                }
                return Ok(());
            }
            if self.messages.len() <= first + 1 {
                self.messages.pop();
                bail!(
                    "this message alone ({} tokens) does not fit the context; raise --ctx-size",
                    tokens.len()
                );
            }
            self.messages.remove(first);
            dropped += 1;
        }
    }

    /// The tokens for the rendered conversation beyond what the log already holds.
    fn delta_tokens(&self, rendered: &str) -> Vec<TokenId> {
        if self.seq.is_empty() {
            return self.model.tokenize_prompt(rendered);
        }
        match rendered.get(self.rendered_len..) {
            Some(tail) if rendered.is_char_boundary(self.rendered_len) => {
                self.model.tokenize(tail, false)
            }
            _ => self.model.tokenize(rendered, false),
        }
    }

    fn add_assistant(&mut self, text: String) {
        self.messages.push(ChatMessage {
            role: "assistant".into(),
            content: text,
        });
        if let Ok(rendered) = self.model.apply_chat_template(&self.messages, false) {
            self.rendered_len = rendered.len();
        }
    }
}
