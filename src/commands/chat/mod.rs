//! `kvrun chat`: an interactive conversation. On a terminal it is the TUI; with `--plain`,
//! or when stdin or stdout is not a terminal, a line-mode REPL (`chat_line`). Both are front
//! ends of the same chat client (a worker thread, itself a client of the service engine
//! `kvrun serve` runs), so sessions, switching and the tiers behave alike, and so do the
//! ways out: each stops a reply under way within a token (through [`Interrupt`]), lets the
//! chat save its session, and only then exits.

mod leaving;
mod line;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::mpsc::Receiver;

use anyhow::{Context as _, Result};

use self::leaving::{Leaving, Outcome};
use crate::chat::protocol::{ChatEvent, UserCommand};
use crate::chat::{self, ChatOptions};
use crate::cli::ChatArgs;
use crate::commands::session::setup as session_setup;
use crate::env::Env;
use crate::exit::usage;
use crate::interrupt::{signal_exit_code, Interrupt};
use crate::models::ModelChoice;
use crate::service::engine::ContextSizing;
use crate::session::catalog::SessionCatalog;
use crate::settings::{ContextOverflow, CtxSize, LlamaSettings, SamplingSettings, TierSettings};

pub fn run(env: &Env, mut args: ChatArgs) -> Result<ExitCode> {
    if let Some(spec) = &args.session {
        let catalog = SessionCatalog::open(&env.paths)?;
        args.session = Some(session_setup::resolve_session_arg(&catalog, spec)?);
    }
    let options = options(env, &args)?;
    pull_default_if_missing(env, &options.model)?;
    let tui = !args.plain && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let interrupt = Interrupt::new();
    let (events_tx, events) = std::sync::mpsc::channel();
    let title = options
        .model
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = options.session.clone();
    let log = if tui {
        crate::logging::to_file(&env.paths.logs).ok()
    } else {
        None
    };
    let (commands, chat_thread) =
        chat::spawn(options, events_tx, interrupt.clone()).context("starting the chat thread")?;
    let leaving = Leaving::new(interrupt.clone(), chat_thread);
    let result = if tui {
        run_tui(
            title,
            session,
            &events,
            commands.clone(),
            &interrupt,
            &leaving,
        )
    } else {
        line::run(env, &events, &commands, &interrupt, &leaving)
    };
    // Whatever ended the front end, the chat thread stops the reply, saves and exits.
    interrupt.quit();
    let _ = commands.send(UserCommand::Quit);
    let mut errors = match &result {
        Ok(outcome) => outcome.errors.clone(),
        Err(_) => Vec::new(),
    };
    errors.extend(errors_until_exit(&events));
    leaving.join_chat();
    if log.is_some() {
        crate::logging::to_stderr();
    }
    for e in &errors {
        eprintln!("error: {e}");
    }
    if let (Err(_), Some(log)) = (&result, &log) {
        eprintln!("(the log is in {})", log.display());
    }
    let outcome = result?;
    Ok(if !errors.is_empty() {
        ExitCode::FAILURE
    } else if let Some(signal) = leaving.signal() {
        signal_exit_code(signal)
    } else {
        outcome.code
    })
}

/// The chat thread's remaining events until it exits; returns the errors among them.
fn errors_until_exit(events: &Receiver<ChatEvent>) -> Vec<String> {
    let mut errors = Vec::new();
    for event in events.iter() {
        match event {
            ChatEvent::Exited => break,
            ChatEvent::Error(e) => errors.push(e),
            _ => {}
        }
    }
    errors
}

/// The full-screen TUI: Ctrl-C (a key there, not a signal) stops a reply through the
/// interrupt; a quit raises it too, so the chat thread stops generating and saves.
fn run_tui(
    title: String,
    session: Option<String>,
    events: &Receiver<ChatEvent>,
    chat_commands: std::sync::mpsc::Sender<UserCommand>,
    interrupt: &Interrupt,
    leaving: &Leaving,
) -> Result<Outcome> {
    {
        let leaving = leaving.clone();
        crate::interrupt::on_signals(move |signal| leaving.signalled(signal))?;
    }
    // Stop and quit are flags the generating chat thread watches; everything else is a command.
    let (tui_commands, from_tui) = std::sync::mpsc::channel::<UserCommand>();
    let forwarder = {
        let interrupt = interrupt.clone();
        std::thread::spawn(move || {
            for command in from_tui {
                match command {
                    UserCommand::Stop => interrupt.stop_reply(),
                    command => {
                        if command == UserCommand::Quit {
                            interrupt.quit();
                        }
                        if chat_commands.send(command).is_err() {
                            break;
                        }
                    }
                }
            }
        })
    };
    let result = crate::tui::run_terminal(
        crate::tui::TuiOptions {
            title,
            session,
            read_only: false,
        },
        events,
        tui_commands,
    );
    let _ = forwarder.join();
    result.map(|errors| Outcome {
        code: ExitCode::SUCCESS,
        errors,
    })
}

/// Settles the model, settings and tiers. A named session's recorded settings win over the
/// config file; flags given now win over both.
fn options(env: &Env, args: &ChatArgs) -> Result<ChatOptions> {
    let overflow = args
        .context_overflow
        .or(env.config.context_overflow)
        .unwrap_or(ContextOverflow::Truncate);
    let tiers = TierSettings::resolve(&args.tiers, &env.config).map_err(usage)?;
    let (llama, sampling, model) = match &args.session {
        Some(name) => {
            let catalog = SessionCatalog::open(&env.paths)?;
            let prepared = session_setup::prepare(
                env,
                &catalog,
                name,
                args.model.model.as_deref(),
                &args.llama,
                Some(&args.sampling),
            )?;
            (prepared.llama, prepared.sampling, prepared.choice)
        }
        None => (
            LlamaSettings::resolve(&args.llama, &env.config),
            SamplingSettings::resolve(&args.sampling, &env.config),
            crate::models::choose(
                args.model.model.as_deref(),
                &env.config,
                &env.paths,
                crate::models::Purpose::Chat,
            ),
        ),
    };
    Ok(ChatOptions {
        paths: env.paths.clone(),
        model,
        llama,
        sampling,
        session: args.session.clone(),
        system: args.system.clone(),
        overflow,
        max_tokens: args.max_tokens,
        tiers,
        chat_template: crate::env::chat_template_override(&args.model, env).map(str::to_string),
        // `-c auto`: up to the model's training context, as `kvrun serve` does.
        sizing: if args.llama.ctx_size == Some(CtxSize::Auto) {
            ContextSizing::Elastic { ceiling: None }
        } else {
            ContextSizing::Fixed
        },
    })
}

/// With nothing pulled yet, `kvrun chat` fetches its default model first.
fn pull_default_if_missing(env: &Env, choice: &ModelChoice) -> Result<()> {
    if let (Some(known), true) = (choice.known, !choice.path.exists()) {
        env.ui.note(format!(
            "{} is not downloaded yet; pulling it now.",
            known.title
        ));
        crate::commands::models::pull::pull_known(env, &known)?;
    }
    Ok(())
}
