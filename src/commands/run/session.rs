//! `kvrun run --session NAME`: the agent path, as a client of the service engine (the one
//! `kvrun chat` and `kvrun serve` run). The engine opens the session (lock, read, check,
//! restore its snapshot), this file adds the turn and sends one request, streams the reply,
//! and has the engine save the session with its messages before the process exits.
//!
//! Interrupted (SIGINT, SIGTERM or SIGHUP while it prefills or generates), the run keeps what
//! it did: the prompt joins the token log, the pages its prefill filled are saved, and the
//! partial reply is kept and marked interrupted in the manifest; then it exits with 128 +
//! the signal's number. Before the request starts a signal ends it at once, and the session
//! stays exactly as it was (its manifest is only ever replaced whole).

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::report::{self as run, SessionFields};
use super::tools::{self, ToolRequest};
use crate::cli::RunArgs;
use crate::commands::input::{check_text_may_fit, read_prompt};
use crate::commands::session::setup as session_setup;
use crate::dialogue::Dialogue;
use crate::env::Env;
use crate::exit::usage;
use crate::interrupt::{signal_exit_code, Interrupt};
use crate::llama::{Model, TokenLogprob};
use crate::sequence::{Generated, Sequence, StopReason, SyncObserver};
use crate::service::engine::{ContextSizing, ServiceOptions};
use crate::service::handle::{OpenSession, Opened, ServiceHandle, ServiceInfo};
use crate::service::protocol::{
    Ask, CancelToken, ConversationKey, FinishReason, Reply, ReplyGrammar, Request, ServiceError,
    Transcript, Usage,
};
use crate::session::catalog::SessionCatalog;
use crate::settings::{ContextOverflow, SamplingSettings, TierSettings};
use crate::ui::PrefillBar;

pub fn run_session(env: &Env, args: &RunArgs, name: &str) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    // Settles the model and settings from the session and the flags, and fails fast on a
    // session another process holds; the engine takes the lock again when it opens it.
    let prepared = session_setup::prepare(
        env,
        &catalog,
        name,
        args.model.model.as_deref(),
        &args.llama,
        Some(&args.sampling),
    )?;
    let prompt = if args.continue_ {
        None
    } else {
        Some(read_prompt(args)?)
    };
    let tools = ToolRequest::load(args)?;
    let schema = tools::schema_file_grammar(args)?;
    let sampling = prepared.sampling.clone();
    let tiers = TierSettings::resolve(&Default::default(), &env.config).map_err(usage)?;
    let options = ServiceOptions {
        paths: env.paths.clone(),
        model: prepared.choice.clone(),
        llama: prepared.llama.clone(),
        tiers,
        parallel: 1,
        max_queue: 1,
        chat_template: crate::env::chat_template_override(&args.model, env).map(str::to_string),
        alias: None,
        warm: None,
        // The session's pages are read while the model loads.
        prefetch: Some(name.to_string()),
        keep_latest_hot: true,
        sizing: ContextSizing::Fixed,
    };
    drop(prepared);
    let started = Instant::now();
    let (service, engine) = crate::service::engine::start(options)?;
    let Some((model, info)) = service.wait_until_ready(&engine) else {
        // The engine's own error says why (a model not downloaded, a file llama.cpp refused).
        engine.join()?;
        anyhow::bail!("the engine stopped before the model was loaded");
    };
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let turn = Turn {
        env,
        args,
        name,
        service: &service,
        model: &model,
        info: &info,
        sampling,
    };
    let result = turn.run(prompt.as_deref(), tools.as_ref(), schema, load_ms);
    service.shutdown();
    let joined = engine.join();
    let code = result?;
    joined?;
    Ok(code)
}

/// One turn of a session run, once the engine is up.
struct Turn<'a> {
    env: &'a Env,
    args: &'a RunArgs,
    name: &'a str,
    service: &'a ServiceHandle,
    model: &'a Model,
    info: &'a ServiceInfo,
    /// The session's sampling, as `prepare` settled it (flags over what it recorded).
    sampling: SamplingSettings,
}

impl Turn<'_> {
    fn run(
        &self,
        prompt: Option<&str>,
        tools: Option<&ToolRequest>,
        schema: Option<tools::Constraint>,
        load_ms: f64,
    ) -> Result<ExitCode> {
        let (env, args, name) = (self.env, self.args, self.name);
        let open = OpenSession {
            name: Some(name.to_string()),
            sampling: self.sampling.clone(),
        };
        let opened = self
            .service
            .open_blocking(open)
            .map_err(|e| service_error(name, e))?;
        for w in &opened.warnings {
            env.ui.warn(w);
        }
        let mut conversation = self.conversation(&opened);
        conversation.tools = tools.map(|t| t.template_value.clone());
        let n_ctx = self.info.n_ctx;
        // A log rendered again with another template is a new prompt from its first token.
        let mut rendered_again = false;
        let added = match prompt {
            Some(text) => {
                let before = conversation.seq.len();
                check_text_may_fit(text, before, n_ctx, self.model)
                    .with_context(|| format!("session '{name}'"))?;
                let note = conversation
                    .add_user(n_ctx, text, ContextOverflow::Error)
                    .with_context(|| format!("session '{name}'"))?;
                if let Some(note) = note {
                    env.ui.note(format!("session '{name}': {note}"));
                    rendered_again = true;
                }
                conversation.seq.len() - if rendered_again { 0 } else { before }
            }
            None if conversation.seq.is_empty() => {
                return Err(usage(format!(
                    "session '{name}' is empty; --continue needs something to continue from"
                )))
            }
            None => 0,
        };
        if let Some(miss) = conversation.cache_miss.as_ref().filter(|_| !rendered_again) {
            env.ui.note(format!(
                "the chat template re-rendered session '{name}' differently from token {} \
                 ({:?} became {:?}); kvrun keeps the earlier turns as first rendered",
                miss.position, miss.before, miss.after
            ));
        }
        let grammar = match tools {
            Some(tools) => tools.constraint(conversation.tool_format())?,
            None => schema,
        };

        // From here a signal stops the work and the session keeps it (see the module docs).
        let interrupt = Interrupt::new();
        let signal = Arc::new(AtomicI32::new(0));
        {
            let (interrupt, signal) = (interrupt.clone(), signal.clone());
            crate::interrupt::on_signals(move |s| {
                signal.store(s, Ordering::SeqCst);
                interrupt.stop_reply();
            })?;
        }
        let max_tokens = args.max_tokens.unwrap_or(run::DEFAULT_MAX_TOKENS) as usize;
        let prompt_tokens = conversation.seq.tokens().to_vec();
        let room = n_ctx.saturating_sub(prompt_tokens.len());
        let (replies_tx, replies) = tokio::sync::mpsc::unbounded_channel();
        let request = Request {
            id: 0,
            ask: Ask::new(
                ConversationKey::Named(name.to_string()),
                prompt_tokens,
                max_tokens.min(room),
            )
            .with_sampling(self.sampling.clone())
            .with_grammar(grammar.map(|c| ReplyGrammar {
                grammar: c.grammar,
                after: c.after.map(str::to_string),
            }))
            .with_logprobs(args.logprobs)
            .with_template(conversation.template()),
            transcript: Some(transcript(&conversation)),
            progress: true,
            cancel: CancelToken::watching(interrupt.stop_flag()),
            replies: replies_tx,
            received: Instant::now(),
            save_before_done: false,
        };
        let to_prefill = request.ask.prompt.len() - opened.cached.total();
        self.service
            .submit(request)
            .map_err(|e| service_error(name, e))?;
        let mut bar = PrefillBar::new(env.ui, to_prefill, interrupt.flag());
        let streamed = stream(replies, args.json, &mut bar, args.logprobs.is_some());
        drop(bar);
        let (usage, text, logprobs) = streamed.map_err(|e| service_error(name, e))?;

        conversation.seq.append(&usage.tokens);
        let reply = run::reply_fields(&conversation, tools, &text);
        conversation.add_assistant(text.clone());
        // The engine saved the log and the pages as the reply ended; this records the
        // reply's message with them. `save_ms` counts from the reply's end until the
        // session is durable.
        let done_at = Instant::now();
        let saved = self
            .service
            .save_blocking(name, transcript(&conversation))
            .map_err(|e| service_error(name, e))?;
        for w in &saved.warnings {
            env.ui.warn(w);
        }
        let save_ms = done_at.elapsed().as_secs_f64() * 1e3;
        let reused = usage.cached.total().saturating_sub(opened.cached.total());
        let fields = SessionFields {
            session: name.to_string(),
            session_tokens: conversation.seq.len(),
            restored_tokens: opened.cached.warm + opened.cached.cold + reused,
            reused_tokens: reused,
            restore_ms: opened.restore_ms,
            restore_phases: opened.phases,
            restore_decision: opened.decision,
            save_ms,
            cache_miss: conversation.cache_miss.clone(),
        };
        let generated = generated(&usage, text, logprobs);
        let code = run::finish(
            env,
            args,
            n_ctx as u32,
            added,
            load_ms,
            (generated, reply),
            Some(fields),
        )?;
        let signalled = Some(signal.load(Ordering::SeqCst)).filter(|s| *s != 0);
        Ok(signalled.map_or(code, |s| {
            env.ui.warn(format!(
                "interrupted ({}): session '{name}' keeps the prompt and the reply so far",
                crate::interrupt::signal_name(s)
            ));
            signal_exit_code(s)
        }))
    }

    /// The conversation of an opened session (a new one when it holds nothing yet).
    fn conversation(&self, opened: &Opened) -> Dialogue<'_> {
        let (args, name) = (self.args, self.name);
        let t = &opened.transcript;
        if opened.log.is_empty() && t.messages.is_empty() {
            return Dialogue::new(self.model, args.raw, args.system.as_deref());
        }
        if args.raw != t.raw && !opened.log.is_empty() {
            self.env.ui.note(format!(
                "session '{name}' is a {} session; continuing it as one",
                if t.raw { "raw" } else { "chat" }
            ));
        }
        let mut conversation = Dialogue::from_parts(
            self.model,
            (t.messages.clone(), t.rendered_len, t.raw),
            opened.template.clone(),
            Sequence::restored(opened.log.clone(), opened.cached.total()),
        );
        conversation.cache_miss = t.cache_miss.clone();
        conversation
    }
}

/// What the session records besides its log.
fn transcript(conversation: &Dialogue<'_>) -> Transcript {
    Transcript {
        messages: conversation.messages.clone(),
        rendered_len: conversation.rendered_len,
        raw: conversation.raw,
        cache_miss: conversation.cache_miss.clone(),
    }
}

/// Streams the reply's text to stdout (unless `--json`) and the prefill to the bar; returns
/// the usage, the text and the log-probabilities.
fn stream(
    mut replies: tokio::sync::mpsc::UnboundedReceiver<Reply>,
    json: bool,
    bar: &mut PrefillBar<'_>,
    logprobs: bool,
) -> Result<(Usage, String, Vec<TokenLogprob>), ServiceError> {
    let stdout = std::io::stdout();
    let mut text = String::new();
    let mut probs = Vec::new();
    loop {
        match replies.blocking_recv() {
            Some(Reply::Started(_)) => {}
            Some(Reply::Progress { done, total }) => {
                let _ = bar.progress(done, total);
            }
            Some(Reply::Token(piece)) => {
                if logprobs {
                    probs.extend(piece.logprob);
                }
                if !piece.text.is_empty() {
                    text.push_str(&piece.text);
                    if !json {
                        let mut out = stdout.lock();
                        // A closed stdout: the reply still completes and is saved.
                        let _ = out
                            .write_all(piece.text.as_bytes())
                            .and_then(|()| out.flush());
                    }
                }
            }
            Some(Reply::Done(usage)) => return Ok((usage, text, probs)),
            Some(Reply::Failed(e)) => return Err(e),
            None => return Err(ServiceError::Internal("the engine stopped".into())),
        }
    }
}

/// The reply as `run`'s report shows it.
fn generated(usage: &Usage, text: String, logprobs: Vec<TokenLogprob>) -> Generated {
    Generated {
        tokens: usage.tokens.clone(),
        text,
        logprobs,
        stop: match usage.finish {
            FinishReason::EndOfGeneration | FinishReason::StopString => StopReason::EndOfGeneration,
            FinishReason::MaxTokens => StopReason::MaxTokens,
            FinishReason::ContextFull => StopReason::ContextFull,
            FinishReason::Cancelled => StopReason::Cancelled,
        },
        decode_time: usage.decode,
        prefill_time: usage.time_to_first_token,
        prefilled: usage.prefilled,
    }
}

/// A service error as `run` reports it; its exit code comes from the variant
/// ([`crate::exit::code_for`]).
fn service_error(name: &str, e: ServiceError) -> anyhow::Error {
    match e {
        // The session's own refusal names it and says what to do.
        ServiceError::SessionInUse { detail, .. } if detail.contains(name) => {
            crate::exit::busy(detail)
        }
        ServiceError::Incompatible { detail, .. } => usage(detail),
        other => anyhow::Error::new(other).context(format!("session '{name}'")),
    }
}
